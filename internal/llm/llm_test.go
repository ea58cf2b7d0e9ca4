package llm

import (
	"encoding/json"
	"testing"
)

func TestIsPermanentStatus(t *testing.T) {
	for code, want := range map[int]bool{
		200: false, 302: false, 400: true, 401: true, 403: true, 404: true, 408: false,
		413: true, 422: true, 429: false, 499: true, 500: false, 502: false, 503: false,
	} {
		if got := IsPermanentStatus(code); got != want {
			t.Errorf("IsPermanentStatus(%d) = %v, want %v", code, got, want)
		}
	}
}

func TestEstimateTokens(t *testing.T) {
	for s, want := range map[string]int{"": 1, "abc": 1, "abcdefgh": 2, "安装指南安装指南": 2} {
		if got := EstimateTokens(s); got != want {
			t.Errorf("EstimateTokens(%q) = %d, want %d", s, got, want)
		}
	}
}

func TestMessageJSON(t *testing.T) {
	// The persisted shape is shared with the agent's history; keep it stable.
	b, _ := json.Marshal(Message{Role: RoleUser, Content: "hi"})
	if string(b) != `{"role":"user","content":"hi"}` {
		t.Errorf("user message JSON = %s", b)
	}
	b, _ = json.Marshal(Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c1", Name: SearchToolName, Arguments: `{"query":"q"}`}}})
	want := `{"role":"assistant","content":"","tool_calls":[{"id":"c1","name":"search_knowledge_base","arguments":"{\"query\":\"q\"}"}]}`
	if string(b) != want {
		t.Errorf("assistant message JSON = %s", b)
	}
	var m Message
	if err := json.Unmarshal([]byte(`{"role":"tool","content":"r","tool_call_id":"c1"}`), &m); err != nil || m.ToolCallID != "c1" {
		t.Errorf("tool message decode = %+v, %v", m, err)
	}
}
