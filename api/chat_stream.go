package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/streamhub"
	"github.com/lorekb/lore/workflows"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
)

func (s *Server) attachChat(c *fiber.Ctx) error {
	var q AttachQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	last := c.Get("Last-Event-ID")
	if q.After != nil {
		last = strconv.Itoa(*q.After)
	}
	return s.attach(c, c.Params("thread_id"), q.MemberID, last)
}

// attach streams the latest turn of a thread from after the given event id.
func (s *Server) attach(c *fiber.Ctx, threadID, memberID, lastEventID string) error {
	after := 0
	if lastEventID != "" {
		n, err := strconv.Atoi(lastEventID)
		if err != nil || n < 0 {
			return Invalid("Last-Event-ID: must be a non-negative integer")
		}
		after = n
	}
	sess, err := s.d.DB.ChatSessionByThread(c.UserContext(), threadID)
	if errors.Is(err, db.ErrNotFound) {
		return NotFound("thread")
	}
	if err != nil {
		return err
	}
	if memberID != "" && sess.MemberID != memberID {
		return Errf(http.StatusForbidden, "thread %s belongs to another member", threadID)
	}
	if sess.SiteID != nil {
		if _, err := s.clientSite(c, *sess.SiteID); err != nil {
			return err
		}
	}
	if _, err := s.temporalClient(); err != nil {
		return err
	}
	s.streamRun(c, threadID, workflows.ChatRunID(threadID, sess.ID, sess.TurnCount), after, nil)
	return nil
}

// streamRun writes the run's events after `after` as SSE, each with its id,
// then [DONE]. The first event (response.created) is written at once from
// what the API already knows.
func (s *Server) streamRun(c *fiber.Ctx, threadID, wfID string, after int, launch func(context.Context) error) {
	first := after == 0
	s.pumpSSE(c, wfID, after, launch, func(w *bufio.Writer, ev *workflows.ChatEvent, done bool) {
		if first {
			first = false
			created, _ := json.Marshal(map[string]any{"type": "response.created",
				"response": map[string]any{"id": threadID, "object": "response", "status": "in_progress"}})
			fmt.Fprintf(w, "id: 1\ndata: %s\n\n", created)
		}
		switch {
		case ev != nil && ev.Seq > 1 || ev != nil && after > 0:
			fmt.Fprintf(w, "id: %d\ndata: %s\n\n", ev.Seq, ev.Data)
		case done:
			fmt.Fprint(w, "data: [DONE]\n\n")
		}
	}, func(w *bufio.Writer, err error) {
		b, _ := json.Marshal(map[string]any{"type": "response.error", "error": "the chat run could not be read: " + err.Error()})
		fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", b)
	})
}

// pumpSSE streams a run's log through write: once with a nil event before
// anything is read (so a first line can go out at once), once per event (see
// followRun), and once with done=true at the end. A client that goes away
// cancels the run, so the pending model call stops.
func (s *Server) pumpSSE(c *fiber.Ctx, wfID string, after int, launch func(context.Context) error,
	write func(w *bufio.Writer, ev *workflows.ChatEvent, done bool), fail func(w *bufio.Writer, err error)) {
	setSSEHeaders(c)
	c.Status(http.StatusOK)
	timeout := s.d.Cfg.ChatStreamTimeout() + time.Minute
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		write(w, nil, false)
		flushErr := w.Flush()
		if launch != nil {
			// The run starts even if the client already left: the turn is
			// stored and gets its answer (a reconnect can read it).
			if err := launch(ctx); err != nil {
				fail(w, err)
				_ = w.Flush()
				return
			}
		}
		if flushErr != nil {
			s.cancelRun(wfID)
			return
		}
		last := after
		if after == 0 {
			last = 1 // response.created is known without reading it
		}
		err := s.followRun(ctx, wfID, last, func(ev workflows.ChatEvent) { write(w, &ev, false) }, w.Flush,
			// While nothing is written, a comment line each second keeps
			// proxies from closing the stream and tells us whether the
			// client is still there.
			func() error {
				fmt.Fprint(w, ": keep-alive\n\n")
				return w.Flush()
			})
		switch {
		case err == nil:
			write(w, nil, true)
			_ = w.Flush()
		case !errors.Is(err, errReaderGone):
			fail(w, err)
			_ = w.Flush()
		}
	})
}

// errReaderGone: followRun's reader went away (a flush failed); the run was
// cancelled.
var errReaderGone = errors.New("the reader went away")

// followRun hands a run's events after sequence number after to onEvent, in
// log order, and returns nil once the run's last event (response.completed)
// was handed over. Events come from two sources merged in log order: the
// in-process hub (each event the moment it exists, when the worker runs in
// this process) and the run's log read by long-poll (the source of truth,
// and the only source when the run works elsewhere). An event delivered by
// the hub is not handed over again when the log brings it. Reading from the
// hub, a reader is not held up by what the run does after its last event
// (storing the turn, summarizing). flush (optional) follows each batch and
// idle (optional) each second in which nothing was handed over; an error
// from either means the reader is gone: the run is cancelled and
// errReaderGone returned. Other errors are the log's.
func (s *Server) followRun(ctx context.Context, wfID string, after int, onEvent func(workflows.ChatEvent),
	flush, idle func() error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	last := after
	type item struct {
		hub  []streamhub.Event
		page *workflows.EventsPage
		err  error
	}
	items := make(chan item, 16)
	go func() { // the log, by long-poll
		for next := last; ; {
			if s.hub != nil {
				// While the hub delivers (the run works in this
				// process), the log is only needed once it falls
				// silent: then it brings what the hub could not.
				s.hub.WaitQuiet(ctx, wfID, hubQuiet)
			}
			page, err := s.readLog(ctx, wfID, workflows.WaitArgs{From: next, OwnOnly: s.hub != nil})
			select {
			case items <- item{page: &page, err: err}:
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
	}()
	if s.hub != nil {
		go func() { // the fast path
			for idx := 0; ctx.Err() == nil; {
				evs := s.hub.Wait(ctx, wfID, idx)
				if len(evs) == 0 {
					continue
				}
				idx += len(evs)
				select {
				case items <- item{hub: evs}:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	sent := map[string]bool{}         // origins already handed over
	held := map[int]streamhub.Event{} // hub events waiting for earlier log entries
	completed := false                // response.completed handed over: the log has nothing after it
	quiet := true
	emit := func(ev workflows.ChatEvent) {
		onEvent(ev)
		quiet = false
		last = ev.Seq
		if ev.Origin != "" {
			sent[ev.Origin] = true
		} else if eventType(ev.Data) == "response.completed" {
			completed = true
		}
	}
	drainHeld := func() {
		for {
			h, ok := held[last+1]
			if !ok {
				return
			}
			delete(held, last+1)
			if !sent[h.Origin] {
				emit(workflows.ChatEvent{Seq: h.Seq, Data: h.Data, Origin: h.Origin})
			}
		}
	}
	gone := func() error {
		s.cancelRun(wfID)
		return errReaderGone
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		var it item
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
		case it.err != nil:
			return it.err
		case it.hub != nil:
			for _, h := range it.hub {
				if sent[h.Origin] || h.Seq <= last {
					continue
				}
				held[h.Seq] = h
			}
			drainHeld()
		default:
			for _, ev := range it.page.Events {
				if ev.Seq <= last && ev.Origin == "" {
					continue
				}
				if ev.Origin != "" && sent[ev.Origin] {
					last = max(last, ev.Seq)
					continue
				}
				emit(ev)
				drainHeld()
			}
			if it.page.Done {
				completed = true
			}
		}
		if completed {
			return nil
		}
		if flush != nil && flush() != nil {
			return gone()
		}
	}
}

// hubQuiet is how long the hub must stay silent before the log is read.
const hubQuiet = 300 * time.Millisecond

// cancelRun cancels a chat run whose client went away: a model call in this
// process stops at once through the hub; the run itself is cancelled through
// Temporal (it may already have finished).
func (s *Server) cancelRun(wfID string) {
	if s.hub != nil {
		s.hub.Cancel(wfID)
		if s.hub.Local(wfID) {
			// The run works in this process and ends by itself once its
			// model call stopped. A cancel request now would only land in
			// its open workflow task and make the server fail and replay
			// it; send one later in case the run moved elsewhere.
			time.AfterFunc(5*time.Second, func() { s.cancelWorkflow(wfID) })
			return
		}
	}
	s.cancelWorkflow(wfID)
}

func (s *Server) cancelWorkflow(wfID string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var nf *serviceerror.NotFound
	if err := s.d.Temporal.CancelWorkflow(ctx, wfID, ""); err != nil && !errors.As(err, &nf) {
		s.log.Warn("cancel chat run", "workflow_id", wfID, "err", err)
	}
}

// eventType is the "type" of an SSE payload.
func eventType(data []byte) string {
	var e struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(data, &e)
	return e.Type
}

// readLog long-polls the run's log (workflow update) from an offset; for a
// run that already closed it reads the log by query.
func (s *Server) readLog(ctx context.Context, wfID string, args workflows.WaitArgs) (workflows.EventsPage, error) {
	from := args.From
	var page workflows.EventsPage
	h, err := s.d.Temporal.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: wfID,
		UpdateName: workflows.UpdateWaitEvents, Args: []any{args}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		if err = h.Get(ctx, &page); err == nil {
			return page, nil
		}
	}
	v, qerr := s.d.Temporal.QueryWorkflow(ctx, wfID, "", workflows.QueryEvents, from)
	if qerr != nil {
		return page, fmt.Errorf("update: %v; query: %w", err, qerr)
	}
	return page, v.Get(&page)
}
