// Package scripted is an OpenAI-compatible streaming chat endpoint with
// fixed timing, for measuring what Lore adds around a model: every call
// waits Delay before its first chunk; a call without a tool result in its
// messages (and with tools offered) answers with a search tool call, one
// with a tool result streams Tokens answer tokens at TokensPerSec. It
// records, per chat marker found in the request, when each call arrived and
// when its first chunk left, so the caller can subtract the model's own time
// exactly.
package scripted

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Marker is embedded in user messages as "[lbm-<id>]" to tie model calls to
// one benchmark chat.
var markerRe = regexp.MustCompile(`\[lbm-([0-9a-z-]+)\]`)

// MarkerFor returns the tag to put in a user message for chat id.
func MarkerFor(id string) string { return "[lbm-" + id + "]" }

// Calls are the timestamps of one chat's model calls.
type Calls struct {
	ToolArrive, ToolDone time.Time // the tool-call turn: request arrived, response fully written
	AnswerArrive         time.Time // the answer turn: request arrived
	AnswerFirst          time.Time // first answer token written and flushed
	Extra                int       // calls beyond the two expected
}

// Server is the scripted model.
type Server struct {
	Delay        time.Duration
	Tokens       int
	TokensPerSec float64

	srv   *http.Server
	ln    net.Listener
	mu    sync.Mutex
	calls map[string]*Calls
	n     int
}

// Start listens on 127.0.0.1 on a free port.
func Start(delay time.Duration, tokens int, tps float64) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{Delay: delay, Tokens: tokens, TokensPerSec: tps, ln: ln, calls: map[string]*Calls{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/chat/completions", s.serve)
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"object":"list","data":[{"id":"scripted","object":"model","owned_by":"bench"}]}`)
	})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// BaseURL is the OpenAI base URL (ending in /v1).
func (s *Server) BaseURL() string { return "http://" + s.ln.Addr().String() + "/v1" }

// Close stops the server.
func (s *Server) Close() { _ = s.srv.Close() }

// CallsFor returns the recorded timestamps of a chat (nil if none).
func (s *Server) CallsFor(id string) *Calls {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.calls[id]; c != nil {
		cp := *c
		return &cp
	}
	return nil
}

// Count is the number of model calls served.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

type chatRequest struct {
	Messages []struct {
		Role string `json:"role"`
	} `json:"messages"`
	Tools []json.RawMessage `json:"tools"`
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	arrive := time.Now()
	body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	hasTool := false
	for _, m := range req.Messages {
		if m.Role == "tool" {
			hasTool = true
		}
	}
	toolTurn := !hasTool && len(req.Tools) > 0
	id := ""
	if m := markerRe.FindSubmatch(body); m != nil {
		id = string(m[1])
	}
	s.mu.Lock()
	s.n++
	c := s.calls[id]
	if c == nil && id != "" {
		c = &Calls{}
		s.calls[id] = c
	}
	if c != nil {
		switch {
		case toolTurn && c.ToolArrive.IsZero():
			c.ToolArrive = arrive
		case !toolTurn && c.AnswerArrive.IsZero():
			c.AnswerArrive = arrive
		default:
			c.Extra++
		}
	}
	s.mu.Unlock()

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl, _ := w.(http.Flusher)
	send := func(v any) bool {
		b, _ := json.Marshal(v)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		if fl != nil {
			fl.Flush()
		}
		return true
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": arrive.Unix(), "model": "scripted",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	if !sleep(r, s.Delay) {
		return
	}
	completion := 0
	if toolTurn {
		send(chunk(map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"index": 0, "id": "call_" + id, "type": "function",
			"function": map[string]any{"name": "search_knowledge_base", "arguments": `{"query":`}}}}, nil))
		send(chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": `"install and upgrade"}`}}}}, nil))
		send(chunk(map[string]any{}, "tool_calls"))
		completion = 12
	} else {
		words := answerWords(s.Tokens)
		gap := time.Duration(float64(time.Second) / s.TokensPerSec)
		for i, word := range words {
			if i > 0 && !sleep(r, gap) {
				return
			}
			if !send(chunk(map[string]any{"role": "assistant", "content": word + " "}, nil)) {
				return
			}
			if i == 0 && c != nil {
				s.mu.Lock()
				if c.AnswerFirst.IsZero() {
					c.AnswerFirst = time.Now()
				}
				s.mu.Unlock()
			}
		}
		send(chunk(map[string]any{}, "stop"))
		completion = len(words)
	}
	send(map[string]any{"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": arrive.Unix(), "model": "scripted", "choices": []any{},
		"usage": map[string]int{"prompt_tokens": 200, "completion_tokens": completion, "total_tokens": 200 + completion}})
	fmt.Fprint(w, "data: [DONE]\n\n")
	if fl != nil {
		fl.Flush()
	}
	if toolTurn && c != nil {
		s.mu.Lock()
		if c.ToolDone.IsZero() {
			c.ToolDone = time.Now()
		}
		s.mu.Unlock()
	}
}

func sleep(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return r.Context().Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

const answerText = "To install it, download the release archive, unpack it and run the installer; to upgrade, stop the service, replace the binary and start it again [1]. " +
	"Settings live in the data directory and survive upgrades, so back it up first."

func answerWords(n int) []string {
	all := strings.Fields(answerText)
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, all[i%len(all)])
	}
	return out
}
