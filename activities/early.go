package activities

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/lorekb/lore/internal/llm"
	"go.temporal.io/sdk/activity"
)

// An early call is the first model call of a chat turn, started by the API of
// this process as soon as the turn is stored, while the turn's ChatRun is
// still being started. Starting a run is a round trip to the Temporal server,
// the slowest step of a turn's start when many turns start at once; with the
// early call it overlaps the model's own time to first token instead of
// preceding it.
//
// The call still belongs to the run's first ModelTurn: when that activity
// runs in this process as a local activity (the run's reader is here, see
// workflows.ChatRunInput.Reader), it adopts the call if it would send the
// model exactly the same request, and streams the call's pieces (those that
// arrived before it, then the rest) as its own; the result is recorded in the
// run's history like that of any other call. A request that differs (the
// thread changed meanwhile), a retry, or a ModelTurn in another process never
// adopts: the call is cancelled and the activity calls the model itself. A
// call nobody adopts within earlyAdoptWithin is cancelled, so at worst a
// turn pays for one unused model call.
type earlyCall struct {
	cancel  context.CancelFunc
	ready   chan struct{} // closed once name and req are known (or buildErr)
	name    string        // the model's configured name
	req     []byte        // the request as JSON
	started time.Time

	mu       sync.Mutex
	deltas   []llm.Delta
	wake     chan struct{} // closed and replaced whenever something arrives
	done     bool
	res      llm.Result
	err      error
	buildErr error
}

// earlyAdoptWithin bounds how long an early call waits for its run (unless
// Chat.EarlyWithin says otherwise).
const earlyAdoptWithin = 10 * time.Second

// Early starts and cancels early calls for the API (not methods of Chat,
// whose methods are all activities). The calls wait on the Chat's hub (see
// streamhub.Hub.Park) for their runs: without a hub there are none.
type Early struct{ Chat *Chat }

// Start starts the first model call of the turn whose ChatRun has id wfID;
// in is the input that run's first ModelTurn gets. It returns at once.
func (x Early) Start(wfID string, in ModelTurnInput) {
	a := x.Chat
	a.startEarly(wfID, func(ctx context.Context) (llm.Model, string, llm.Request, error) { return a.request(ctx, in) })
}

// Cancel cancels the early call of wfID, if there is one nobody adopted (its
// run did not start).
func (x Early) Cancel(wfID string) {
	if e := x.Chat.takeEarly(wfID, nil); e != nil {
		x.Chat.discard(e)
	}
}

func (a *Chat) startEarly(wfID string, request func(context.Context) (llm.Model, string, llm.Request, error)) {
	if a.Hub == nil {
		return // nobody could adopt it
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &earlyCall{cancel: cancel, ready: make(chan struct{}), wake: make(chan struct{}), started: time.Now()}
	if old, _ := a.Hub.Park(wfID, e).(*earlyCall); old != nil {
		a.discard(old)
	}
	within := a.EarlyWithin
	if within <= 0 {
		within = earlyAdoptWithin
	}
	// Also once the call is over: its result waits for the run until then.
	time.AfterFunc(within, func() {
		if a.takeEarly(wfID, e) != nil {
			a.discard(e)
		}
	})
	go func() {
		defer cancel()
		// The reader may go away before the run adopts the call.
		a.cancelOnReaderGone(ctx, wfID, cancel)
		model, name, req, err := request(ctx)
		e.mu.Lock()
		e.name, e.buildErr = name, err
		if err == nil {
			e.req, e.buildErr = json.Marshal(req)
		}
		e.mu.Unlock()
		close(e.ready)
		if e.buildErr != nil {
			return
		}
		res, err := model.Generate(ctx, req, func(d llm.Delta) {
			e.mu.Lock()
			e.deltas = append(e.deltas, d)
			e.signal()
			e.mu.Unlock()
		})
		e.mu.Lock()
		e.done, e.res, e.err = true, res, err
		e.signal()
		e.mu.Unlock()
	}()
}

func (a *Chat) discard(e *earlyCall) {
	e.cancel()
	a.D.Metrics.ObserveEarlyCall("discarded")
}

// takeEarly removes and returns the early call of wfID (only if it is want,
// when want is not nil).
func (a *Chat) takeEarly(wfID string, want *earlyCall) *earlyCall {
	if a.Hub == nil {
		return nil
	}
	var w any
	if want != nil {
		w = want
	}
	e, _ := a.Hub.Take(wfID, w).(*earlyCall)
	return e
}

// signal wakes followers; e.mu is held.
func (e *earlyCall) signal() {
	close(e.wake)
	e.wake = make(chan struct{})
}

// adoptEarly returns the generate function of ModelTurn: the early call of
// the run when this is its first model call, in this process, on the first
// attempt, and the call sends the same request; otherwise model.Generate
// (any early call of the run is then cancelled).
func (a *Chat) adoptEarly(ctx context.Context, in ModelTurnInput, model llm.Model, name string, req llm.Request) (generate, time.Time) {
	own, now := model.Generate, time.Now()
	info := activity.GetInfo(ctx)
	wfID := info.WorkflowExecution.ID
	e := a.takeEarly(wfID, nil)
	if e == nil {
		return own, now
	}
	if !info.IsLocalActivity || info.Attempt != 1 || len(in.Turn) != 0 || !in.OfferTools {
		a.discard(e)
		return own, now
	}
	select {
	case <-e.ready:
	case <-ctx.Done():
		a.discard(e)
		return own, now
	}
	want, err := json.Marshal(req)
	if e.buildErr != nil || err != nil || e.name != name || !bytes.Equal(e.req, want) {
		a.discard(e)
		return own, now
	}
	a.D.Metrics.ObserveEarlyCall("adopted")
	return e.follow, e.started
}

type generate func(ctx context.Context, req llm.Request, onDelta func(llm.Delta)) (llm.Result, error)

// follow hands the call's pieces to onDelta in order (those already there
// first) and returns its result; ctx ending cancels the call.
func (e *earlyCall) follow(ctx context.Context, _ llm.Request, onDelta func(llm.Delta)) (llm.Result, error) {
	next := 0
	for {
		e.mu.Lock()
		ds, done, wake := e.deltas[next:], e.done, e.wake
		res, err := e.res, e.err
		e.mu.Unlock()
		next += len(ds)
		if onDelta != nil {
			for _, d := range ds {
				onDelta(d)
			}
		}
		if len(ds) > 0 {
			continue // more may have arrived meanwhile
		}
		if done {
			return res, err
		}
		select {
		case <-wake:
		case <-ctx.Done():
			e.cancel()
			return llm.Result{}, ctx.Err()
		}
	}
}
