package oai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/llm"
)

// fakeServer is an OpenAI-compatible stand-in for the paid API: it records
// each request body and answers /chat/completions with the configured SSE
// chunks.
type fakeServer struct {
	*httptest.Server
	mu       sync.Mutex
	bodies   []map[string]any
	requests atomic.Int32
}

func newFakeServer(t *testing.T, handler func(w http.ResponseWriter, r *http.Request)) *fakeServer {
	t.Helper()
	fs := &fakeServer{}
	fs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fs.requests.Add(1)
		if r.URL.Path != "/v1/chat/completions" {
			http.Error(w, "unexpected path "+r.URL.Path, http.StatusNotFound)
			return
		}
		var body map[string]any
		raw, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(raw, &body); err != nil {
			http.Error(w, "bad json", http.StatusBadRequest)
			return
		}
		body["_authorization"] = r.Header.Get("Authorization")
		fs.mu.Lock()
		fs.bodies = append(fs.bodies, body)
		fs.mu.Unlock()
		handler(w, r)
	}))
	t.Cleanup(fs.Close)
	return fs
}

func (fs *fakeServer) lastBody(t *testing.T) map[string]any {
	t.Helper()
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if len(fs.bodies) == 0 {
		t.Fatal("server received no request")
	}
	return fs.bodies[len(fs.bodies)-1]
}

// sse writes the chunks as server-sent events followed by [DONE].
func sse(chunks ...string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, c := range chunks {
			fmt.Fprintf(w, "data: %s\n\n", c)
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}
}

func chunk(delta string, finish string) string {
	fr := "null"
	if finish != "" {
		fr = `"` + finish + `"`
	}
	return `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + fr + `}],"usage":null}`
}

const usageChunk = `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":42,"completion_tokens":7,"total_tokens":49}}`

func TestGenerateStreamsTextInOrder(t *testing.T) {
	fs := newFakeServer(t, sse(
		chunk(`{"role":"assistant","content":""}`, ""),
		chunk(`{"content":"Hello"}`, ""),
		chunk(`{"content":", "}`, ""),
		chunk(`{"content":"world."}`, ""),
		chunk(`{}`, "stop"),
		usageChunk,
	))
	m := New(Config{BaseURL: fs.URL + "/v1", APIKey: "sk-test", Model: "default-model"})
	temp := 0.2
	var deltas []string
	res, err := m.Generate(context.Background(), llm.Request{
		Model: "override-model",
		Messages: []llm.Message{
			{Role: "system", Content: "be brief"},
			{Role: "user", Content: "hi"},
		},
		Temperature: &temp,
	}, func(d llm.Delta) {
		if d.ToolCall != nil {
			t.Errorf("unexpected tool call delta %+v", d.ToolCall)
		}
		deltas = append(deltas, d.Text)
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(deltas, "|"); got != "Hello|, |world." {
		t.Errorf("deltas = %q", got)
	}
	if res.Message.Role != "assistant" || res.Message.Content != "Hello, world." {
		t.Errorf("message = %+v", res.Message)
	}
	if len(res.Message.ToolCalls) != 0 {
		t.Errorf("tool calls = %+v", res.Message.ToolCalls)
	}
	if res.FinishReason != "stop" {
		t.Errorf("finish = %q", res.FinishReason)
	}
	if res.Usage != (llm.Usage{InputTokens: 42, OutputTokens: 7}) {
		t.Errorf("usage = %+v", res.Usage)
	}

	body := fs.lastBody(t)
	if body["model"] != "override-model" {
		t.Errorf("model = %v, want the request override", body["model"])
	}
	if body["stream"] != true {
		t.Errorf("stream = %v", body["stream"])
	}
	so, _ := body["stream_options"].(map[string]any)
	if so["include_usage"] != true {
		t.Errorf("stream_options = %v", body["stream_options"])
	}
	if body["temperature"] != 0.2 {
		t.Errorf("temperature = %v", body["temperature"])
	}
	if _, ok := body["tools"]; ok {
		t.Errorf("tools sent although none offered: %v", body["tools"])
	}
	if body["_authorization"] != "Bearer sk-test" {
		t.Errorf("authorization = %v", body["_authorization"])
	}
	msgs, _ := body["messages"].([]any)
	if len(msgs) != 2 {
		t.Fatalf("messages = %v", body["messages"])
	}
	if m0 := msgs[0].(map[string]any); m0["role"] != "system" || m0["content"] != "be brief" {
		t.Errorf("messages[0] = %v", m0)
	}
}

func TestGenerateUsesConfiguredModelAndNoKey(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-env-must-not-leak")
	fs := newFakeServer(t, sse(chunk(`{"content":"ok"}`, "stop")))
	m := New(Config{BaseURL: fs.URL + "/v1", Model: "default-model"})
	res, err := m.Generate(context.Background(), llm.Request{
		Messages: []llm.Message{{Role: "user", Content: "hi"}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Message.Content != "ok" {
		t.Errorf("content = %q", res.Message.Content)
	}
	body := fs.lastBody(t)
	if body["model"] != "default-model" {
		t.Errorf("model = %v", body["model"])
	}
	if body["_authorization"] != "" {
		t.Errorf("authorization = %q, want none", body["_authorization"])
	}
}

func TestGenerateAccumulatesParallelToolCalls(t *testing.T) {
	fs := newFakeServer(t, sse(
		chunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"search_knowledge_base","arguments":""}}]}`, ""),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"query\":"}}]}`, ""),
		chunk(`{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"search_knowledge_base","arguments":"{\"query\""}}]}`, ""),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"install\"}"}}]}`, ""),
		chunk(`{"tool_calls":[{"index":1,"function":{"arguments":":\"upgrade\"}"}}]}`, ""),
		chunk(`{}`, "tool_calls"),
		usageChunk,
	))
	m := New(Config{BaseURL: fs.URL + "/v1", Model: "m"})
	var pieces []llm.ToolCallDelta
	res, err := m.Generate(context.Background(), llm.Request{
		Messages: []llm.Message{
			{Role: "user", Content: "how to install and upgrade?"},
			{Role: "assistant", ToolCalls: []llm.ToolCall{{ID: "old", Name: llm.SearchToolName, Arguments: `{"query":"x"}`}}},
			{Role: "tool", ToolCallID: "old", Content: "No relevant documents found."},
		},
		Tools: []llm.ToolDef{{
			Name:        llm.SearchToolName,
			Description: "Search the docs",
			Parameters: map[string]any{
				"type":       "object",
				"properties": map[string]any{"query": map[string]any{"type": "string"}},
				"required":   []string{"query"},
			},
		}},
	}, func(d llm.Delta) {
		if d.ToolCall == nil {
			t.Errorf("unexpected text delta %q", d.Text)
			return
		}
		pieces = append(pieces, *d.ToolCall)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []llm.ToolCall{
		{ID: "call_a", Name: llm.SearchToolName, Arguments: `{"query":"install"}`},
		{ID: "call_b", Name: llm.SearchToolName, Arguments: `{"query":"upgrade"}`},
	}
	if len(res.Message.ToolCalls) != 2 || res.Message.ToolCalls[0] != want[0] || res.Message.ToolCalls[1] != want[1] {
		t.Errorf("tool calls = %+v, want %+v", res.Message.ToolCalls, want)
	}
	if res.FinishReason != "tool_calls" {
		t.Errorf("finish = %q", res.FinishReason)
	}
	if len(pieces) != 5 {
		t.Fatalf("got %d tool-call deltas, want 5: %+v", len(pieces), pieces)
	}
	if pieces[0].Index != 0 || pieces[0].ID != "call_a" || pieces[0].Name != llm.SearchToolName {
		t.Errorf("first piece = %+v", pieces[0])
	}
	if pieces[2].Index != 1 || pieces[2].ID != "call_b" || pieces[2].Arguments != `{"query"` {
		t.Errorf("third piece = %+v", pieces[2])
	}
	if pieces[4].Index != 1 || pieces[4].Arguments != `:"upgrade"}` {
		t.Errorf("last piece = %+v", pieces[4])
	}

	body := fs.lastBody(t)
	tools, _ := body["tools"].([]any)
	if len(tools) != 1 {
		t.Fatalf("tools = %v", body["tools"])
	}
	tool := tools[0].(map[string]any)
	fn, _ := tool["function"].(map[string]any)
	if tool["type"] != "function" || fn["name"] != llm.SearchToolName || fn["description"] != "Search the docs" {
		t.Errorf("tool = %v", tool)
	}
	if params, _ := fn["parameters"].(map[string]any); params["type"] != "object" {
		t.Errorf("parameters = %v", fn["parameters"])
	}
	msgs, _ := body["messages"].([]any)
	if len(msgs) != 3 {
		t.Fatalf("messages = %v", body["messages"])
	}
	asst := msgs[1].(map[string]any)
	if _, hasContent := asst["content"]; hasContent {
		t.Errorf("assistant tool-call message should omit content: %v", asst)
	}
	calls, _ := asst["tool_calls"].([]any)
	if len(calls) != 1 || calls[0].(map[string]any)["id"] != "old" {
		t.Errorf("assistant tool_calls = %v", asst["tool_calls"])
	}
	toolMsg := msgs[2].(map[string]any)
	if toolMsg["role"] != "tool" || toolMsg["tool_call_id"] != "old" || toolMsg["content"] != "No relevant documents found." {
		t.Errorf("tool message = %v", toolMsg)
	}
}

func TestGenerateCancelMidStream(t *testing.T) {
	released := make(chan struct{})
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\n\n", chunk(`{"content":"partial"}`, ""))
		w.(http.Flusher).Flush()
		select { // stall until the client goes away
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
		close(released)
	})
	m := New(Config{BaseURL: fs.URL + "/v1", Model: "m"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var cancelledAt atomic.Int64 // unix nanoseconds
	type outcome struct {
		res llm.Result
		err error
		at  time.Time
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := m.Generate(ctx, llm.Request{Messages: []llm.Message{{Role: "user", Content: "hi"}}}, func(d llm.Delta) {
			if d.Text == "partial" {
				go func() {
					time.Sleep(20 * time.Millisecond)
					cancelledAt.Store(time.Now().UnixNano())
					cancel()
				}()
			}
		})
		done <- outcome{res, err, time.Now()}
	}()
	select {
	case o := <-done:
		if !errors.Is(o.err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", o.err)
		}
		if errors.Is(o.err, llm.ErrPermanent) {
			t.Errorf("cancellation must not be permanent: %v", o.err)
		}
		if took := o.at.Sub(time.Unix(0, cancelledAt.Load())); took > 150*time.Millisecond {
			t.Errorf("Generate returned %v after cancel, want ~immediately", took)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Generate did not return after cancellation")
	}
	select {
	case <-released:
	case <-time.After(2 * time.Second):
		t.Error("server never saw the client disconnect")
	}
}

func TestGenerateErrorClassification(t *testing.T) {
	cases := []struct {
		name      string
		status    int
		body      string
		permanent bool
	}{
		{"401 openai body", 401, `{"error":{"message":"bad key","type":"invalid_request_error","code":"invalid_api_key","param":null}}`, true},
		{"401 plain text", 401, `Unauthorized`, true},
		{"400 openai body", 400, `{"error":{"message":"bad model","type":"invalid_request_error","code":null,"param":null}}`, true},
		{"404 string error", 404, `{"error":"model \"m\" not found"}`, true},
		{"408", 408, `{"error":{"message":"timeout","type":"x","code":null,"param":null}}`, false},
		{"429", 429, `{"error":{"message":"slow down","type":"x","code":null,"param":null}}`, false},
		{"500 openai body", 500, `{"error":{"message":"boom","type":"server_error","code":null,"param":null}}`, false},
		{"502 string error", 502, `{"error":"bad gateway"}`, false},
		{"503 plain text", 503, `upstream unavailable`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request) {
				if strings.HasPrefix(tc.body, "{") {
					w.Header().Set("Content-Type", "application/json")
				}
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			})
			m := New(Config{BaseURL: fs.URL + "/v1", Model: "m"})
			called := false
			_, err := m.Generate(context.Background(), llm.Request{Messages: []llm.Message{{Role: "user", Content: "hi"}}}, func(llm.Delta) { called = true })
			if err == nil {
				t.Fatal("expected an error")
			}
			if got := errors.Is(err, llm.ErrPermanent); got != tc.permanent {
				t.Errorf("errors.Is(ErrPermanent) = %v, want %v (err: %v)", got, tc.permanent, err)
			}
			if !strings.Contains(err.Error(), fmt.Sprint(tc.status)) {
				t.Errorf("error %q does not mention status %d", err, tc.status)
			}
			if n := fs.requests.Load(); n != 1 {
				t.Errorf("server saw %d requests, want 1 (SDK retries must be off)", n)
			}
			if called {
				t.Error("onDelta called on an error response")
			}
		})
	}
}

func TestGenerateStreamErrorEventIsRetryable(t *testing.T) {
	fs := newFakeServer(t, sse(
		chunk(`{"content":"par"}`, ""),
		`{"error":{"message":"overloaded","type":"server_error"}}`,
	))
	m := New(Config{BaseURL: fs.URL + "/v1", Model: "m"})
	_, err := m.Generate(context.Background(), llm.Request{Messages: []llm.Message{{Role: "user", Content: "hi"}}}, nil)
	if err == nil || !strings.Contains(err.Error(), "overloaded") {
		t.Fatalf("err = %v, want the streamed error", err)
	}
	if errors.Is(err, llm.ErrPermanent) {
		t.Errorf("mid-stream error must be retryable: %v", err)
	}
}

func TestGenerateRejectsBadRequestsPermanently(t *testing.T) {
	fs := newFakeServer(t, sse(chunk(`{"content":"ok"}`, "stop")))
	m := New(Config{BaseURL: fs.URL + "/v1"})
	_, err := m.Generate(context.Background(), llm.Request{Messages: []llm.Message{{Role: "user", Content: "hi"}}}, nil)
	if !errors.Is(err, llm.ErrPermanent) {
		t.Errorf("no model: err = %v, want ErrPermanent", err)
	}
	_, err = New(Config{BaseURL: fs.URL + "/v1", Model: "m"}).Generate(context.Background(), llm.Request{Messages: []llm.Message{{Role: "wizard", Content: "hi"}}}, nil)
	if !errors.Is(err, llm.ErrPermanent) {
		t.Errorf("unknown role: err = %v, want ErrPermanent", err)
	}
	if n := fs.requests.Load(); n != 0 {
		t.Errorf("invalid requests reached the server %d times", n)
	}
}

// Servers differ in how they write the event stream: CRLF line ends,
// "data:" without a space, comments (keep-alives) and event names between
// chunks all must reach the same answer.
func TestGenerateReadsStreamVariants(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, ": keep-alive\r\n\r\n")
		io.WriteString(w, "event: message\r\ndata:"+chunk(`{"content":"Hel"}`, "")+"\r\n\r\n")
		io.WriteString(w, "data: "+chunk(`{"content":"lo"}`, "stop")+"\n\n")
		io.WriteString(w, "data: [DONE]\n\n")
		io.WriteString(w, "data: "+chunk(`{"content":" after done"}`, "")+"\n\n")
	})
	res, err := New(Config{BaseURL: fs.URL + "/v1/", Model: "m"}).Generate(context.Background(),
		llm.Request{Messages: []llm.Message{{Role: "user", Content: "hi"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Message.Content != "Hello" || res.FinishReason != "stop" {
		t.Errorf("result = %+v, want Hello / stop", res)
	}
}
