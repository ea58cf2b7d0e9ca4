package lru

import (
	"fmt"
	"sync"
	"testing"
)

// The cache keeps at most its entries, the least recently used leaving
// first.
func TestEntryBound(t *testing.T) {
	c := New[int, string](3, 1<<20)
	for i := range 5 {
		c.Add(i, fmt.Sprint(i), 10)
	}
	if _, ok := c.Get(3); !ok { // 3 is now the most recently used
		t.Fatal("a recent value is gone")
	}
	c.Add(5, "5", 10)
	if n := c.Len(); n != 3 {
		t.Errorf("%d entries, want 3", n)
	}
	for k := range 3 {
		if _, ok := c.Get(k); ok {
			t.Errorf("value %d kept, it was used least recently", k)
		}
	}
	for _, k := range []int{3, 4, 5} {
		if v, ok := c.Get(k); !ok || v != fmt.Sprint(k) {
			t.Errorf("Get(%d) = %q, %v", k, v, ok)
		}
	}
	if c.Used() != 30 {
		t.Errorf("%d bytes counted, want 30", c.Used())
	}
}

// The cache holds no more than its bound in bytes, counts exactly what it
// holds (a value added again replaces the old one's size), and does not
// keep a value over a sixteenth of the bound.
func TestByteBound(t *testing.T) {
	const maxBytes = 1600
	c := New[int, int](1000, maxBytes)
	for i := range 300 {
		c.Add(i%250, i, 30+i%70)
		if c.Used() > maxBytes {
			t.Fatalf("after %d adds the cache holds %d bytes, over %d", i+1, c.Used(), maxBytes)
		}
	}
	sum := 0
	for _, k := range c.lru.Keys() {
		e, _ := c.lru.Peek(k)
		sum += e.size
	}
	if sum != c.Used() || c.Len() == 0 {
		t.Errorf("%d entries of %d bytes, the cache counts %d", c.Len(), sum, c.Used())
	}
	c.Add(-1, 0, maxBytes/16+1)
	if _, ok := c.Get(-1); ok {
		t.Error("a value over a sixteenth of the bound was kept")
	}
}

// Concurrent adds and gets of the same keys keep the count exact.
func TestConcurrent(t *testing.T) {
	c := New[int, int](50, 1<<20)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				c.Add((i+g)%80, i, 7)
				c.Get(i % 80)
			}
		})
	}
	wg.Wait()
	if c.Used() != 7*c.Len() || c.Len() != 50 {
		t.Errorf("%d entries, %d bytes counted, want 50 and %d", c.Len(), c.Used(), 7*c.Len())
	}
}
