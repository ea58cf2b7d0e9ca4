package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lorekb/lore/api/apitest"
	"github.com/lorekb/lore/internal/streamhub"
	"github.com/lorekb/lore/models"
	"github.com/lorekb/lore/workflows"
)

// scriptedModel is an OpenAI-compatible chat endpoint: the first call of a
// turn asks for the search tool (arguments split across chunks), the next
// streams an answer word by word. stall makes it hang after the first word
// until the client goes away.
type scriptedModel struct {
	srv       *httptest.Server
	calls     atomic.Int32
	cancelled atomic.Int32
	stall     atomic.Bool
	stallTool atomic.Bool // hang before the tool call (the first call of a turn)
	// summaryGate, when set, holds each summarization call until it is
	// closed; summarizing counts the calls that arrived.
	summaryGate chan struct{}
	summarizing atomic.Int32
	parallel    atomic.Bool // ask for two searches at once
	delay       time.Duration
	// breakAfter, when positive, makes the next answer call break its
	// connection after that many words (once: it is reset to 0).
	breakAfter atomic.Int32
	// system holds the system messages of the last chat call, joined by
	// "\n---\n".
	system atomic.Value
}

func newScriptedModel(t *testing.T) *scriptedModel {
	m := &scriptedModel{}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *scriptedModel) serve(w http.ResponseWriter, r *http.Request) {
	m.calls.Add(1)
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(body, &req)
	if len(req.Messages) > 0 && strings.HasPrefix(req.Messages[0].Content, "Summarize the conversation") {
		m.summarizing.Add(1)
		if m.summaryGate != nil {
			<-m.summaryGate
		}
		m.summary(w)
		return
	}
	hasTool := false
	var system []string
	for _, msg := range req.Messages {
		if msg.Role == "tool" {
			hasTool = true
		}
		if msg.Role == "system" {
			system = append(system, msg.Content)
		}
	}
	m.system.Store(strings.Join(system, "\n---\n"))
	stream := apitest.NewChatStream(w, "scripted")
	if !hasTool && m.stallTool.Load() {
		<-r.Context().Done()
		m.cancelled.Add(1)
		return
	}
	if !hasTool {
		stream.SearchCall("install Lore")
		if m.parallel.Load() {
			stream.Send(map[string]any{"tool_calls": []any{map[string]any{"index": 1, "id": "call_2", "type": "function",
				"function": map[string]any{"name": "search_knowledge_base", "arguments": `{"query":"upgrade"}`}}}}, nil)
		}
		stream.Send(map[string]any{}, "tool_calls")
	} else {
		broken := m.breakAfter.Swap(0)
		for i, word := range strings.Fields("Download the archive and run make run [1].") {
			if broken > 0 && i == int(broken) {
				time.Sleep(100 * time.Millisecond) // the words so far reach the run first
				panic(http.ErrAbortHandler)        // the connection breaks mid-stream
			}
			if i == 1 && m.stall.Load() {
				<-r.Context().Done()
				m.cancelled.Add(1)
				return
			}
			stream.Send(map[string]any{"content": word + " "}, nil)
			time.Sleep(m.delay)
		}
		stream.Send(map[string]any{}, "stop")
	}
	stream.End(50, 9)
}

// summary answers a summarization call with one chunk.
func (m *scriptedModel) summary(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	b, _ := json.Marshal(map[string]any{"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "scripted",
		"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": "The user asked how to install."}, "finish_reason": "stop"}}})
	fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", b)
}

func modelEnv(m *scriptedModel, extra map[string]string) map[string]string {
	env := map[string]string{"CHAT_PROVIDER": "openai", "CHAT_BASE_URL": m.srv.URL + "/v1", "CHAT_MODEL": "scripted", "CHAT_API_KEY": "k"}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

func TestScriptedModelToolCallsStreamAndUsage(t *testing.T) {
	m := newScriptedModel(t)
	a := newApp(t, "postgres", modelEnv(m, nil))
	site := a.site("Scripted")
	a.waitStatus(a.newDoc(site, "Installation", installDoc, "published"), "completed")
	_, evs := a.stream("POST", "/v1/chat/responses", map[string]any{"input": "install?", "stream": true, "filter": map[string]any{"site_id": site}})
	ts := strings.Join(types(evs), ",")
	if !strings.HasPrefix(ts, "response.created,response.tool_call.delta,response.tool_call.delta,response.tool_call.started,response.tool_call.completed,response.output_text.delta") {
		t.Fatalf("events: %s", ts)
	}
	if got := apitest.Answer(evs); got != "Download the archive and run make run [1]. " {
		t.Fatalf("answer %q", got)
	}
	var done struct {
		Response struct {
			Usage map[string]int `json:"usage"`
		} `json:"response"`
	}
	_ = json.Unmarshal([]byte(evs[len(evs)-2].Data), &done)
	if done.Response.Usage["total_tokens"] != 118 {
		t.Fatalf("usage over two model calls: %v", done.Response.Usage)
	}
	// Two model calls in all, none cancelled.
	if n, c := m.calls.Load(), m.cancelled.Load(); n != 2 || c != 0 {
		t.Fatalf("model calls %d (cancelled %d), want 2 (0)", n, c)
	}
}

func TestClientDisconnectCancelsTheModelCall(t *testing.T) {
	m := newScriptedModel(t)
	m.stall.Store(true)
	a := newApp(t, "sqlite", modelEnv(m, nil))
	// Read until the first answer word arrives, then go away: the turn is
	// stored with the answer so far.
	a.chatThenLeave(m, "output_text.delta", "role = 'assistant' AND message_seq IS NOT NULL AND content = 'Download '", 2)
}

// A client that leaves during the turn's first model call stops it, the call is not retried, and the turn is stored with
// an empty answer (no text was streamed).
func TestClientGoneDuringTheFirstModelCall(t *testing.T) {
	m := newScriptedModel(t)
	m.stallTool.Store(true)
	a := newApp(t, "postgres", modelEnv(m, nil))
	a.chatThenLeave(m, "response.created", "role = 'assistant' AND content = ''", 1)
}

// chatThenLeave starts a streamed chat, reads until the stream contains
// until, goes away, and waits for the model call to be cancelled and for one
// stored message matching stored (the session stays consistent); the model
// must have been called calls times, none after the client left.
func (a *app) chatThenLeave(m *scriptedModel, until, stored string, calls int32) {
	t := a.t
	site := a.site("Leave")
	a.waitStatus(a.newDoc(site, "Installation", installDoc, "published"), "completed")
	base := a.listen()
	ctx, cancel := context.WithCancel(context.Background())
	body := strings.NewReader(fmt.Sprintf(`{"input":"install?","stream":true,"user":"m","filter":{"site_id":%d}}`, site))
	req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/chat/responses", body)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	var got strings.Builder
	for !strings.Contains(got.String(), until) {
		n, err := res.Body.Read(buf)
		got.Write(buf[:n])
		if err != nil {
			t.Fatalf("stream ended early: %v %s", err, got.String())
		}
	}
	cancel()
	res.Body.Close()
	eventually(t, 30*time.Second, "the model call to be cancelled", func() bool { return m.cancelled.Load() == 1 })
	eventually(t, 20*time.Second, "the cancelled turn to be stored", func() bool {
		n, _ := a.d.DB.NewSelect().Model((*models.ChatMessage)(nil)).Where(stored).Count(context.Background())
		return n == 1
	})
	time.Sleep(time.Second) // a retry would have started by now
	if n := m.calls.Load(); n != calls {
		t.Fatalf("%d model calls, want %d (no retry once the client is gone)", n, calls)
	}
}

func TestStreamTimeoutEndsWithNotice(t *testing.T) {
	m := newScriptedModel(t)
	m.stall.Store(true)
	a := newApp(t, "sqlite", modelEnv(m, map[string]string{"CHAT_STREAM_TIMEOUT_SECONDS": "2"}))
	site := a.site("Timeout")
	a.waitStatus(a.newDoc(site, "Installation", installDoc, "published"), "completed")
	start := time.Now()
	_, evs := a.stream("POST", "/v1/chat/responses", map[string]any{"input": "install?", "stream": true, "filter": map[string]any{"site_id": site}})
	ts := types(evs)
	if !strings.Contains(apitest.Answer(evs), "[Response timed out, please try again]") || ts[len(ts)-2] != "response.completed" {
		t.Fatalf("events %v answer %q", ts, apitest.Answer(evs))
	}
	if el := time.Since(start); el > 15*time.Second {
		t.Fatalf("timeout took %s", el)
	}
	eventually(t, 20*time.Second, "stalled model call cancelled", func() bool { return m.cancelled.Load() == 1 })
}

func TestModelDownEndsWithErrorNotice(t *testing.T) {
	a := newApp(t, "sqlite", map[string]string{"CHAT_PROVIDER": "openai", "CHAT_BASE_URL": "http://127.0.0.1:1/v1", "CHAT_MODEL": "m"})
	site := a.site("Down")
	_, evs := a.stream("POST", "/v1/chat/responses", map[string]any{"input": "hello", "stream": true, "user": "u", "filter": map[string]any{"site_id": site}})
	ts := types(evs)
	if !strings.Contains(apitest.Answer(evs), "[System Error:") || ts[len(ts)-2] != "response.completed" || ts[len(ts)-1] != "[DONE]" {
		t.Fatalf("events %v answer %q", ts, apitest.Answer(evs))
	}
	eventually(t, 20*time.Second, "turn stored", func() bool {
		n, _ := a.d.DB.NewSelect().Model((*models.ChatMessage)(nil)).Count(context.Background())
		return n == 2 // user + assistant notice
	})
}

func TestParallelToolCallsAndPipelineTrace(t *testing.T) {
	m := newScriptedModel(t)
	m.parallel.Store(true)
	a := newApp(t, "sqlite", modelEnv(m, nil))
	var site struct {
		ID int64 `json:"id"`
	}
	a.admin("POST", "/admin/api/v1/sites", map[string]any{"name": "Traced", "show_pipeline_trace": true}, &site)
	a.waitStatus(a.newDoc(site.ID, "Installation", installDoc, "published"), "completed")
	_, evs := a.stream("POST", "/v1/chat/responses", map[string]any{"input": "install and upgrade?", "stream": true, "filter": map[string]any{"site_id": site.ID}})
	completed := map[string]bool{}
	traced := false
	for _, e := range evs {
		switch e.Type {
		case "response.tool_call.completed":
			var c struct {
				ID      string `json:"tool_call_id"`
				Elapsed *int64 `json:"elapsed_ms"`
			}
			_ = json.Unmarshal([]byte(e.Data), &c)
			if c.Elapsed == nil {
				t.Fatalf("trace on: tool_call.completed without elapsed_ms: %s", e.Data)
			}
			completed[c.ID] = true
		case "response.pipeline_trace":
			traced = strings.Contains(e.Data, `"first_token"`) && strings.Contains(e.Data, `"ttfb"`) && strings.Contains(e.Data, `"total"`)
		}
	}
	if !completed["call_1"] || !completed["call_2"] || !traced {
		t.Fatalf("completed %v traced %v: %v", completed, traced, types(evs))
	}
	ts := types(evs)
	if ts[len(ts)-3] != "response.pipeline_trace" || ts[len(ts)-2] != "response.completed" {
		t.Fatalf("order: %v", ts)
	}
	// Without show_pipeline_trace there is no trace event and no elapsed_ms.
	plain := a.site("Plain")
	a.waitStatus(a.newDoc(plain, "Installation", installDoc, "published"), "completed")
	_, evs = a.stream("POST", "/v1/chat/responses", map[string]any{"input": "install?", "stream": true, "filter": map[string]any{"site_id": plain}})
	for _, e := range evs {
		if e.Type == "response.pipeline_trace" || strings.Contains(e.Data, "elapsed_ms") {
			t.Fatalf("trace leaked without show_pipeline_trace: %s", e.Data)
		}
	}
}

// A model call that runs as a local activity for longer than the workflow
// task timeout (10 s) keeps its workflow task alive: the answer streams to
// the end and the model is called exactly once per step.
func TestLongLocalModelCallOutlastsTheWorkflowTaskTimeout(t *testing.T) {
	m := newScriptedModel(t)
	m.delay = 1600 * time.Millisecond // 8 words: about 13 s
	a := newApp(t, "sqlite", modelEnv(m, nil))
	site := a.site("Long")
	a.waitStatus(a.newDoc(site, "Installation", installDoc, "published"), "completed")
	_, evs := a.stream("POST", "/v1/chat/responses", map[string]any{"input": "install?", "stream": true, "user": "m",
		"filter": map[string]any{"site_id": site}})
	ts := types(evs)
	if got := strings.TrimSpace(apitest.Answer(evs)); got != "Download the archive and run make run [1]." || ts[len(ts)-1] != "[DONE]" {
		t.Fatalf("answer %q events %v", got, ts)
	}
	if n := m.calls.Load(); n != 2 {
		t.Fatalf("model calls %d, want 2 (tool call, answer)", n)
	}
	eventually(t, 20*time.Second, "the turn stored once", func() bool {
		n, _ := a.d.DB.NewSelect().Model((*models.ChatMessage)(nil)).Where("role = 'assistant' AND message_seq IS NOT NULL").Count(context.Background())
		return n == 1
	})
}

// Answers that are not streamed (stream=false, non-stream chat completions)
// come back once the run's last event exists: storing the turn and
// summarizing the thread happen after, without delaying them. Here every
// summarization call is held until both answers are in.
func TestNonStreamAnswersDoNotWaitForSummarization(t *testing.T) {
	m := newScriptedModel(t)
	m.summaryGate = make(chan struct{})
	a := newApp(t, "postgres", modelEnv(m, map[string]string{"AGENT_SUMMARY_TRIGGER_MSG_COUNT": "2", "AGENT_SUMMARY_KEEP_LAST_N": "1"}))
	released := false
	defer func() {
		if !released {
			close(m.summaryGate)
		}
	}()
	site := a.site("NoWait")
	a.waitStatus(a.newDoc(site, "Installation", installDoc, "published"), "completed")
	base := a.listen()
	// A reader that waited for the held summarization would get its answer
	// only when the workflow task timeout (10 s) forces the run's open task
	// to complete: the client gives up before that.
	c := &http.Client{Timeout: 8 * time.Second}
	post := func(path, body string) map[string]any {
		res, err := c.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatalf("POST %s (waiting for the summary?): %v", path, err)
		}
		defer res.Body.Close()
		var out map[string]any
		raw, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 || json.Unmarshal(raw, &out) != nil {
			t.Fatalf("POST %s: %d %s", path, res.StatusCode, raw)
		}
		return out
	}
	resp := post("/v1/chat/responses", fmt.Sprintf(`{"input":"install?","stream":false,"user":"u","filter":{"site_id":%d}}`, site))
	if b, _ := json.Marshal(resp["output"]); !strings.Contains(string(b), "Download the archive") || resp["usage"] == nil {
		t.Fatalf("stream=false answer: %v", resp)
	}
	comp := post("/v1/chat/completions", fmt.Sprintf(`{"model":"scripted","messages":[{"role":"user","content":"install?"}],"filter":{"site_id":%d}}`, site))
	if b, _ := json.Marshal(comp["choices"]); !strings.Contains(string(b), "Download the archive") {
		t.Fatalf("chat completion: %v", comp)
	}
	// Both turns are long enough to summarize; the calls wait on the gate.
	eventually(t, 20*time.Second, "both summarization calls", func() bool { return m.summarizing.Load() == 2 })
	released = true
	close(m.summaryGate)
	eventually(t, 20*time.Second, "the summaries to be stored", func() bool {
		n, _ := a.d.DB.NewSelect().Table("chat_sessions").Where("summary <> ''").Count(context.Background())
		return n == 2
	})
}

// A second reader that attaches to a turn while it is still streaming (GET
// with Last-Event-ID, or the same POST with previous_response_id and
// Last-Event-ID) gets the rest of the turn exactly once: the same events,
// with the same ids, as the first reader got after that id.
func TestReattachToARunningTurn(t *testing.T) {
	m, a, site, rd := slowChat(t, "postgres", "Reattach")
	// The first reader reads up to its second answer piece.
	var first []sseEvent
	deltas := 0
	for deltas < 2 {
		ev, ok := nextSSE(rd)
		if !ok {
			t.Fatalf("stream ended early: %v", types(first))
		}
		first = append(first, ev)
		if ev.Type == "response.output_text.delta" {
			deltas++
		}
	}
	var created struct {
		Response struct {
			ID string `json:"id"`
		} `json:"response"`
	}
	_ = json.Unmarshal([]byte(first[0].Data), &created)
	thread, after := created.Response.ID, first[len(first)-1].ID
	type got struct {
		name string
		evs  []sseEvent
	}
	results := make(chan got, 2)
	go func() {
		_, evs := a.stream("GET", "/v1/chat/responses/"+thread+"?member_id=m", nil, "Last-Event-ID", strconv.Itoa(after))
		results <- got{"GET", evs}
	}()
	go func() {
		_, evs := a.stream("POST", "/v1/chat/responses", map[string]any{"input": "install?", "stream": true, "user": "m",
			"previous_response_id": thread, "filter": map[string]any{"site_id": site}}, "Last-Event-ID", strconv.Itoa(after))
		results <- got{"POST", evs}
	}()
	// The first reader goes on to the end.
	for {
		ev, ok := nextSSE(rd)
		if !ok {
			break
		}
		first = append(first, ev)
	}
	if n := len(first); n < 3 || first[n-1].Type != "[DONE]" || first[n-2].Type != "response.completed" {
		t.Fatalf("first reader: %v", types(first))
	}
	var want []string
	for _, ev := range first {
		if ev.ID > after || ev.Type == "[DONE]" {
			want = append(want, fmt.Sprintf("%d %s", ev.ID, ev.Data))
		}
	}
	for range 2 {
		r := <-results
		var gotLines []string
		for _, ev := range r.evs {
			gotLines = append(gotLines, fmt.Sprintf("%d %s", ev.ID, ev.Data))
		}
		if strings.Join(gotLines, "\n") != strings.Join(want, "\n") {
			t.Fatalf("%s after %d:\n%s\nwant (what the first reader got):\n%s", r.name, after, strings.Join(gotLines, "\n"), strings.Join(want, "\n"))
		}
	}
	if apitest.Answer(first) != "Download the archive and run make run [1]. " || m.calls.Load() != 2 {
		t.Fatalf("answer %q, %d model calls", apitest.Answer(first), m.calls.Load())
	}
}

// nextSSE reads one event of an SSE stream (false at its end).
func nextSSE(rd *bufio.Reader) (sseEvent, bool) {
	ev, err := apitest.ReadEvent(rd)
	return ev, err == nil
}

// With the worker in another process (here: an API without a worker of its
// own, LORE_RUN_WORKER=false, beside a worker that is not its), the model
// calls are scheduled activities that signal their pieces to the run, and
// the API reads only the run's log: the same events, the stream timeout by
// the run's timer, a client that leaves cancels the run through Temporal
// and the model call through its heartbeat.
func TestChatWithTheWorkerElsewhere(t *testing.T) {
	t.Run("answer", func(t *testing.T) {
		m := newScriptedModel(t)
		a := newApp(t, "postgres", modelEnv(m, map[string]string{"LORE_RUN_WORKER": "false"}))
		site := a.site("Elsewhere")
		a.waitStatus(a.newDoc(site, "Installation", installDoc, "published"), "completed")
		_, evs := a.stream("POST", "/v1/chat/responses", map[string]any{"input": "install?", "stream": true, "filter": map[string]any{"site_id": site}})
		ts := strings.Join(types(evs), ",")
		if !strings.HasPrefix(ts, "response.created,response.tool_call.delta,response.tool_call.delta,response.tool_call.started,response.tool_call.completed,response.output_text.delta") ||
			!strings.HasSuffix(ts, "response.knowledge_sources,response.completed,[DONE]") {
			t.Fatalf("events: %s", ts)
		}
		for i, ev := range evs[:len(evs)-1] {
			if ev.ID != i+1 {
				t.Fatalf("event %d has id %d", i, ev.ID)
			}
		}
		if got := apitest.Answer(evs); got != "Download the archive and run make run [1]. " || m.calls.Load() != 2 {
			t.Fatalf("answer %q, %d model calls", got, m.calls.Load())
		}
	})
	t.Run("timeout", func(t *testing.T) {
		m := newScriptedModel(t)
		m.stall.Store(true)
		a := newApp(t, "sqlite", modelEnv(m, map[string]string{"LORE_RUN_WORKER": "false", "CHAT_STREAM_TIMEOUT_SECONDS": "2"}))
		site := a.site("Slow")
		a.waitStatus(a.newDoc(site, "Installation", installDoc, "published"), "completed")
		_, evs := a.stream("POST", "/v1/chat/responses", map[string]any{"input": "install?", "stream": true, "filter": map[string]any{"site_id": site}})
		if ts := types(evs); !strings.HasSuffix(apitest.Answer(evs), workflows.TimeoutNotice) || ts[len(ts)-2] != "response.completed" {
			t.Fatalf("events %v answer %q", ts, apitest.Answer(evs))
		}
		eventually(t, 20*time.Second, "the stalled model call to be cancelled", func() bool { return m.cancelled.Load() == 1 })
	})
	// A model call that breaks after streaming part of its answer is not
	// retried: a retry would stream the answer again after the part the
	// reader already has. The reader gets the part once, then the error
	// notice, and the stored answer is what it got.
	t.Run("broken mid-stream", func(t *testing.T) {
		m := newScriptedModel(t)
		m.breakAfter.Store(2)
		a := newApp(t, "sqlite", modelEnv(m, map[string]string{"LORE_RUN_WORKER": "false"}))
		site := a.site("Broken")
		a.waitStatus(a.newDoc(site, "Installation", installDoc, "published"), "completed")
		_, evs := a.stream("POST", "/v1/chat/responses", map[string]any{"input": "install?", "stream": true, "filter": map[string]any{"site_id": site}})
		got := apitest.Answer(evs)
		if !strings.HasPrefix(got, "Download the "+workflows.ErrorNoticePrefix) || strings.Count(got, "Download") != 1 {
			t.Fatalf("answer %q (events %v)", got, types(evs))
		}
		if ts := types(evs); ts[len(ts)-2] != "response.completed" {
			t.Fatalf("events %v", ts)
		}
		eventually(t, 20*time.Second, "the turn to be stored as streamed", func() bool {
			n, _ := a.d.DB.NewSelect().Model((*models.ChatMessage)(nil)).
				Where("role = 'assistant' AND message_seq IS NOT NULL AND content = ?", got).Count(context.Background())
			return n == 1
		})
		time.Sleep(time.Second) // a retry would have started by now
		if n := m.calls.Load(); n != 2 {
			t.Fatalf("%d model calls, want 2 (no retry once part of the answer was streamed)", n)
		}
	})
	t.Run("client gone", func(t *testing.T) {
		m := newScriptedModel(t)
		m.stall.Store(true)
		a := newApp(t, "sqlite", modelEnv(m, map[string]string{"LORE_RUN_WORKER": "false"}))
		a.chatThenLeave(m, "output_text.delta", "role = 'assistant' AND message_seq IS NOT NULL AND content = 'Download '", 2)
	})
}

// A reader of the hub whose hub stops making sense (here: an event with a
// sequence number past a gap, as when events were published elsewhere)
// switches to the run's log and gets the rest from there: every event once,
// in order, and nothing the log does not have.
func TestHubReaderSwitchesToTheLogOnAGap(t *testing.T) {
	_, a, _, rd := slowChat(t, "sqlite", "Gap")
	var evs []sseEvent
	for len(evs) == 0 || evs[len(evs)-1].Type != "response.output_text.delta" {
		ev, ok := nextSSE(rd)
		if !ok {
			t.Fatalf("stream ended early: %v", types(evs))
		}
		evs = append(evs, ev)
	}
	var sess models.ChatSession
	if err := a.d.DB.NewSelect().Model(&sess).Where("thread_id = ?", createdID(t, evs[0])).Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	wfID := workflows.ChatRunID(sess.ThreadID, sess.ID, 1)
	if !a.d.Hub.Local(wfID) {
		t.Fatal("the run does not work in this process: the reader would not read the hub")
	}
	a.d.Hub.Publish(wfID, streamhub.Event{Origin: "elsewhere/1/0", Seq: 1000, Data: []byte(`{"type":"response.output_text.delta","delta":"BOGUS"}`)})
	for {
		ev, ok := nextSSE(rd)
		if !ok {
			break
		}
		evs = append(evs, ev)
	}
	ts := types(evs)
	if ts[len(ts)-1] != "[DONE]" || ts[len(ts)-2] != "response.completed" {
		t.Fatalf("events %v", ts)
	}
	for i, ev := range evs[:len(evs)-1] {
		if ev.ID != i+1 {
			t.Fatalf("event %d has id %d (events %v)", i, ev.ID, ts)
		}
	}
	if got := apitest.Answer(evs); got != "Download the archive and run make run [1]. " {
		t.Fatalf("answer %q", got)
	}
}

// slowChat starts an app of the dialect whose model streams its answer for
// about 1.2 s, and in it a streamed chat of member m in a new site (one
// published document) over a real port.
func slowChat(t *testing.T, dialect, siteName string) (*scriptedModel, *app, int64, *bufio.Reader) {
	m := newScriptedModel(t)
	m.delay = 150 * time.Millisecond
	a := newApp(t, dialect, modelEnv(m, nil))
	site := a.site(siteName)
	a.waitStatus(a.newDoc(site, "Installation", installDoc, "published"), "completed")
	base := a.listen()
	body := fmt.Sprintf(`{"input":"install?","stream":true,"user":"m","filter":{"site_id":%d}}`, site)
	res, err := http.Post(base+"/v1/chat/responses", "application/json", strings.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	a.t.Cleanup(func() { res.Body.Close() })
	a.keepCookie(res) // the thread's owner secret, for the readers that re-attach
	return m, a, site, bufio.NewReader(res.Body)
}
