package oai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/embed"
)

var _ embed.Embedder = (*Embedder)(nil)

// fakeAPI is an OpenAI-compatible /embeddings server. Each text "t<N>" gets
// the vector [N, request number, 0.5, ...] of the requested dimension (or
// nativeDim), and answers come back in reverse order so that clients relying
// on position instead of index fail.
type fakeAPI struct {
	t         *testing.T
	nativeDim int
	status    int    // when non-zero, answer every request with this status
	mangle    string // "short", "dup-index", "bad-index", "ragged"

	mu       sync.Mutex
	requests []map[string]json.RawMessage
	auth     []string
	paths    []string
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	n := len(f.requests)
	var body map[string]json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		f.mu.Unlock()
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.requests = append(f.requests, body)
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	f.paths = append(f.paths, r.Method+" "+r.URL.Path)
	f.mu.Unlock()

	if f.status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(f.status)
		fmt.Fprintf(w, `{"error":{"message":"fake failure %d","type":"invalid_request_error","param":null,"code":null}}`, f.status)
		return
	}
	var inputs []string
	if err := json.Unmarshal(body["input"], &inputs); err != nil {
		http.Error(w, "input must be an array of strings", http.StatusBadRequest)
		return
	}
	dim := f.nativeDim
	if raw, ok := body["dimensions"]; ok {
		if err := json.Unmarshal(raw, &dim); err != nil {
			http.Error(w, "bad dimensions", http.StatusBadRequest)
			return
		}
	}
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	}
	var data []item
	for i := len(inputs) - 1; i >= 0; i-- {
		num, err := strconv.Atoi(strings.TrimPrefix(inputs[i], "t"))
		if err != nil {
			num = -1
		}
		v := make([]float64, dim)
		v[0] = float64(num)
		if dim > 1 {
			v[1] = float64(n)
		}
		for j := 2; j < dim; j++ {
			v[j] = 0.5
		}
		data = append(data, item{Object: "embedding", Index: i, Embedding: v})
	}
	switch f.mangle {
	case "short":
		data = data[1:]
	case "dup-index":
		data[0].Index = data[1].Index
	case "bad-index":
		data[0].Index = len(inputs)
	case "ragged":
		data[0].Embedding = data[0].Embedding[:dim-1]
	}
	var model string
	_ = json.Unmarshal(body["model"], &model)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"object": "list",
		"model":  model,
		"data":   data,
		"usage":  map[string]int{"prompt_tokens": len(inputs), "total_tokens": len(inputs)},
	})
}

func newFake(t *testing.T, nativeDim int) (*fakeAPI, *httptest.Server) {
	f := &fakeAPI{t: t, nativeDim: nativeDim}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func texts(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "t" + strconv.Itoa(i)
	}
	return out
}

func TestBatchingOrderingAuth(t *testing.T) {
	f, srv := newFake(t, 3)
	e := New(Config{BaseURL: srv.URL + "/v1", APIKey: "sk-test", Model: "my-embed", BatchSize: 64, HTTPClient: srv.Client()})
	in := texts(150)
	vs, err := e.Embed(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != len(in) {
		t.Fatalf("got %d vectors", len(vs))
	}
	for i, v := range vs {
		if len(v) != 3 || v[0] != float32(i) {
			t.Fatalf("vector %d = %v: order not preserved", i, v)
		}
		if want := float32(i / 64); v[1] != want {
			t.Fatalf("vector %d came from request %v, want %v", i, v[1], want)
		}
	}
	if len(f.requests) != 3 {
		t.Fatalf("made %d requests, want 3", len(f.requests))
	}
	for i, want := range []int{64, 64, 22} {
		var got []string
		if err := json.Unmarshal(f.requests[i]["input"], &got); err != nil {
			t.Fatal(err)
		}
		if len(got) != want || got[0] != in[i*64] {
			t.Errorf("request %d has %d inputs starting %q, want %d starting %q", i, len(got), got[0], want, in[i*64])
		}
		if string(f.requests[i]["model"]) != `"my-embed"` {
			t.Errorf("request %d model %s", i, f.requests[i]["model"])
		}
		if _, ok := f.requests[i]["dimensions"]; ok {
			t.Errorf("request %d sent dimensions although none was configured", i)
		}
		if f.auth[i] != "Bearer sk-test" {
			t.Errorf("request %d Authorization %q", i, f.auth[i])
		}
		if f.paths[i] != "POST /v1/embeddings" {
			t.Errorf("request %d went to %q", i, f.paths[i])
		}
	}
	if e.Dimension() != 3 {
		t.Errorf("Dimension() = %d after learning 3", e.Dimension())
	}
}

func TestDefaults(t *testing.T) {
	f, srv := newFake(t, 2)
	e := New(Config{BaseURL: srv.URL, HTTPClient: srv.Client()})
	if e.Model() != DefaultModel || e.Dimension() != 1536 {
		t.Fatalf("model %q dimension %d", e.Model(), e.Dimension())
	}
	if _, err := e.Embed(context.Background(), texts(DefaultBatchSize+1)); err != nil {
		t.Fatal(err)
	}
	if len(f.requests) != 2 {
		t.Fatalf("default batch size: %d requests", len(f.requests))
	}
}

// An embedder configured without a key sends none: the process's
// OPENAI_API_KEY and OPENAI_BASE_URL belong to no configured server.
func TestNoKeyFromEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-env-must-not-leak")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	f, srv := newFake(t, 2)
	e := New(Config{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client()})
	if _, err := e.Embed(context.Background(), texts(1)); err != nil {
		t.Fatal(err)
	}
	if len(f.auth) != 1 || f.auth[0] != "" {
		t.Fatalf("Authorization %q, want none", f.auth)
	}
}

func TestDimensionsParameter(t *testing.T) {
	f, srv := newFake(t, 3)
	e := New(Config{BaseURL: srv.URL, Model: "m", Dimension: 8, HTTPClient: srv.Client()})
	vs, err := e.Embed(context.Background(), texts(2))
	if err != nil {
		t.Fatal(err)
	}
	if string(f.requests[0]["dimensions"]) != "8" {
		t.Fatalf("dimensions = %s", f.requests[0]["dimensions"])
	}
	if len(vs[0]) != 8 || e.Dimension() != 8 {
		t.Fatalf("got %d dims, Dimension() %d", len(vs[0]), e.Dimension())
	}
}

func TestDimensionMismatchIsPermanent(t *testing.T) {
	// A server that ignores "dimensions" and returns its native size.
	ignoring := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"object":"list","model":"m","data":[{"object":"embedding","index":0,"embedding":[1,2,3]}],"usage":{"prompt_tokens":1,"total_tokens":1}}`)
	}))
	defer ignoring.Close()
	e := New(Config{BaseURL: ignoring.URL, Model: "m", Dimension: 4, HTTPClient: ignoring.Client()})
	_, err := e.Embed(context.Background(), []string{"t0"})
	if !errors.Is(err, embed.ErrPermanent) {
		t.Fatalf("got %v, want ErrPermanent", err)
	}
}

func TestMalformedAnswers(t *testing.T) {
	for _, mangle := range []string{"short", "dup-index", "bad-index", "ragged"} {
		t.Run(mangle, func(t *testing.T) {
			f, srv := newFake(t, 3)
			f.mangle = mangle
			e := New(Config{BaseURL: srv.URL, Model: "m", HTTPClient: srv.Client()})
			vs, err := e.Embed(context.Background(), texts(5))
			if err == nil {
				t.Fatalf("accepted a %s answer: %v", mangle, vs)
			}
		})
	}
}

func TestErrorMapping(t *testing.T) {
	cases := []struct {
		status    int
		permanent bool
	}{
		{http.StatusBadRequest, true},
		{http.StatusUnauthorized, true},
		{http.StatusForbidden, true},
		{http.StatusNotFound, true},
		{http.StatusUnprocessableEntity, true},
		{http.StatusRequestTimeout, false},
		{http.StatusTooManyRequests, false},
		{http.StatusInternalServerError, false},
		{http.StatusBadGateway, false},
		{http.StatusServiceUnavailable, false},
	}
	for _, c := range cases {
		t.Run(strconv.Itoa(c.status), func(t *testing.T) {
			f, srv := newFake(t, 3)
			f.status = c.status
			e := New(Config{BaseURL: srv.URL, APIKey: "k", Model: "m", HTTPClient: srv.Client()})
			_, err := e.Embed(context.Background(), texts(3))
			if err == nil {
				t.Fatal("no error")
			}
			if got := errors.Is(err, embed.ErrPermanent); got != c.permanent {
				t.Errorf("status %d: permanent = %v, want %v (%v)", c.status, got, c.permanent, err)
			}
			if len(f.requests) != 1 {
				t.Errorf("status %d: %d requests, want 1 (SDK retries must be off)", c.status, len(f.requests))
			}
		})
	}
}

func TestTransportErrorIsRetryable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens any more
	e := New(Config{BaseURL: url, Model: "m", HTTPClient: &http.Client{Timeout: 2 * time.Second}})
	_, err := e.Embed(context.Background(), []string{"t0"})
	if err == nil || errors.Is(err, embed.ErrPermanent) {
		t.Fatalf("got %v, want a retryable error", err)
	}
}

func TestEmptyInputMakesNoRequest(t *testing.T) {
	f, srv := newFake(t, 3)
	e := New(Config{BaseURL: srv.URL, HTTPClient: srv.Client()})
	vs, err := e.Embed(context.Background(), nil)
	if err != nil || len(vs) != 0 || len(f.requests) != 0 {
		t.Fatalf("vs %v err %v requests %d", vs, err, len(f.requests))
	}
}

func TestContextCancelled(t *testing.T) {
	_, srv := newFake(t, 3)
	e := New(Config{BaseURL: srv.URL, HTTPClient: srv.Client()})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := e.Embed(ctx, texts(2))
	if !errors.Is(err, context.Canceled) || errors.Is(err, embed.ErrPermanent) {
		t.Fatalf("got %v", err)
	}
}
