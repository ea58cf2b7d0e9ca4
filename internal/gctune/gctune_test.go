package gctune

import (
	"context"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const gib = 1 << 30
	cases := []struct {
		live uint64
		want int
	}{
		{0, 400},              // before the first collection
		{64 << 20, 400},       // small heap: 16 GiB/GiB would exceed the ceiling
		{256 << 20, 400},      // exactly 4 × live of headroom
		{512 << 20, 200},      // 1 GiB headroom over 512 MiB
		{gib, 100},            // 1 GiB over 1 GiB
		{3 * gib / 2, 66},     // rounds down
		{2 * gib, 50},         // at the floor
		{uint64(8) * gib, 50}, // never below the floor
	}
	for _, c := range cases {
		if got := Percent(c.live, gib, 50, 400); got != c.want {
			t.Errorf("Percent(%d) = %d, want %d", c.live, got, c.want)
		}
	}
}

// TestTuneLowersPercent keeps a live heap larger than the headroom allows at
// the ceiling and checks that Tune brings the GC percentage down to what
// Percent gives for it, then restores the default.
func TestTuneLowersPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	live := make([]byte, 64<<20)
	for i := range live {
		live[i] = byte(i)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// 16 MiB of headroom over at least 64 MiB live: at most 25%, so the
	// floor of 10 or a figure near 25 once the heap is measured.
	Tune(ctx, 16<<20, 10, 400, 10*time.Millisecond)
	runtime.GC()
	deadline := time.Now().Add(5 * time.Second)
	for {
		p := debug.SetGCPercent(-1)
		debug.SetGCPercent(p)
		if p <= 25 && p >= 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GC percent still %d with %d MiB live and 16 MiB headroom", p, len(live)>>20)
		}
		time.Sleep(10 * time.Millisecond)
	}
	runtime.KeepAlive(live)
}
