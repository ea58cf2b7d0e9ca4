// Package gctune tunes the Go runtime for lore: it bounds the garbage
// collector's heap headroom in absolute terms, and pregrows the stacks of
// goroutines that go deep (PregrowStack).
//
// A GOGC of P lets the heap grow to (1+P/100) × the live heap before the next
// collection. Lore runs with a high GOGC so request handling over a small live
// heap triggers few collections; but the embedded vector store keeps every
// chunk in memory, and at a million chunks (3+ GB live) the same percentage
// meant 5 × 3.4 GB of resident memory and an out-of-memory kill. Tune lowers
// the percentage as the live heap grows, so the headroom stays about a fixed
// number of bytes (never below a floor percentage, where collections would
// cost too much CPU), and raises it again when the heap shrinks.
package gctune

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// liveMetric is the runtime's live heap as of the last collection.
const liveMetric = "/gc/heap/live:bytes"

// Percent returns the GOGC percentage that gives a live heap of live bytes
// about headroom bytes of growth, within [floor, ceiling]. A zero live heap
// (before the first collection) gets ceiling.
func Percent(live, headroom uint64, floor, ceiling int) int {
	if live == 0 {
		return ceiling
	}
	p := headroom * 100 / live
	switch {
	case p >= uint64(ceiling):
		return ceiling
	case p <= uint64(floor):
		return floor
	}
	return int(p)
}

// Tune sets the GC percentage from the live heap every interval until ctx
// ends (see Percent), starting at ceiling. It returns at once; the tuning
// runs in a goroutine.
func Tune(ctx context.Context, headroom uint64, floor, ceiling int, interval time.Duration) {
	debug.SetGCPercent(ceiling)
	go func() {
		sample := []metrics.Sample{{Name: liveMetric}}
		cur := ceiling
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			metrics.Read(sample)
			if sample[0].Value.Kind() != metrics.KindUint64 {
				return // unknown to this runtime: keep the ceiling
			}
			if p := Percent(sample[0].Value.Uint64(), headroom, floor, ceiling); p != cur {
				debug.SetGCPercent(p)
				cur = p
			}
		}
	}()
}
