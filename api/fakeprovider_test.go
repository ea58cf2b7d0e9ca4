package api

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeProvider is an OpenAI-compatible chat and embeddings server and a
// Cohere-compatible rerank server in one (the paid remote APIs). A request
// without "Bearer <key>" is refused with 401 and an error that repeats the
// key it got, as some providers do, so tests can check that Lore never shows
// it.
type fakeProvider struct {
	srv    *httptest.Server
	key    string
	mu     sync.Mutex
	answer string // chat answer text
	dim    int
	calls  map[string]int
	bodies map[string][]map[string]any
}

func newFakeProvider(t *testing.T, key, answer string) *fakeProvider {
	f := &fakeProvider{key: key, answer: answer, dim: 8, calls: map[string]int{}, bodies: map[string][]map[string]any{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// URL is the API root with /v1.
func (f *fakeProvider) URL() string { return f.srv.URL + "/v1" }

func (f *fakeProvider) setAnswer(a string) {
	f.mu.Lock()
	f.answer = a
	f.mu.Unlock()
}

func (f *fakeProvider) setKey(k string) {
	f.mu.Lock()
	f.key = k
	f.mu.Unlock()
}

func (f *fakeProvider) count(path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[path]
}

func (f *fakeProvider) lastBody(path string) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.bodies[path]
	if len(b) == 0 {
		return nil
	}
	return b[len(b)-1]
}

func (f *fakeProvider) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	f.mu.Lock()
	f.calls[r.URL.Path]++
	f.bodies[r.URL.Path] = append(f.bodies[r.URL.Path], body)
	answer, dim, key := f.answer, f.dim, f.key
	f.mu.Unlock()
	got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if got != key {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s","type":"invalid_request_error","code":"invalid_api_key"}}`, got)
		return
	}
	switch r.URL.Path {
	case "/v1/chat/completions":
		w.Header().Set("Content-Type", "text/event-stream")
		for _, piece := range []string{answer[:len(answer)/2], answer[len(answer)/2:]} {
			chunk, _ := json.Marshal(map[string]any{"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": body["model"],
				"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": piece}, "finish_reason": nil}}})
			fmt.Fprintf(w, "data: %s\n\n", chunk)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	case "/v1/embeddings":
		vec := make([]float64, dim)
		for i := range vec {
			vec[i] = float64(i+1) / 10
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "model": body["model"],
			"data": []any{map[string]any{"object": "embedding", "index": 0, "embedding": vec}}, "usage": map[string]any{"prompt_tokens": 2, "total_tokens": 2}})
	case "/v2/rerank", "/v1/rerank":
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "r1", "results": []any{map[string]any{"index": 0, "relevance_score": 0.875}}, "meta": map[string]any{}})
	default:
		http.NotFound(w, r)
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
