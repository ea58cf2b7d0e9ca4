// Package apitest holds what the API's tests, the end-to-end tests and the
// chaos scenarios share: reading the server-sent events of a chat stream,
// and writing the streamed answer of an OpenAI-compatible chat provider that
// a test stands in for.
package apitest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Event is one server-sent event; Type is the "type" of its JSON data, or
// "[DONE]" for the OpenAI-style end marker.
type Event struct {
	ID   int
	Data string
	Type string
}

// ReadEvent reads the next event (comments and keep-alives skipped).
func ReadEvent(br *bufio.Reader) (Event, error) {
	var ev Event
	hasData := false
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			if err == io.EOF && hasData {
				return finish(ev), nil
			}
			return ev, err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if hasData {
				return finish(ev), nil
			}
			ev = Event{}
		case strings.HasPrefix(line, "id:"):
			ev.ID, _ = strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "id:")))
		case strings.HasPrefix(line, "data:"):
			ev.Data = strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")
			hasData = true
		}
	}
}

func finish(ev Event) Event {
	if ev.Data == "[DONE]" {
		ev.Type = "[DONE]"
		return ev
	}
	var t struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal([]byte(ev.Data), &t)
	ev.Type = t.Type
	return ev
}

// ParseEvents reads every event of a whole stream body.
func ParseEvents(raw []byte) []Event {
	br := bufio.NewReader(strings.NewReader(string(raw)))
	var out []Event
	for {
		ev, err := ReadEvent(br)
		if err != nil {
			return out
		}
		out = append(out, ev)
	}
}

// Answer concatenates the answer text of the events.
func Answer(evs []Event) string {
	var b strings.Builder
	for _, e := range evs {
		if e.Type == "response.output_text.delta" {
			var d struct {
				Delta string `json:"delta"`
			}
			_ = json.Unmarshal([]byte(e.Data), &d)
			b.WriteString(d.Delta)
		}
	}
	return b.String()
}

// ChatStream writes a streamed chat completion as an OpenAI-compatible
// provider does, one chunk an event, flushed as it goes.
type ChatStream struct {
	w     http.ResponseWriter
	model string
}

// NewChatStream starts the stream of model's answer on w.
func NewChatStream(w http.ResponseWriter, model string) *ChatStream {
	w.Header().Set("Content-Type", "text/event-stream")
	return &ChatStream{w: w, model: model}
}

func (s *ChatStream) event(v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(s.w, "data: %s\n\n", b)
	s.w.(http.Flusher).Flush()
}

// Send writes one chunk: its only choice's delta and finish reason (nil
// while the choice goes on).
func (s *ChatStream) Send(delta map[string]any, finish any) {
	s.event(map[string]any{"id": "x", "object": "chat.completion.chunk", "created": 1, "model": s.model,
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
}

// SearchCall writes the first tool call, search_knowledge_base for query, in
// two pieces as providers split the arguments; the finish chunk is the
// caller's.
func (s *ChatStream) SearchCall(query string) {
	q, _ := json.Marshal(query)
	s.Send(map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"index": 0, "id": "call_1", "type": "function",
		"function": map[string]any{"name": "search_knowledge_base", "arguments": `{"query":`}}}}, nil)
	s.Send(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": string(q) + "}"}}}}, nil)
}

// End writes the usage chunk and the end marker.
func (s *ChatStream) End(promptTokens, completionTokens int) {
	s.event(map[string]any{"id": "x", "object": "chat.completion.chunk", "created": 1, "model": s.model, "choices": []any{},
		"usage": map[string]int{"prompt_tokens": promptTokens, "completion_tokens": completionTokens, "total_tokens": promptTokens + completionTokens}})
	fmt.Fprint(s.w, "data: [DONE]\n\n")
	s.w.(http.Flusher).Flush()
}
