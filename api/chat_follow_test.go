package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/chatevent"
	"github.com/lorekb/lore/internal/config"
	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/internal/streamhub"
	"github.com/lorekb/lore/workflows"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
)

// The stream follower (followRun) and the chat emitter (streamRun) against
// a fake run log and the in-process hub: no Temporal, no database.

// fakeLog is one chat run's event log as the run serves it to readers: the
// wait_events update (a long-poll), the events query and the cancel. Every
// other client call panics (the embedded nil interface).
type fakeLog struct {
	client.Client
	wait time.Duration // how long the update waits for news, like the run's

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change
	events  []workflows.ChatEvent
	done    bool
	fail    error // set: the update and the query fail with it
	noWait  bool  // the update fails (the run closed): readers use the query

	updates, queries atomic.Int32
	cancels          chan string
}

func newFakeLog() *fakeLog {
	return &fakeLog{wait: time.Second, changed: make(chan struct{}), cancels: make(chan string, 16)}
}

// add appends events to the log, numbered on from the last one.
func (l *fakeLog) add(evs ...chatevent.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range evs {
		l.events = append(l.events, workflows.ChatEvent{Seq: len(l.events) + 1, Data: chatevent.Encode(e)})
	}
	close(l.changed)
	l.changed = make(chan struct{})
}

// finish marks the run as ended.
func (l *fakeLog) finish() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done = true
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *fakeLog) page(from int) workflows.EventsPage {
	p := workflows.EventsPage{Done: l.done}
	if from < len(l.events) {
		p.Events = append([]workflows.ChatEvent(nil), l.events[max(from, 0):]...)
	}
	return p
}

func (l *fakeLog) UpdateWorkflow(_ context.Context, o client.UpdateWorkflowOptions) (client.WorkflowUpdateHandle, error) {
	l.updates.Add(1)
	if o.UpdateName != workflows.UpdateWaitEvents {
		return nil, fmt.Errorf("update %q", o.UpdateName)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.fail != nil:
		return nil, l.fail
	case l.noWait:
		return nil, errors.New("workflow execution already completed")
	}
	return &fakeUpdate{l: l, from: o.Args[0].(workflows.WaitArgs).From}, nil
}

func (l *fakeLog) QueryWorkflow(_ context.Context, _, _, query string, args ...any) (converter.EncodedValue, error) {
	l.queries.Add(1)
	l.mu.Lock()
	defer l.mu.Unlock()
	if query != workflows.QueryEvents {
		return nil, fmt.Errorf("query %q", query)
	}
	if l.fail != nil {
		return nil, l.fail
	}
	b, _ := json.Marshal(l.page(args[0].(int)))
	return fakeValue(b), nil
}

func (l *fakeLog) CancelWorkflow(_ context.Context, wfID, _ string) error {
	l.cancels <- wfID
	return nil
}

// fakeUpdate waits like the run's update handler: until the log has events
// after from, the run is done, or its wait is over.
type fakeUpdate struct {
	client.WorkflowUpdateHandle
	l    *fakeLog
	from int
}

func (u *fakeUpdate) Get(ctx context.Context, v any) error {
	t := time.NewTimer(u.l.wait)
	defer t.Stop()
	for {
		u.l.mu.Lock()
		ready, ch := len(u.l.events) > u.from || u.l.done, u.l.changed
		p := u.l.page(u.from)
		u.l.mu.Unlock()
		if ready {
			*v.(*workflows.EventsPage) = p
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			*v.(*workflows.EventsPage) = p
			return nil
		case <-ch:
		}
	}
}

type fakeValue []byte

func (v fakeValue) HasValue() bool    { return len(v) > 0 }
func (v fakeValue) Get(ptr any) error { return json.Unmarshal(v, ptr) }

// followServer is a server with only what following a run needs: the
// configuration, the fake log as its workflow engine and, when hub is set,
// an in-process hub.
func followServer(t *testing.T, log *fakeLog, hub bool) *Server {
	t.Helper()
	cfg, err := config.LoadFrom(config.MapSource(map[string]string{"LORE_DATA_DIR": t.TempDir(), "LORE_JWT_SECRET": "test-secret-0123456789abcdef0123456789"}))
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	s := &Server{d: &deps.Deps{Cfg: cfg, Log: quiet, Temporal: log}, log: quiet}
	if hub {
		s.hub = streamhub.New(time.Minute)
	}
	return s
}

// A turn as the run logs it: response.created, text, response.completed.
func turnEvents(thread string, texts ...string) []chatevent.Event {
	evs := []chatevent.Event{chatevent.NewCreated(thread)}
	for _, x := range texts {
		evs = append(evs, chatevent.TextDelta{Delta: x})
	}
	return append(evs, chatevent.NewCompleted(thread, chatevent.NewUsage(1, 1)))
}

// hubPublish puts events into the hub with their log sequence numbers, as the
// run (origin "") or a model call (an origin) of this process does.
func hubPublish(h *streamhub.Hub, wfID, origin string, first int, evs ...chatevent.Event) {
	for i, e := range evs {
		h.Publish(wfID, streamhub.Event{Seq: first + i, Origin: origin, Data: chatevent.Encode(e)})
	}
}

// keepBusy publishes events (seq from on) until stopped: a hub that never
// falls silent, so a reader cannot count on a silence to notice a gap.
func keepBusy(h *streamhub.Hub, wfID string, from int) (stop func()) {
	done := make(chan struct{})
	go func() {
		for seq := from; ; seq++ {
			hubPublish(h, wfID, "", seq, chatevent.TextDelta{Delta: "late"})
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return func() { close(done) }
}

// followAll runs followRun to its end and returns the sequence numbers handed
// over, in order.
func followAll(t *testing.T, s *Server, wfID string, after int, own bool) ([]int, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var seqs []int
	err := s.followRun(ctx, wfID, after, own, func(ev workflows.ChatEvent) { seqs = append(seqs, ev.Seq) }, nil, nil)
	return seqs, err
}

func wantSeqs(t *testing.T, got []int, from, to int) {
	t.Helper()
	ok := len(got) == to-from+1
	for i := 0; ok && i < len(got); i++ {
		ok = got[i] == from+i
	}
	if !ok {
		t.Fatalf("handed over %v, want each of %d..%d once, in order", got, from, to)
	}
}

func TestFollowRunReadsTheLogInOrderAndEndsAtCompleted(t *testing.T) {
	log := newFakeLog()
	s := followServer(t, log, false)
	evs := turnEvents("t1", "a", "b", "c")
	go func() { // the run logs its events one by one
		for _, e := range evs {
			time.Sleep(20 * time.Millisecond)
			log.add(e)
		}
		// The log stays open (the turn is stored after its last event):
		// the reader ends on response.completed, not on the run's end.
	}()
	seqs, err := followAll(t, s, "run", 0, false)
	if err != nil {
		t.Fatal(err)
	}
	wantSeqs(t, seqs, 1, len(evs))
}

func TestFollowRunResumesAfterAnEventIDWithoutRepeats(t *testing.T) {
	t.Run("log", func(t *testing.T) {
		log := newFakeLog()
		log.add(turnEvents("t1", "a", "b", "c")...) // seq 1..5
		seqs, err := followAll(t, followServer(t, log, false), "run", 3, false)
		if err != nil {
			t.Fatal(err)
		}
		wantSeqs(t, seqs, 4, 5)
	})
	t.Run("hub", func(t *testing.T) {
		// The hub holds the run's events from the first: a reader that
		// resumes skips what it already has.
		log := newFakeLog()
		s := followServer(t, log, true)
		hubPublish(s.hub, "run", "", 1, turnEvents("t1", "a", "b", "c")...)
		seqs, err := followAll(t, s, "run", 3, false)
		if err != nil {
			t.Fatal(err)
		}
		wantSeqs(t, seqs, 4, 5)
		if n := log.updates.Load(); n != 0 {
			t.Fatalf("a reader the hub served long-polled the log %d times", n)
		}
	})
	t.Run("past the end", func(t *testing.T) {
		// An id beyond the log of an ended run: nothing, then the end.
		log := newFakeLog()
		log.add(turnEvents("t1", "a")...)
		log.finish()
		seqs, err := followAll(t, followServer(t, log, false), "run", 9, false)
		if err != nil || len(seqs) != 0 {
			t.Fatalf("got %v, %v", seqs, err)
		}
	})
}

func TestFollowRunFillsAHubGapFromTheLog(t *testing.T) {
	log := newFakeLog()
	s := followServer(t, log, true)
	evs := turnEvents("t1", "a", "b", "c") // seq 1..5
	log.add(evs...)
	// The hub has the run's own events but missed seq 3 (a model call that
	// ran in another process).
	hubPublish(s.hub, "run", "", 1, evs[:2]...)
	hubPublish(s.hub, "run", "", 4, evs[3:]...)
	defer keepBusy(s.hub, "run", 6)()
	seqs, err := followAll(t, s, "run", 0, true)
	if err != nil {
		t.Fatal(err)
	}
	wantSeqs(t, seqs, 1, 5)
	if log.updates.Load() == 0 {
		t.Fatal("the gap was not read from the log")
	}
}

func TestFollowRunLeavesASilentHubForALogThatIsAhead(t *testing.T) {
	// This process started the run as its reader, but the run works
	// elsewhere: nothing reaches the hub, the log has it all.
	log := newFakeLog()
	s := followServer(t, log, true)
	log.add(turnEvents("t1", "a", "b")...)
	seqs, err := followAll(t, s, "run", 1, true)
	if err != nil {
		t.Fatal(err)
	}
	wantSeqs(t, seqs, 2, 4)
}

func TestFollowRunReturnsTheLogsError(t *testing.T) {
	log := newFakeLog()
	log.fail = errors.New("namespace unavailable")
	seqs, err := followAll(t, followServer(t, log, false), "run", 0, false)
	if err == nil || errors.Is(err, errReaderGone) || len(seqs) != 0 {
		t.Fatalf("got %v, %v; want the log's error", seqs, err)
	}
	// A run that closed answers no update: its log is read by query.
	log = newFakeLog()
	log.noWait = true
	log.add(turnEvents("t1", "a")...)
	log.finish()
	seqs, err = followAll(t, followServer(t, log, false), "run", 0, false)
	if err != nil {
		t.Fatal(err)
	}
	wantSeqs(t, seqs, 1, 3)
}

// goroutinesBackTo waits until the process is back to at most n goroutines.
func goroutinesBackTo(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, want at most %d:\n%s", runtime.NumGoroutine(), n, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestFollowRunStopsWhenTheReaderGoes(t *testing.T) {
	gone := errors.New("broken pipe")
	for _, tc := range []struct {
		name       string
		hub        bool
		failFlush  bool // the reader goes while events flow (else while none do)
		wantCancel bool // the run is cancelled through the engine at once
	}{
		{"hub, while events flow", true, true, true},
		{"hub, while silent", true, false, true},
		{"log, while events flow", false, true, true},
		{"log, while silent", false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := newFakeLog()
			s := followServer(t, log, tc.hub)
			before := runtime.NumGoroutine()
			log.add(chatevent.NewCreated("t1"), chatevent.TextDelta{Delta: "a"})
			if tc.hub {
				// A model call's events (an origin): the run itself is not
				// local, so its cancel goes to the engine at once.
				hubPublish(s.hub, "run", "call/1/0", 1, chatevent.NewCreated("t1"), chatevent.TextDelta{Delta: "a"})
			}
			flush, idle := func() error { return nil }, func() error { return gone }
			if tc.failFlush {
				flush, idle = func() error { return gone }, func() error { return nil }
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- s.followRun(ctx, "run", 0, tc.hub, func(workflows.ChatEvent) {}, flush, idle) }()
			select {
			case err := <-done:
				if !errors.Is(err, errReaderGone) {
					t.Fatalf("followRun returned %v, want errReaderGone", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("followRun went on after its reader went")
			}
			select {
			case id := <-log.cancels:
				if id != "run" {
					t.Fatalf("cancelled %q", id)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the run was not cancelled")
			}
			if tc.hub {
				select {
				case <-s.hub.Cancelled("run"):
				default:
					t.Fatal("the model call in this process was not told")
				}
			}
			goroutinesBackTo(t, before) // its hub and log readers ended with it
		})
	}
}

func TestFollowRunBoundsWhatASlowReaderHasPending(t *testing.T) {
	log := newFakeLog()
	s := followServer(t, log, true)
	const n = 2000
	release := make(chan struct{})
	var seqs []int
	var flushes atomic.Int32
	done := make(chan error, 1)
	go func() {
		done <- s.followRun(context.Background(), "run", 0, true, func(ev workflows.ChatEvent) {
			if ev.Seq == 1 {
				<-release // the client does not read
			}
			seqs = append(seqs, ev.Seq)
		}, func() error { flushes.Add(1); return nil }, nil)
	}()
	hubPublish(s.hub, "run", "", 1, chatevent.NewCreated("t1"))
	for i := 2; i < n; i++ {
		hubPublish(s.hub, "run", "", i, chatevent.TextDelta{Delta: "x"})
		if i%10 == 0 {
			time.Sleep(time.Millisecond) // let the hub reader take what is there
		}
	}
	hubPublish(s.hub, "run", "", n, chatevent.NewCompleted("t1", chatevent.NewUsage(1, 1)))
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	wantSeqs(t, seqs, 1, n)
	// While the reader was stuck, at most the feed's few batches were
	// queued; everything published after that came over as one batch.
	if f := flushes.Load(); f > 40 {
		t.Fatalf("%d batches for %d events: a stuck reader's backlog was queued event by event", f, n)
	}
}

// A run whose workflow task failed starts over in this process and
// publishes its events again, from response.created: the same answer goes
// on where the reader is; another answer (a model that answers otherwise
// the second time) ends the stream with an error rather than glue the new
// text onto the old.
func TestFollowRunNoticesARunThatStartedOverWithAnotherAnswer(t *testing.T) {
	for _, c := range []struct {
		name  string
		again []chatevent.Event
		fails bool
	}{
		{"same answer", turnEvents("t1", "a", "b"), false},
		{"another answer", turnEvents("t1", "x", "y"), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := followServer(t, newFakeLog(), true)
			first := turnEvents("t1", "a", "b")
			hubPublish(s.hub, "run", "", 1, first[:len(first)-1]...) // up to "b", then the task failed
			hubPublish(s.hub, "run", "", 1, c.again...)
			seqs, err := followAll(t, s, "run", 0, true)
			if c.fails {
				if !errors.Is(err, errAnswerRestarted) || s.streamFailure(err) != errAnswerRestarted.Msg {
					t.Fatalf("handed over %v, err %v; want the restart's error", seqs, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			wantSeqs(t, seqs, 1, len(c.again))
		})
	}
}
