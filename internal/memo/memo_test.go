package memo

import (
	"errors"
	"testing"
	"time"
)

func TestGetKeepsForTheTTLAndForgetDropsAtOnce(t *testing.T) {
	m := &TTL[int, string]{Keep: time.Hour, Max: 10}
	loads := 0
	load := func(v string) func() (string, error) {
		return func() (string, error) { loads++; return v, nil }
	}
	if v, _ := m.Get(1, load("a")); v != "a" || loads != 1 {
		t.Fatalf("first get %q, %d loads", v, loads)
	}
	if v, _ := m.Get(1, load("b")); v != "a" || loads != 1 {
		t.Fatalf("second get %q, %d loads: not kept", v, loads)
	}
	m.Forget(1)
	if v, _ := m.Get(1, load("b")); v != "b" || loads != 2 {
		t.Fatalf("after Forget %q, %d loads", v, loads)
	}
	m.Clear()
	if v, _ := m.Get(1, load("c")); v != "c" {
		t.Fatalf("after Clear %q", v)
	}
	if _, err := m.Get(2, func() (string, error) { return "", errors.New("down") }); err == nil {
		t.Fatal("a failed load was not reported")
	}
	if v, _ := m.Get(2, load("d")); v != "d" {
		t.Fatalf("a failed load was kept: %q", v)
	}
}

func TestExpiredValuesAreReadAgain(t *testing.T) {
	m := &TTL[int, int]{Keep: time.Millisecond, Max: 10}
	n := 0
	load := func() (int, error) { n++; return n, nil }
	_, _ = m.Get(1, load)
	time.Sleep(5 * time.Millisecond)
	if v, _ := m.Get(1, load); v != 2 {
		t.Fatalf("expired value served: %d", v)
	}
}

// A load that overlapped a write may have read the old row: it is returned
// to its caller but not kept.
func TestLoadRacingAWriteIsNotKept(t *testing.T) {
	m := &TTL[int, string]{Keep: time.Hour, Max: 10}
	v, _ := m.Get(1, func() (string, error) {
		m.Forget(1) // the write commits while the read is in flight
		return "old", nil
	})
	if v != "old" {
		t.Fatalf("got %q", v)
	}
	if v, _ := m.Get(1, func() (string, error) { return "new", nil }); v != "new" {
		t.Fatalf("the racing load was kept: %q", v)
	}
}

func TestBoundStartsOver(t *testing.T) {
	m := &TTL[int, int]{Keep: time.Hour, Max: 3}
	for i := range 10 {
		_, _ = m.Get(i, func() (int, error) { return i, nil })
	}
	if len(m.m) > 3 {
		t.Fatalf("%d keys kept, max 3", len(m.m))
	}
}

func TestZeroValueKeepsNothing(t *testing.T) {
	var m TTL[int, int]
	n := 0
	for range 3 {
		_, _ = m.Get(1, func() (int, error) { n++; return n, nil })
	}
	if n != 3 {
		t.Fatalf("%d loads, want 3", n)
	}
}
