package api

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lorekb/lore/workflows"
)

func TestPyDumpsWritesLikePythonJSONDumps(t *testing.T) {
	got := string(pyDumps([]kv{
		{"status", json.RawMessage(`"tool_completed"`)},
		{"tool", json.RawMessage(`"search_knowledge_base"`)},
		{"x", json.RawMessage(`{"a":[1,2.5,null],"t":"é \u003cb\u003e \u0026 😀 \"q\" \\ ,:"}`)},
		{"missing", nil},
	}))
	want := `{"status": "tool_completed", "tool": "search_knowledge_base", "x": {"a": [1, 2.5, null], "t": "\u00e9 <b> & \ud83d\ude00 \"q\" \\ ,:"}, "missing": null}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestOpenAIBodyConventions(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"model":"m","user":"[undefined]","messages":[{"role":"user","content":"hi","name":"[undefined]"}]}`,
			`{"messages":[{"content":"hi","role":"user"}],"model":"m"}`},
		{`{"serviceTier":"auto","max_tokens":1e3}`, `{"max_tokens":1e3,"service_tier":"auto"}`},
		{`{"serviceTier":"flex","service_tier":"auto"}`, `{"service_tier":"auto"}`},
		{`{"model":"m"}`, `{"model":"m"}`},
		{`[1,2]`, `[1,2]`},
		{`{"a":1} trailing`, `{"a":1} trailing`},
	} {
		if got := string(openAIBody([]byte(tc.in))); got != tc.want {
			t.Errorf("openAIBody(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
	// The standard OpenAI request fields are accepted (and ignored).
	var req ChatCompletionRequest
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}],
		"tool_choice":"auto","parallel_tool_calls":true,"response_format":{"type":"text"},"logit_bias":{"1":2},"logprobs":false,
		"top_logprobs":0,"reasoning_effort":"low","modalities":["text"],"serviceTier":"auto","user":"[undefined]"}`
	if err := bindJSONBody(openAIBody([]byte(body)), &req); err != nil {
		t.Fatal(err)
	}
	if req.ServiceTier == nil || *req.ServiceTier != "auto" || req.User != "" {
		t.Fatalf("decoded %+v", req)
	}
	if err := bindJSONBody(openAIBody([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"nonsense":1}`)), &req); err == nil ||
		!strings.Contains(err.Error(), "nonsense") {
		t.Fatalf("a field OpenAI does not define: %v", err)
	}
}

func TestCompletionLineNoticesAndInternalEvents(t *testing.T) {
	ch := chunker{id: "chatcmpl-1", model: "m", created: 1}
	var usage map[string]int
	line := func(ev map[string]any, internal bool) map[string]any {
		b, _ := json.Marshal(ev)
		out := completionLine(b, ch, internal, &usage)
		if out == nil {
			return nil
		}
		var m map[string]any
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		return m
	}
	finish := func(m map[string]any) any { return m["choices"].([]any)[0].(map[string]any)["finish_reason"] }
	if m := line(map[string]any{"type": "response.output_text.delta", "delta": "Hi"}, false); m["id"] != "chatcmpl-1" || finish(m) != nil {
		t.Fatalf("text chunk %v", m)
	}
	for kind, delta := range map[string]string{"timeout": workflows.TimeoutNotice, "error": workflows.ErrorNoticePrefix + "boom]"} {
		m := line(map[string]any{"type": "response.output_text.delta", "delta": delta}, false)
		if id, _ := m["id"].(string); !strings.HasPrefix(id, kind+"-") || finish(m) != "stop" {
			t.Fatalf("%s chunk %v", kind, m)
		}
	}
	if line(map[string]any{"type": "response.tool_call.started", "tool": "search_knowledge_base"}, false) != nil {
		t.Fatal("internal event without include_internal_events")
	}
	b, _ := json.Marshal(map[string]any{"type": "response.tool_call.completed", "tool": "search_knowledge_base", "tool_call_id": "c1", "chunk_count": 3})
	if got := string(completionLine(b, ch, true, &usage)); got != `{"status": "tool_completed", "tool": "search_knowledge_base", "tool_call_id": "c1", "chunk_count": 3}` {
		t.Fatalf("internal event %s", got)
	}
	line(map[string]any{"type": "response.completed", "response": map[string]any{"usage": map[string]int{"input_tokens": 5, "output_tokens": 2, "total_tokens": 7}}}, false)
	if usage["prompt_tokens"] != 5 || usage["completion_tokens"] != 2 || usage["total_tokens"] != 7 {
		t.Fatalf("usage %v", usage)
	}
}

// A streamed completion whose turn cannot be set up answers 200 with one
// warning chunk and [DONE] (here: no workflow engine configured).
func TestStreamedCompletionSetupErrorIsOneWarningChunk(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		site := h.sitesNew(map[string]any{"name": "Setup"})
		r := h.do("POST", clientPath+"/chat/completions", map[string]any{"stream": true, "model": "m", "filter": map[string]any{"site_id": site.ID},
			"messages": []map[string]string{{"role": "user", "content": "hi"}}}, "")
		body := string(r.Raw)
		if r.Status != 200 || !strings.Contains(body, `"content":"⚠️ the workflow engine is not configured`) ||
			!strings.Contains(body, `"finish_reason":"stop"`) || !strings.HasSuffix(body, "data: [DONE]\n\n") {
			t.Fatalf("%d %s", r.Status, body)
		}
	})
}
