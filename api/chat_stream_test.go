package api

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/internal/chatevent"
)

// sseEvent is one event as a client reads it off the wire.
type sseEvent struct {
	id   string
	data string
}

// streamApp serves s's chat stream of run wfID over a real connection:
// GET /run?after=N streams from after N (what Last-Event-ID resolves to),
// GET /attach/{thread_id} is the re-attach handler. launch, when set, is
// the turn's start (its reader is then this process).
func streamApp(t *testing.T, s *Server, launch func(context.Context) error) string {
	t.Helper()
	app := fiber.New(fiber.Config{ErrorHandler: s.errorHandler, DisableStartupMessage: true})
	app.Get("/run", func(c *fiber.Ctx) error {
		after, _ := strconv.Atoi(c.Query("after"))
		s.streamRun(c, "t1", "run", after, launch)
		return nil
	})
	app.Get("/attach/:thread_id", s.attachChat)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { _ = app.ShutdownWithTimeout(5 * time.Second) })
	return "http://" + ln.Addr().String()
}

// openStream starts a GET on a connection of its own (none kept for reuse,
// so a closed body is a closed connection).
func openStream(t *testing.T, ctx context.Context, url string, header map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	tr := &http.Transport{DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// nextEvent reads the next event, skipping comment lines (keep-alives).
func nextEvent(t *testing.T, r *bufio.Reader) (sseEvent, bool) {
	t.Helper()
	var ev sseEvent
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			if line != "" || ev != (sseEvent{}) {
				t.Fatalf("stream cut inside an event: %q %+v (%v)", line, ev, err)
			}
			return ev, false
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if ev != (sseEvent{}) {
				return ev, true
			}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "id: "):
			ev.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			ev.data = strings.TrimPrefix(line, "data: ")
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}
}

// readStream reads a whole stream: its events up to the end of the body.
func readStream(t *testing.T, resp *http.Response) []sseEvent {
	t.Helper()
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("answer %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	r := bufio.NewReader(resp.Body)
	var evs []sseEvent
	for {
		ev, ok := nextEvent(t, r)
		if !ok {
			return evs
		}
		evs = append(evs, ev)
	}
}

func eventType(t *testing.T, ev sseEvent) chatevent.Type {
	t.Helper()
	var m struct {
		Type chatevent.Type `json:"type"`
	}
	if err := json.Unmarshal([]byte(ev.data), &m); err != nil {
		t.Fatalf("event %+v: %v", ev, err)
	}
	return m.Type
}

// wantEvents checks a finished stream: ids from..to, each once and in order,
// then [DONE] (no id) as the last event.
func wantEvents(t *testing.T, evs []sseEvent, from, to int) {
	t.Helper()
	ok := len(evs) == to-from+2 && evs[len(evs)-1] == sseEvent{data: "[DONE]"}
	for i := 0; ok && i < len(evs)-1; i++ {
		ok = evs[i].id == strconv.Itoa(from+i)
	}
	if !ok {
		t.Fatalf("stream %+v, want ids %d..%d once each, then [DONE]", evs, from, to)
	}
	if from <= to && to > 1 && eventType(t, evs[len(evs)-2]) != chatevent.TypeCompleted {
		t.Fatalf("the last event before [DONE] is %s", evs[len(evs)-2].data)
	}
}

func TestChatStreamWritesEachEventOnceWithItsID(t *testing.T) {
	log := newFakeLog()
	s := followServer(t, log, false)
	url := streamApp(t, s, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp := openStream(t, ctx, url+"/run", nil)
	// response.created is the API's own: it comes before the log has
	// anything.
	r := bufio.NewReader(resp.Body)
	first, ok := nextEvent(t, r)
	if !ok || first.id != "1" || eventType(t, first) != chatevent.TypeCreated || !strings.Contains(first.data, "t1") {
		t.Fatalf("first event %+v", first)
	}
	log.add(turnEvents("t1", "a", "b")...) // seq 1 is the run's own created
	evs := []sseEvent{first}
	for {
		ev, ok := nextEvent(t, r)
		if !ok {
			break
		}
		evs = append(evs, ev)
	}
	resp.Body.Close()
	wantEvents(t, evs, 1, 4)
}

func TestChatStreamResumesAfterTheLastEventID(t *testing.T) {
	log := newFakeLog()
	log.add(turnEvents("t1", "a", "b", "c")...) // seq 1..5
	url := streamApp(t, followServer(t, log, false), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wantEvents(t, readStream(t, openStream(t, ctx, url+"/run?after=3", nil)), 4, 5)
	// Resumed at the end of an ended run: no event again, only the end.
	log.finish()
	wantEvents(t, readStream(t, openStream(t, ctx, url+"/run?after=5", nil)), 6, 5)
}

func TestChatStreamFromTheHubWithAGapFilledFromTheLog(t *testing.T) {
	log := newFakeLog()
	s := followServer(t, log, true)
	evs := turnEvents("t1", "a", "b", "c", "d") // seq 1..6
	// The turn's start: the run publishes here but seq 4 reaches only the
	// log.
	launch := func(context.Context) error {
		log.add(evs...)
		go func() {
			hubPublish(s.hub, "run", "", 1, evs[:3]...)
			hubPublish(s.hub, "run", "", 5, evs[4:]...)
		}()
		t.Cleanup(keepBusy(s.hub, "run", 7))
		return nil
	}
	url := streamApp(t, s, launch)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wantEvents(t, readStream(t, openStream(t, ctx, url+"/run", nil)), 1, 6)
}

func TestChatStreamEndsWithAnErrorEventWhenTheLogFails(t *testing.T) {
	log := newFakeLog()
	log.fail = context.DeadlineExceeded
	url := streamApp(t, followServer(t, log, false), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	evs := readStream(t, openStream(t, ctx, url+"/run", nil))
	if len(evs) != 3 || evs[0].id != "1" || evs[2] != (sseEvent{data: "[DONE]"}) || eventType(t, evs[1]) != chatevent.TypeError ||
		!strings.Contains(evs[1].data, "error id") || strings.Contains(evs[1].data, "deadline") {
		t.Fatalf("stream %+v, want created, an error with an error id (not the cause), [DONE]", evs)
	}
	// A turn that cannot start says why (its message is shown as is).
	url = streamApp(t, followServer(t, newFakeLog(), false), func(context.Context) error { return Unavailable("no model today") })
	evs = readStream(t, openStream(t, ctx, url+"/run", nil))
	if len(evs) != 3 || eventType(t, evs[1]) != chatevent.TypeError || !strings.Contains(evs[1].data, "no model today") ||
		evs[2] != (sseEvent{data: "[DONE]"}) {
		t.Fatalf("stream %+v", evs)
	}
}

func TestChatStreamClientThatLeavesCancelsTheRunAndStopsItsReader(t *testing.T) {
	for _, midStream := range []bool{true, false} {
		t.Run("midstream="+strconv.FormatBool(midStream), func(t *testing.T) {
			log := newFakeLog()
			s := followServer(t, log, true)
			// This process started the turn; the run's model call publishes
			// here (an origin: the run itself is not local, so its cancel
			// goes to the engine at once).
			url := streamApp(t, s, func(context.Context) error { return nil })
			if midStream {
				go func() { // a long answer, until the run is cancelled
					for seq := 2; ; seq++ {
						hubPublish(s.hub, "run", "call/1/0", seq, chatevent.TextDelta{Delta: "a"})
						select {
						case <-s.hub.Cancelled("run"):
							return
						case <-time.After(20 * time.Millisecond):
						}
					}
				}()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			resp := openStream(t, ctx, url+"/run?after=1", nil)
			r := bufio.NewReader(resp.Body)
			if midStream {
				if ev, ok := nextEvent(t, r); !ok || ev.id != "2" {
					t.Fatalf("first event %+v", ev)
				}
			} else if line, err := r.ReadString('\n'); err != nil || line != ": keep-alive\n" {
				t.Fatalf("%q %v, want a keep-alive while nothing happens", line, err)
			}
			resp.Body.Close()
			select {
			case <-log.cancels:
			case <-time.After(20 * time.Second):
				t.Fatal("the run was not cancelled after its client left")
			}
			select {
			case <-s.hub.Cancelled("run"):
			default:
				t.Fatal("the model call in this process was not told")
			}
			noneRunning(t, "api.(*Server).pumpSSE", "api.(*Server).followRun", "api.(*Server).readHub",
				"api.(*Server).watchHub", "api.(*Server).pollLog")
		})
	}
}

// noneRunning waits until no goroutine runs any of the functions (the HTTP
// server keeps idle workers of its own, so a count would not do).
func noneRunning(t *testing.T, funcs ...string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		left := ""
		for _, f := range funcs {
			if strings.Contains(stacks, f) {
				left = f
			}
		}
		if left == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still runs:\n%s", left, stacks)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestChatAttachRejectsAMalformedLastEventID(t *testing.T) {
	url := streamApp(t, followServer(t, newFakeLog(), false), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct{ header, query string }{
		{header: "abc"}, {header: "-1"}, {header: "1.5"}, {header: "1e3"}, {header: "99999999999999999999"},
		{query: "-1"}, {query: "x"},
	} {
		u, h := url+"/attach/th", map[string]string{}
		if tc.header != "" {
			h["Last-Event-ID"] = tc.header
		}
		if tc.query != "" {
			u += "?after=" + tc.query
		}
		resp := openStream(t, ctx, u, h)
		var env Envelope
		err := json.NewDecoder(resp.Body).Decode(&env)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusUnprocessableEntity || env.Code != http.StatusUnprocessableEntity ||
			!strings.Contains(env.Msg, "Last-Event-ID") && !strings.Contains(env.Msg, "after") {
			t.Fatalf("%+v: %d %+v %v, want a 422 naming the field", tc, resp.StatusCode, env, err)
		}
	}
}
