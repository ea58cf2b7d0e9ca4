package api

import (
	"encoding/json"
	"strings"
	"testing"
)

// streamError reads an SSE setup-error answer in the responses format:
// exactly one response.error event, then [DONE]; it returns the message.
func streamError(t *testing.T, r *resp) string {
	t.Helper()
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("want an SSE answer with HTTP 200, got %d %s %s", r.Status, r.Header.Get("Content-Type"), r.Raw)
	}
	parts := strings.Split(strings.TrimSuffix(string(r.Raw), "\n\n"), "\n\n")
	if len(parts) != 2 || parts[1] != "data: [DONE]" || !strings.HasPrefix(parts[0], "data: ") {
		t.Fatalf("want one event and [DONE]: %q", r.Raw)
	}
	var ev map[string]any
	if err := json.Unmarshal([]byte(strings.TrimPrefix(parts[0], "data: ")), &ev); err != nil {
		t.Fatalf("event %q: %v", parts[0], err)
	}
	msg, _ := ev["error"].(string)
	if ev["type"] != "response.error" || msg == "" || len(ev) != 2 {
		t.Fatalf("want the reference's {type: response.error, error}: %v", ev)
	}
	return msg
}

// TestStreamSetupErrorsAreAnSSEErrorEvent: with stream=true, every error
// before the stream starts (validation, unknown or inactive site, thread id,
// rate limit, a turn that cannot be set up) is HTTP 200 with one
// response.error event and [DONE], as the reference answers, with the status
// the error has without a stream in X-Lore-Error-Status; without stream the
// same requests keep their HTTP errors.
func TestStreamSetupErrorsAreAnSSEErrorEvent(t *testing.T) {
	h := newHarness(t, "sqlite", map[string]string{"LORE_CHAT_RATE_PER_IP": "6"})
	site := saSite(h, "streamed")
	inactive := saSite(h, "switched-off")
	h.must(200, "PUT", adminPath+"/sites/"+itoa(inactive.ID), map[string]any{"status": "inactive"}, h.admin)
	cases := []struct {
		name   string
		body   map[string]any
		status int
		msg    string
	}{
		{"no input", map[string]any{"filter": map[string]any{"site_id": site.ID}}, 422, "input"},
		{"unknown field", map[string]any{"input": "x", "thread_id": "t", "filter": map[string]any{"site_id": site.ID}}, 422, "thread_id"},
		{"unknown site", map[string]any{"input": "x", "filter": map[string]any{"site_id": 99999}}, 404, "site not found"},
		{"inactive site", map[string]any{"input": "x", "filter": map[string]any{"site_id": inactive.ID}}, 404, "site not found"},
		{"bad thread id", map[string]any{"input": "x", "previous_response_id": "two words", "filter": map[string]any{"site_id": site.ID}}, 422, "previous_response_id"},
		// No workflow engine in this harness: the turn cannot be set up.
		{"setup", map[string]any{"input": "x", "filter": map[string]any{"site_id": site.ID}}, 503, "workflow engine"},
	}
	for _, tc := range cases {
		plain := h.do("POST", clientPath+"/chat/responses", tc.body, "")
		if plain.Status != tc.status {
			t.Fatalf("%s without stream: %d %s", tc.name, plain.Status, plain.Raw)
		}
		tc.body["stream"] = true
		r := h.do("POST", clientPath+"/chat/responses", tc.body, "")
		if msg := streamError(t, r); !strings.Contains(msg, tc.msg) || r.Header.Get(StreamErrorStatusHeader) != itoa(int64(tc.status)) {
			t.Fatalf("%s: %q, status header %q", tc.name, msg, r.Header.Get(StreamErrorStatusHeader))
		}
	}
	// The rate limit (6 per IP and site) in a stream keeps its Retry-After.
	body := map[string]any{"input": "x", "stream": true, "filter": map[string]any{"site_id": site.ID}}
	limited := false
	for i := 0; i < 8 && !limited; i++ {
		r := h.do("POST", clientPath+"/chat/responses", body, "")
		msg := streamError(t, r)
		limited = r.Header.Get(StreamErrorStatusHeader) == "429"
		if limited && (!strings.Contains(msg, "too many") || r.Header.Get("Retry-After") == "") {
			t.Fatalf("rate limit: %q %v", msg, r.Header)
		}
	}
	if !limited {
		t.Fatal("the rate limit never answered")
	}
	// A body that is not JSON cannot ask for a stream: 422 envelope.
	if r := h.do("POST", clientPath+"/chat/responses", `{"stream":true,`, ""); r.Status != 422 {
		t.Fatalf("malformed: %d %s", r.Status, r.Raw)
	}
}

// TestStreamedCompletionErrorsAreOneWarningChunk: the completions entries
// write their setup errors as one "error-<uuid>" chunk "⚠️ <message>" and
// [DONE] (WIRE §4), through the same mechanism; a bad bot API key stays a
// 401 in OpenAI's error format.
func TestStreamedCompletionErrorsAreOneWarningChunk(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	msgs := []map[string]string{{"role": "user", "content": "hi"}}
	r := h.do("POST", clientPath+"/chat/completions", map[string]any{"stream": true, "model": "m", "filter": map[string]any{"site_id": 99999},
		"messages": msgs}, "")
	body := strings.TrimSuffix(string(r.Raw), "data: [DONE]\n\n")
	var ch struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Model   string `json:"model"`
		Choices []struct {
			Delta        map[string]any `json:"delta"`
			FinishReason string         `json:"finish_reason"`
		} `json:"choices"`
	}
	if r.Status != 200 || body == string(r.Raw) || json.Unmarshal([]byte(strings.TrimSpace(strings.TrimPrefix(body, "data: "))), &ch) != nil ||
		!strings.HasPrefix(ch.ID, "error-") || ch.Object != "chat.completion.chunk" || ch.Model != "m" || len(ch.Choices) != 1 ||
		ch.Choices[0].Delta["content"] != "⚠️ site not found" || ch.Choices[0].FinishReason != "stop" {
		t.Fatalf("%d %s", r.Status, r.Raw)
	}
	r = h.do("POST", clientPath+"/bot/chat/completions", map[string]any{"stream": true, "model": "m", "messages": msgs}, "not-a-key")
	if r.Status != 401 || !strings.Contains(string(r.Raw), `"authentication_error"`) {
		t.Fatalf("bad key: %d %s", r.Status, r.Raw)
	}
}
