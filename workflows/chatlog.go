package workflows

import (
	"encoding/json"
	"time"

	"github.com/lorekb/lore/activities"
	"github.com/lorekb/lore/internal/chatevent"
	"github.com/lorekb/lore/internal/streamhub"
	"go.temporal.io/sdk/workflow"
)

// The chat run's event log: what a client sees of a turn, numbered from 1.
// The run appends its own events (emit) and its model calls' (accept: with a
// call's result, and from scheduled calls by signal); readers get it by
// query or long-poll update, or, in the worker's process, from the hub.

// Names of the chat run's read side.
const (
	// UpdateWaitEvents long-polls the event log: it returns the events after
	// the given sequence number as soon as there are any (or the run is done).
	UpdateWaitEvents = "wait_events"
	// QueryEvents reads the event log without waiting (also after the run closed).
	QueryEvents = "events"
)

// ChatEvent is one numbered event of the log; Data is the SSE payload.
type ChatEvent struct {
	Seq    int             `json:"seq"`
	Data   json.RawMessage `json:"data"`
	Origin string          `json:"origin,omitempty"` // the hub key of an activity's event
}

// WaitArgs is the argument of UpdateWaitEvents.
type WaitArgs struct {
	From int // last sequence number the reader has
}

// EventsPage is a slice of the log after a sequence number.
type EventsPage struct {
	Events []ChatEvent
	Done   bool
}

// serveLog opens the log's read side (the query and the long-poll update)
// and takes the batches scheduled model calls signal.
func (r *turnState) serveLog() error {
	ctx := r.ctx
	if err := workflow.SetQueryHandler(ctx, QueryEvents, func(from int) (EventsPage, error) { return r.page(from), nil }); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandler(ctx, UpdateWaitEvents, func(uctx workflow.Context, w WaitArgs) (EventsPage, error) {
		_, _ = workflow.AwaitWithTimeout(uctx, 5*time.Second, func() bool { return len(r.events) > w.From || r.done })
		return r.page(w.From), nil
	}); err != nil {
		return err
	}
	r.sig = workflow.GetSignalChannel(ctx, activities.SignalEvents)
	workflow.Go(ctx, func(gctx workflow.Context) {
		for {
			var b activities.EventBatch
			if !r.sig.Receive(gctx, &b) {
				return
			}
			r.accept(b)
		}
	})
	return nil
}

// emit appends one of the run's own events to the log (and publishes it to
// the hub, when there is one, outside replay).
func (r *turnState) emit(e chatevent.Event) {
	b := chatevent.Encode(e)
	ev := ChatEvent{Seq: len(r.events) + 1, Data: b}
	r.events = append(r.events, ev)
	if r.hub != nil && !workflow.IsReplaying(r.ctx) {
		// Like a log line: the hub never feeds back into the run's state.
		r.hub.Publish(workflow.GetInfo(r.ctx).WorkflowExecution.ID, streamhub.Event{Seq: ev.Seq, Data: b})
	}
}

func (r *turnState) emitText(t string) {
	r.emit(chatevent.TextDelta{Delta: t})
}

// errRetriedMidStream ends a turn whose model call was retried after an
// earlier attempt had streamed part of its answer.
const errRetriedMidStream = "the model call was interrupted after part of its answer was streamed"

// accept appends an activity's batch to the log in arrival order; a batch of
// another attempt than the one already in the log is dropped (see stale).
func (r *turnState) accept(b activities.EventBatch) {
	if len(b.Events) == 0 {
		return
	}
	if r.attempt != 0 && b.Attempt != r.attempt {
		r.stale = true
		return
	}
	r.attempt = b.Attempt
	for i, e := range b.Events {
		ev := ChatEvent{Seq: len(r.events) + 1, Data: e}
		if i < len(b.Origins) {
			ev.Origin = b.Origins[i]
		}
		r.events = append(r.events, ev)
		if text, ok := chatevent.TextOf(e); ok {
			r.partial += text
		}
	}
}

// drain takes batches that arrived before an activity completed, so the
// workflow's own next events come after them.
func (r *turnState) drain() {
	for {
		var b activities.EventBatch
		if !r.sig.ReceiveAsync(&b) {
			return
		}
		r.accept(b)
	}
}

func (r *turnState) page(from int) EventsPage {
	if from < 0 {
		from = 0
	}
	p := EventsPage{Done: r.done}
	if from < len(r.events) {
		p.Events = r.events[from:]
	}
	return p
}
