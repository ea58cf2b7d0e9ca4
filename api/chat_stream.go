package api

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/internal/chatevent"
	"github.com/lorekb/lore/internal/gctune"
	"github.com/lorekb/lore/workflows"
	"go.temporal.io/api/serviceerror"
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
	sess, err := s.ownedChatSession(c, threadID, memberID)
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
			writeSSE(w, 1, "", chatevent.Encode(chatevent.NewCreated(threadID)))
		}
		switch {
		case ev != nil && ev.Seq > 1 || ev != nil && after > 0:
			writeSSE(w, ev.Seq, "", ev.Data)
		case done:
			writeSSE(w, 0, "", sseDone)
		}
	}, func(w *bufio.Writer, err error) {
		writeSSE(w, 0, "", chatevent.Encode(chatevent.Error{Error: s.streamFailure(err)}))
		writeSSE(w, 0, "", sseDone)
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
			if err := keepAliveWhile(w, func() error { return launch(ctx) }); err != nil {
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
		err := s.followRun(ctx, wfID, last, launch != nil, func(ev workflows.ChatEvent) { write(w, &ev, false) }, w.Flush,
			// While nothing is written, a comment line each second keeps
			// proxies from closing the stream and tells us whether the
			// client is still there.
			func() error { return keepAlive(w) })
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

// keepAlive writes a comment line, which keeps proxies from closing an idle
// stream, and reports whether the client is still there.
func keepAlive(w *bufio.Writer) error {
	fmt.Fprint(w, ": keep-alive\n\n")
	return w.Flush()
}

// keepAliveWhile runs f, with a keep-alive each second it takes: a start
// may take long (startChatRun sends it again while the engine is slow).
func keepAliveWhile(w *bufio.Writer, f func() error) error {
	done := make(chan error, 1)
	go func() {
		gctune.PregrowStack() // f starts the workflow: the SDK's calls go deep
		done <- f()
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
			_ = keepAlive(w) // a client that left is noticed after the start
		}
	}
}

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
