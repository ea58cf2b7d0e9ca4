package oai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/packages/param"

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

// openAIParams is the request as openai-go's own types build it, the
// reference requestBody is held to.
func openAIParams(model string, req llm.Request) openai.ChatCompletionNewParams {
	if req.Model != "" {
		model = req.Model
	}
	params := openai.ChatCompletionNewParams{
		Model:         model,
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)},
	}
	if req.Temperature != nil {
		params.Temperature = param.NewOpt(*req.Temperature)
	}
	if req.MaxTokens > 0 {
		params.MaxTokens = param.NewOpt(int64(req.MaxTokens))
	}
	for _, msg := range req.Messages {
		var p openai.ChatCompletionMessageParamUnion
		switch msg.Role {
		case llm.RoleSystem:
			p = openai.SystemMessage(msg.Content)
		case llm.RoleUser:
			p = openai.UserMessage(msg.Content)
		case llm.RoleTool:
			p = openai.ToolMessage(msg.Content, msg.ToolCallID)
		case llm.RoleAssistant:
			var a openai.ChatCompletionAssistantMessageParam
			if msg.Content != "" || len(msg.ToolCalls) == 0 {
				a.Content.OfString = param.NewOpt(msg.Content)
			}
			for _, tc := range msg.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallParam{
					ID:       tc.ID,
					Function: openai.ChatCompletionMessageToolCallFunctionParam{Name: tc.Name, Arguments: tc.Arguments},
				})
			}
			p = openai.ChatCompletionMessageParamUnion{OfAssistant: &a}
		}
		params.Messages = append(params.Messages, p)
	}
	for _, t := range req.Tools {
		fn := openai.FunctionDefinitionParam{Name: t.Name}
		if t.Description != "" {
			fn.Description = param.NewOpt(t.Description)
		}
		if t.Parameters != nil {
			fn.Parameters = openai.FunctionParameters(t.Parameters)
		}
		params.Tools = append(params.Tools, openai.ChatCompletionToolParam{Function: fn})
	}
	return params
}

// The body Generate sends is byte for byte the one openai-go's
// Chat.Completions.NewStreaming sends for the same request.
func TestRequestBodyMatchesOpenAIGo(t *testing.T) {
	var got [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, b)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	m := New(Config{BaseURL: srv.URL, Model: "default"})
	zero, temp := 0.0, 0.7
	long := strings.Repeat("passage text <b>&amp;</b> \"quoted\" \\ \t\n", 200)
	reqs := []llm.Request{
		{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}},
		{Model: "override", Temperature: &temp, MaxTokens: 64, Purpose: llm.PurposeSummarize, Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "sys <&> \u2028\u2029 é 日本 \x00 \x7f"},
			{Role: llm.RoleUser, Content: "bad utf-8 \xff\xfe here"},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_1", Name: llm.SearchToolName, Arguments: `{"query":"x"}`}}},
			{Role: llm.RoleTool, ToolCallID: "call_1", Content: long},
			{Role: llm.RoleAssistant, Content: "both", ToolCalls: []llm.ToolCall{{ID: "a"}, {Name: "n", Arguments: "{"}}},
			{Role: llm.RoleAssistant},
			{Role: llm.RoleTool},
			{Role: llm.RoleSystem},
			{Role: llm.RoleUser, Content: "again"},
		}, Tools: []llm.ToolDef{
			{Name: llm.SearchToolName, Description: "Search <docs>", Parameters: map[string]any{
				"type":       "object",
				"properties": map[string]any{"query": map[string]any{"type": "string", "description": "a & b"}},
				"required":   []string{"query"},
			}},
			{Name: "bare"},
			{Name: "empty", Parameters: map[string]any{}},
		}},
		{Temperature: &zero, MaxTokens: -1, Messages: []llm.Message{{Role: llm.RoleUser, Content: ""}}},
		{Messages: nil},
	}
	for i, req := range reqs {
		got = nil
		if _, err := m.Generate(context.Background(), req, nil); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		stream := m.client.Chat.Completions.NewStreaming(context.Background(), openAIParams(m.model, req))
		for stream.Next() {
		}
		if err := stream.Err(); err != nil {
			t.Fatalf("request %d through openai-go: %v", i, err)
		}
		stream.Close()
		if len(got) != 2 {
			t.Fatalf("request %d: server saw %d requests", i, len(got))
		}
		if !bytes.Equal(got[0], got[1]) {
			t.Errorf("request %d: body\n%s\nopenai-go sends\n%s", i, got[0], got[1])
		}
	}
}

// decodeOpenAI is what Generate read of a chunk when it decoded chunks as
// openai-go's ChatCompletionChunk.
func decodeOpenAI(data []byte) (streamChunk, error) {
	var ch openai.ChatCompletionChunk
	if err := json.Unmarshal(data, &ch); err != nil {
		return streamChunk{}, err
	}
	out := streamChunk{hasUsage: ch.JSON.Usage.Valid()}
	if out.hasUsage {
		out.usage = llm.Usage{InputTokens: int(ch.Usage.PromptTokens), OutputTokens: int(ch.Usage.CompletionTokens)}
	}
	for _, c := range ch.Choices {
		sc := streamChoice{index: c.Index, finish: c.FinishReason, content: c.Delta.Content}
		for _, tc := range c.Delta.ToolCalls {
			sc.toolCalls = append(sc.toolCalls, streamToolCall{index: tc.Index, id: tc.ID, name: tc.Function.Name, arguments: tc.Function.Arguments})
		}
		out.choices = append(out.choices, sc)
	}
	return out, nil
}

func decodeLore(data []byte) (streamChunk, error) {
	var ch streamChunk
	err := json.Unmarshal(data, &ch)
	return ch, err
}

// equalChunks compares decoded chunks, an empty list of choices or tool
// calls equal to none (Generate cannot tell them apart).
func equalChunks(a, b streamChunk) bool {
	norm := func(c streamChunk) streamChunk {
		if len(c.choices) == 0 {
			c.choices = nil
		}
		for i := range c.choices {
			if len(c.choices[i].toolCalls) == 0 {
				c.choices[i].toolCalls = nil
			}
		}
		return c
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

var chunkSeeds = []string{
	`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"},"finish_reason":null}],"usage":null}`,
	`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":42,"completion_tokens":7,"total_tokens":49}}`,
	`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"search_knowledge_base","arguments":"{\"query\""}}]},"finish_reason":null,"logprobs":null}],"system_fingerprint":"fp","service_tier":"default","obfuscation":"xyz"}`,
	`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
	`{"choices":[{"index":1,"delta":{"content":"other choice"}},{"index":0,"delta":{"content":"\u65e5\u672c \ud83d\ude00 \ud800 \"q\" \\ \/ \b\f\n\r\t"}}]}`,
	`{"choices":"nope","usage":5}`,
	`{"choices":[null,1,"x",[],{"index":"2","delta":"s","finish_reason":7}]}`,
	`{"choices":[{"index":1.0,"finish_reason":true,"delta":{"content":12.50,"tool_calls":{"index":0}}}]}`,
	`{"choices":[{"index":3e0,"delta":{"content":{"a":1},"tool_calls":[{"index":true,"id":false,"function":{"name":["x"],"arguments":null}}]}}]}`,
	`{"choices":[{"index":0,"delta":{"content":"a","content":null}}],"choices":[{"index":0,"delta":{"content":"b"}}]}`,
	`{"usage":{"prompt_tokens":1},"usage":null}`,
	`{"usage":{"prompt_tokens":"12","completion_tokens":-3.7}}`,
	`{"\u0063hoices":[{"index":0,"delta":{"Content":"case","conte\u006et":"escaped key"}}]}`,
	`{"choices":[{"index":9999999999999999999,"delta":{"content":"big"}},{"index":-0,"delta":{"content":"neg zero"}}]}`,
	`{"choices":[{"index":0,"delta":{"content":"bad utf-8 ` + "\xff\xfe" + `"}}]}`,
	` { "choices" : [ { "index" : 0 , "delta" : { "content" : "spaced" } } ] } `,
	`[1,2]`, `"text"`, `null`, `12`, `{}`, `{"error":null}`,
	`{"choices":[{"index":0,"delta":{"content":"x"}}]`, `{"choices":[{"index":0,"delta":{"content":"x"}}]}}`, ``,
}

// Each chunk decodes to what openai-go's decoder made of it, errors included.
func TestChunkMatchesOpenAIGo(t *testing.T) {
	for _, s := range chunkSeeds {
		checkChunk(t, []byte(s))
	}
}

func FuzzChunkMatchesOpenAIGo(f *testing.F) {
	for _, s := range chunkSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkChunk)
}

func checkChunk(t *testing.T, data []byte) {
	want, wantErr := decodeOpenAI(data)
	got, gotErr := decodeLore(data)
	if (wantErr == nil) != (gotErr == nil) {
		t.Fatalf("%q: err %v, openai-go %v", data, gotErr, wantErr)
	}
	if !equalChunks(got, want) {
		t.Errorf("%q:\n got %+v\nwant %+v", data, got, want)
	}
}

// Old and new decoding side by side: go test -bench Chunk ./internal/llm/oai/
func BenchmarkChunk(b *testing.B) {
	data := []byte(chunkSeeds[0])
	for _, d := range []struct {
		name string
		fn   func([]byte) (streamChunk, error)
	}{{"openai-go", decodeOpenAI}, {"lore", decodeLore}} {
		b.Run(d.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.fn(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Old and new request encoding side by side, on a request the size of a
// chat turn's answer call (system prompt, question, tool call, results).
func BenchmarkRequestBody(b *testing.B) {
	m := New(Config{Model: "m"})
	req := llm.Request{Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: strings.Repeat("Answer from the passages and cite them. ", 30)},
		{Role: llm.RoleUser, Content: "How do I install and upgrade it?"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_1", Name: llm.SearchToolName, Arguments: `{"query":"install and upgrade"}`}}},
		{Role: llm.RoleTool, ToolCallID: "call_1", Content: strings.Repeat(fmt.Sprintf("[%d] Title > Heading\nSome passage text about apt-get, \"quotes\" and <tags>.\n", 1), 120)},
	}, Tools: []llm.ToolDef{{Name: llm.SearchToolName, Description: "Search the docs", Parameters: map[string]any{
		"type": "object", "properties": map[string]any{"query": map[string]any{"type": "string"}}, "required": []string{"query"},
	}}}}
	b.Run("openai-go", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := openAIParams(m.model, req).MarshalJSON(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("lore", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := m.requestBody(req); err != nil {
				b.Fatal(err)
			}
		}
	})
}
