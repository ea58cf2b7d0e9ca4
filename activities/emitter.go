package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/lorekb/lore/internal/chatevent"
	"github.com/lorekb/lore/internal/llm"
	"github.com/lorekb/lore/internal/streamhub"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
)

// emitter takes the events of one model call attempt to the run's readers,
// in one of two ways fixed by how the call runs:
//
//   - as a local activity (the run's reader is in this process): each event
//     goes to the hub at once, with its log sequence number, and to the log
//     with the call's result (or its error). A signal would be useless: the
//     run's workflow task is open while a local activity runs.
//   - as a scheduled activity (the reader reads the log): events are
//     signalled to the run in batches, the first at once, then every
//     FlushInterval, each with a heartbeat; what is left goes with the
//     result.
type emitter struct {
	a         *Chat
	ctx       context.Context
	wfID      string
	runID     string
	attempt   int32
	prefix    string // origin prefix: activity id and attempt
	seqBase   int
	local     bool
	n         int
	mu        sync.Mutex
	sendMu    sync.Mutex // one signal at a time, so batches arrive in order
	pending   []json.RawMessage
	origins   []string
	sent      bool
	stop      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
	err       error
}

func (a *Chat) newEmitter(ctx context.Context, in ModelTurnInput) *emitter {
	info := activity.GetInfo(ctx)
	e := &emitter{a: a, ctx: ctx, wfID: info.WorkflowExecution.ID, runID: info.WorkflowExecution.RunID,
		attempt: info.Attempt, stop: make(chan struct{}), seqBase: in.SeqBase, local: info.IsLocalActivity,
		prefix: fmt.Sprintf("%s/%d/", info.ActivityID, info.Attempt)}
	if e.local {
		return e
	}
	interval := a.FlushInterval
	if interval <= 0 {
		interval = 40 * time.Millisecond
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-e.stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				_ = e.flush()
			}
		}
	}()
	return e
}

func (e *emitter) add(ev chatevent.Event) {
	b := chatevent.Encode(ev)
	e.mu.Lock()
	origin := e.prefix + strconv.Itoa(e.n)
	seq := e.seqBase + e.n + 1
	e.n++
	e.pending = append(e.pending, b)
	e.origins = append(e.origins, origin)
	first := !e.sent
	if e.local && e.a.Hub != nil {
		e.a.Hub.Publish(e.wfID, streamhub.Event{Origin: origin, Seq: seq, Data: b})
	}
	e.mu.Unlock()
	if first && !e.local {
		_ = e.flush() // the first piece goes out at once: it is what time-to-first-token measures
	}
}

// take removes and returns what is pending.
func (e *emitter) take() EventBatch {
	e.mu.Lock()
	defer e.mu.Unlock()
	b := EventBatch{Attempt: e.attempt, Events: e.pending, Origins: e.origins}
	e.pending, e.origins = nil, nil
	if len(b.Events) > 0 {
		e.sent = true
	}
	return b
}

// emitted reports whether the call has emitted an event (to the hub, the
// log or pending).
func (e *emitter) emitted() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n > 0
}

// flush sends what is pending as one signal and heartbeats.
func (e *emitter) flush() error {
	activity.RecordHeartbeat(e.ctx)
	return e.signal(e.ctx)
}

// flushDetached sends what is pending even though the activity's context may
// be cancelled (the run still takes signals while it winds down).
func (e *emitter) flushDetached() error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(e.ctx), 5*time.Second)
	defer cancel()
	return e.signal(ctx)
}

func (e *emitter) signal(ctx context.Context) error {
	e.sendMu.Lock()
	defer e.sendMu.Unlock()
	b := e.take()
	if len(b.Events) == 0 {
		return nil
	}
	err := e.a.Signals.SignalWorkflow(ctx, e.wfID, e.runID, SignalEvents, b)
	if err != nil {
		e.mu.Lock()
		e.err = err
		e.mu.Unlock()
	}
	return err
}

// failed reports the first signal error: a batch that did not reach the log
// fails the call (see fail).
func (e *emitter) failed() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

// close stops the periodic flushes and waits for one in progress, so the
// tail taken after it follows every signalled batch.
func (e *emitter) close() {
	e.closeOnce.Do(func() {
		close(e.stop)
		e.wg.Wait()
	})
}

// fail turns a failed call into the error the run sees. What a reader may
// already have seen must reach the log: a scheduled activity signals it; a
// local activity (its run's workflow task is open, a signal would only land
// after the run ended) carries it in the error. Either way a call that
// emitted anything fails for good (ErrModelStreamBroken): a retry would
// stream the text twice.
func (em *emitter) fail(ctx context.Context, err error) error {
	var typ string
	nonRetryable := false
	switch {
	case errors.Is(context.Cause(ctx), errStreamDeadline):
		typ, nonRetryable = ErrStreamTimeout, true
	case em.a.Hub != nil && isClosed(em.a.Hub.Cancelled(em.wfID)):
		// Also when the call ended before ctx saw the cancel.
		typ, nonRetryable = ErrClientGone, true
	case errors.Is(err, llm.ErrPermanent):
		typ, nonRetryable = ErrModelPermanent, true
	}
	if !em.local {
		shown := em.emitted()
		_ = em.flushDetached()
		if shown && !nonRetryable {
			// A retry would stream its answer after the part readers have.
			typ, nonRetryable = ErrModelStreamBroken, true
		}
		if nonRetryable {
			return temporal.NewNonRetryableApplicationError(err.Error(), typ, err)
		}
		return err
	}
	tail := em.take()
	if len(tail.Events) == 0 && !nonRetryable {
		return err // nothing shown yet: retry
	}
	if typ == "" {
		typ = ErrModelStreamBroken
	}
	return temporal.NewNonRetryableApplicationError(err.Error(), typ, err, tail)
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
