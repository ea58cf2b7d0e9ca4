package streamhub

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestWaitReturnsEventsInOrderFromAnIndex(t *testing.T) {
	h := New(time.Minute)
	got := make(chan []Event, 1)
	go func() { got <- h.Wait(context.Background(), "run", 0) }()
	time.Sleep(10 * time.Millisecond) // the reader waits before anything exists
	h.Publish("run", Event{Origin: "a/1/0", Seq: 2, Data: []byte("x")})
	select {
	case evs := <-got:
		if len(evs) != 1 || evs[0].Seq != 2 || evs[0].Origin != "a/1/0" {
			t.Fatalf("events %+v", evs)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a waiting reader was not woken by Publish")
	}
	h.Publish("run", Event{Seq: 3})
	h.Publish("other", Event{Seq: 1})
	if evs := h.Wait(context.Background(), "run", 1); len(evs) != 1 || evs[0].Seq != 3 {
		t.Fatalf("from index 1: %+v", evs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if evs := h.Wait(ctx, "run", 2); evs != nil {
		t.Fatalf("a cancelled wait with nothing new returned %+v", evs)
	}
}

func TestCancelClosesCancelledForThatRunOnly(t *testing.T) {
	h := New(time.Minute)
	a, b := h.Cancelled("a"), h.Cancelled("b")
	h.Cancel("a")
	h.Cancel("a") // twice is harmless
	select {
	case <-a:
	default:
		t.Fatal("Cancelled(a) is not closed after Cancel(a)")
	}
	select {
	case <-b:
		t.Fatal("Cancel(a) closed Cancelled(b)")
	default:
	}
	select {
	case <-h.Cancelled("a"):
	default:
		t.Fatal("a later Cancelled(a) is not closed")
	}
}

func TestWaitQuietWaitsForASilentPeriod(t *testing.T) {
	h := New(time.Minute)
	const quiet = 200 * time.Millisecond
	stop := make(chan struct{})
	go func() { // publish every 10 ms for 300 ms
		for i := 0; i < 30; i++ {
			h.Publish("run", Event{Seq: i + 1})
			time.Sleep(10 * time.Millisecond)
		}
		close(stop)
	}()
	start := time.Now()
	h.WaitQuiet(context.Background(), "run", quiet)
	<-stop
	// It cannot return while events keep coming less than quiet apart.
	if el := time.Since(start); el < 250*time.Millisecond {
		t.Fatalf("WaitQuiet returned after %s while the run was publishing", el)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan struct{})
	go func() { h.WaitQuiet(ctx, "busy", time.Hour); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("WaitQuiet ignored its context")
	}
}

func TestLocalOnlyAfterTheRunItselfPublished(t *testing.T) {
	h := New(time.Minute)
	h.Publish("run", Event{Origin: "act/1/0", Seq: 2})
	if h.Local("run") || h.Local("never") {
		t.Fatal("an activity's event (or nothing) made the run local")
	}
	h.Publish("run", Event{Seq: 3}) // the workflow's own event
	if !h.Local("run") {
		t.Fatal("the run's own event did not make it local")
	}
}

func TestHubsHaveTheirOwnIDs(t *testing.T) {
	a, b := New(time.Minute), New(time.Minute)
	if a.ID == b.ID || len(a.ID) != 16 {
		t.Fatalf("hub ids %q, %q", a.ID, b.ID)
	}
}

// TestManyRunsAtOnceEachGetTheirOwnEvents: runs spread over the shards, each
// publishing while its reader waits, see exactly their own events in order.
func TestManyRunsAtOnceEachGetTheirOwnEvents(t *testing.T) {
	h := New(time.Minute)
	const runs, events = 200, 25
	errs := make(chan string, runs)
	for i := range runs {
		key := fmt.Sprintf("run-%d", i)
		go func() {
			for n := 1; n <= events; n++ {
				h.Publish(key, Event{Seq: n, Data: []byte(key)})
			}
		}()
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var got []Event
			for len(got) < events && ctx.Err() == nil {
				got = append(got, h.Wait(ctx, key, len(got))...)
			}
			for n, ev := range got {
				if ev.Seq != n+1 || string(ev.Data) != key {
					errs <- fmt.Sprintf("%s: event %d is %d of %q", key, n, ev.Seq, ev.Data)
					return
				}
			}
			if len(got) != events {
				errs <- fmt.Sprintf("%s: %d events, want %d", key, len(got), events)
				return
			}
			errs <- ""
		}()
	}
	for range runs {
		if e := <-errs; e != "" {
			t.Fatal(e)
		}
	}
}

// TestForgetsARunTTLAfterItsLastEvent: a run nobody published to for the
// ttl is dropped by the next publish of its shard (its waiters woken).
func TestForgetsARunTTLAfterItsLastEvent(t *testing.T) {
	for _, n := range []int{1, shards} {
		h := newHub(50*time.Millisecond, n)
		h.Publish("old", Event{Seq: 1, Origin: ""})
		time.Sleep(120 * time.Millisecond)
		// Publish to keys until one shares the old run's shard.
		for i := 0; i < 10*n; i++ {
			h.Publish(fmt.Sprintf("new-%d", i), Event{Seq: 1})
		}
		if h.Local("old") {
			t.Fatalf("%d shards: the old run is still held after its ttl", n)
		}
	}
}

// BenchmarkChatTurns is the hub's load of concurrent chat turns: per turn a
// reader (Wait) and a watcher (WaitQuiet) while the run publishes its 25
// events; one shard is the single lock the hub had before. Compare with
// go test -bench ChatTurns -cpu 2,16 ./internal/streamhub/.
func BenchmarkChatTurns(b *testing.B) {
	for _, n := range []int{1, shards} {
		b.Run(fmt.Sprintf("shards=%d", n), func(b *testing.B) {
			h := newHub(time.Minute, n)
			const conc, events = 200, 25
			var seq atomic.Int64
			b.ResetTimer()
			var wg sync.WaitGroup
			for range conc {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for seq.Add(1) <= int64(b.N) {
						key := fmt.Sprintf("turn-%d", seq.Load())
						ctx, cancel := context.WithCancel(context.Background())
						go h.WaitQuiet(ctx, key, time.Second)
						done := make(chan struct{})
						go func() {
							for got := 0; got < events; {
								got += len(h.Wait(ctx, key, got))
							}
							close(done)
						}()
						for i := 1; i <= events; i++ {
							h.Publish(key, Event{Seq: i})
						}
						<-done
						cancel()
					}
				}()
			}
			wg.Wait()
		})
	}
}
