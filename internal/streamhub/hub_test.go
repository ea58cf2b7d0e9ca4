package streamhub

import (
	"context"
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
