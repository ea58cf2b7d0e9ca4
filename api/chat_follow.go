package api

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/lorekb/lore/internal/chatevent"
	"github.com/lorekb/lore/workflows"
	"go.temporal.io/sdk/client"
)

// How a hub reader notices that the hub is not (or no longer) its run's
// source: the log is looked at (a query, which never disturbs the run) once
// the hub has been silent this long.
const (
	// hubUnclaimed: the run has not published here yet (its first workflow
	// task has not run here, maybe never will).
	hubUnclaimed = 500 * time.Millisecond
	// hubStall: the run published here, then fell silent (a slow model, or
	// its workflow task moved to another process).
	hubStall = 3 * time.Second
)

// errReaderGone: followRun's reader went away (a flush failed); the run was
// cancelled.
var errReaderGone = errors.New("the reader went away")

// errAnswerRestarted ends a stream whose run started over and answered
// otherwise (see followRun): the stored turn has the new answer.
var errAnswerRestarted = Unavailable("the answer was interrupted and written again; reload the conversation to read it")

// feed is what a source hands the reader: events in log order, or an error.
type feed struct {
	gen    int // the source generation it comes from (see followRun)
	check  bool
	events []workflows.ChatEvent
	done   bool // the log says the run has ended
	err    error
}

// followRun hands a run's events after sequence number after to onEvent, in
// log order, and returns nil once the run's last event (response.completed)
// was handed over.
//
// A reader has one source, chosen when it opens: the hub when the run works
// in this process (own: this process started it as its reader; or the hub
// has the run's own events), otherwise the run's log, long-polled. The hub
// has each event the moment it exists, with its log sequence number, and
// lets the reader finish as soon as the run's last event exists (storing the
// turn and summarizing come after it). A hub reader switches to the log for
// good only if the hub stops making sense: a gap in the sequence numbers, or
// a silence (hubUnclaimed, hubStall) after which the log turns out to be
// ahead (the run never ran here, or its workflow task moved elsewhere).
//
// flush (optional) follows each batch and idle (optional) each second in
// which nothing was handed over; an error from either means the reader is
// gone: the run is cancelled and errReaderGone returned. Other errors are
// the log's.
func (s *Server) followRun(ctx context.Context, wfID string, after int, own bool, onEvent func(workflows.ChatEvent),
	flush, idle func() error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	items := make(chan feed, 16)
	last := after
	var seen atomic.Int64 // last, for the hub watcher
	seen.Store(int64(after))
	gen := 0
	stopHub := func() {}
	fromHub := s.hub != nil && (own || s.hub.Local(wfID))
	if fromHub {
		hctx, stop := context.WithCancel(ctx)
		stopHub = stop
		go s.readHub(hctx, wfID, items)
		go s.watchHub(hctx, wfID, &seen, items)
	} else {
		go s.pollLog(ctx, wfID, after, gen, items)
	}
	toLog := func() {
		stopHub()
		fromHub = false
		gen++
		go s.pollLog(ctx, wfID, last, gen, items)
	}
	gone := func() error {
		s.cancelRun(wfID)
		return errReaderGone
	}
	// The answer text handed over, by sequence number from first: a hub
	// that publishes one of them again with other text comes from a run
	// that started over in this process (its workflow task failed and ran
	// again, model calls included) and answered otherwise than what the
	// client already has.
	first := last
	var shown []string
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	quiet, completed := true, false
	for !completed {
		var it feed
		select {
		case it = <-items:
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			if quiet && idle != nil && idle() != nil {
				return gone()
			}
			quiet = true
			continue
		}
		switch {
		case it.gen != gen:
			continue // from a source left behind
		case it.check:
			if n := len(it.events); fromHub && n > 0 && it.events[n-1].Seq > last {
				toLog()
			}
			continue
		case it.err != nil:
			return it.err
		}
		for _, ev := range it.events {
			if ev.Seq <= last {
				if i := ev.Seq - first - 1; fromHub && i >= 0 && shown[i] != "" && shown[i] != string(ev.Data) {
					return errAnswerRestarted
				}
				continue
			}
			if ev.Seq != last+1 {
				if fromHub {
					toLog() // the hub missed events: the log has them
				}
				break
			}
			onEvent(ev)
			quiet = false
			last = ev.Seq
			text := ""
			switch chatevent.TypeOf(ev.Data) {
			case chatevent.TypeTextDelta:
				text = string(ev.Data)
			case chatevent.TypeCompleted:
				if ev.Origin == "" {
					completed = true
				}
			}
			shown = append(shown, text)
		}
		seen.Store(int64(last))
		if it.done && !fromHub {
			completed = true
		}
		if !completed && flush != nil && flush() != nil {
			return gone()
		}
	}
	return nil
}

// readHub hands the run's hub events over as they are published (hub
// readers are always generation 0).
func (s *Server) readHub(ctx context.Context, wfID string, items chan<- feed) {
	for idx := 0; ; {
		evs := s.hub.Wait(ctx, wfID, idx)
		if ctx.Err() != nil {
			return
		}
		idx += len(evs)
		f := feed{events: make([]workflows.ChatEvent, len(evs))}
		for i, e := range evs {
			f.events[i] = workflows.ChatEvent{Seq: e.Seq, Data: e.Data, Origin: e.Origin}
		}
		select {
		case items <- f:
		case <-ctx.Done():
			return
		}
	}
}

// watchHub looks at the run's log whenever the hub falls silent (see
// hubUnclaimed, hubStall) and hands what the log has after seen over as a
// check: the reader switches to the log if it is ahead.
func (s *Server) watchHub(ctx context.Context, wfID string, seen *atomic.Int64, items chan<- feed) {
	for {
		quiet := hubStall
		if !s.hub.Local(wfID) {
			quiet = hubUnclaimed
		}
		s.hub.WaitQuiet(ctx, wfID, quiet)
		if ctx.Err() != nil {
			return
		}
		page, err := s.queryLog(ctx, wfID, int(seen.Load()))
		if err != nil || len(page.Events) == 0 {
			continue
		}
		select {
		case items <- feed{check: true, events: page.Events}:
		case <-ctx.Done():
			return
		}
	}
}

// pollLog hands the run's log over from after on, by long-poll, until the
// run has ended or ctx ends.
func (s *Server) pollLog(ctx context.Context, wfID string, after, gen int, items chan<- feed) {
	for next := after; ; {
		page, err := s.readLog(ctx, wfID, next)
		select {
		case items <- feed{gen: gen, events: page.Events, done: page.Done, err: err}:
		case <-ctx.Done():
			return
		}
		if err != nil || page.Done {
			return
		}
		if n := len(page.Events); n > 0 {
			next = page.Events[n-1].Seq
		}
	}
}

// readLog long-polls the run's log (workflow update) from an offset; for a
// run that already closed it reads the log by query.
func (s *Server) readLog(ctx context.Context, wfID string, from int) (workflows.EventsPage, error) {
	var page workflows.EventsPage
	h, err := s.d.Temporal.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: wfID,
		UpdateName: workflows.UpdateWaitEvents, Args: []any{workflows.WaitArgs{From: from}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		if err = h.Get(ctx, &page); err == nil {
			return page, nil
		}
	}
	page, qerr := s.queryLog(ctx, wfID, from)
	if qerr != nil {
		return page, fmt.Errorf("update: %v; query: %w", err, qerr)
	}
	return page, nil
}

// queryLog reads the run's log after from without waiting.
func (s *Server) queryLog(ctx context.Context, wfID string, from int) (workflows.EventsPage, error) {
	var page workflows.EventsPage
	v, err := s.d.Temporal.QueryWorkflow(ctx, wfID, "", workflows.QueryEvents, from)
	if err != nil {
		return page, err
	}
	return page, v.Get(&page)
}
