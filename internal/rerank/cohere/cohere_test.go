package cohere

import (
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
	"testing"
	"time"

	"github.com/lorekb/lore/internal/rerank"
)

// recorded is one request seen by the fake Cohere-compatible server.
type recorded struct {
	method, path, auth string
	body               map[string]any
}

// fakeCohere stands in for the paid rerank API: it records requests and
// replies with the handler's response.
func fakeCohere(t *testing.T, reply func(w http.ResponseWriter, r *http.Request, body map[string]any)) (*httptest.Server, func() []recorded) {
	t.Helper()
	var (
		mu   sync.Mutex
		reqs []recorded
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		mu.Lock()
		reqs = append(reqs, recorded{r.Method, r.URL.Path, r.Header.Get("Authorization"), body})
		mu.Unlock()
		reply(w, r, body)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []recorded {
		mu.Lock()
		defer mu.Unlock()
		return append([]recorded(nil), reqs...)
	}
}

func writeJSON(w http.ResponseWriter, status int, v string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, v)
}

func TestRerankRequestAndMapping(t *testing.T) {
	srv, reqs := fakeCohere(t, func(w http.ResponseWriter, r *http.Request, _ map[string]any) {
		// Deliberately not sorted, to check the client orders results.
		writeJSON(w, 200, `{"id":"x","results":[
			{"index":0,"relevance_score":0.25},
			{"index":2,"relevance_score":0.93},
			{"index":1,"relevance_score":0.25}
		],"meta":{"api_version":{"version":"2"}}}`)
	})
	r := New(Config{BaseURL: srv.URL, APIKey: "co-key", Model: "rerank-test"})
	docs := []string{"doc zero", "doc one", "doc two about install"}
	got, err := r.Rerank(context.Background(), "how to install", docs, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []rerank.Result{{Index: 2, Score: 0.93}, {Index: 0, Score: 0.25}, {Index: 1, Score: 0.25}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("results = %v, want %v", got, want)
	}

	rs := reqs()
	if len(rs) != 1 {
		t.Fatalf("server saw %d requests", len(rs))
	}
	req := rs[0]
	if req.method != http.MethodPost || req.path != "/v2/rerank" {
		t.Errorf("request = %s %s, want POST /v2/rerank", req.method, req.path)
	}
	if req.auth != "Bearer co-key" {
		t.Errorf("authorization = %q", req.auth)
	}
	if req.body["model"] != "rerank-test" || req.body["query"] != "how to install" {
		t.Errorf("body = %v", req.body)
	}
	if req.body["top_n"] != float64(3) {
		t.Errorf("top_n = %v, want 3", req.body["top_n"])
	}
	gotDocs, _ := req.body["documents"].([]any)
	if len(gotDocs) != 3 || gotDocs[0] != "doc zero" || gotDocs[2] != "doc two about install" {
		t.Errorf("documents = %v", req.body["documents"])
	}
}

func TestRerankTruncatesToTopNAndDefaults(t *testing.T) {
	t.Setenv("CO_API_KEY", "env-key-must-not-leak")
	srv, reqs := fakeCohere(t, func(w http.ResponseWriter, r *http.Request, _ map[string]any) {
		// A server that ignores top_n.
		writeJSON(w, 200, `{"results":[{"index":1,"relevance_score":0.8},{"index":0,"relevance_score":0.6},{"index":2,"relevance_score":0.1}]}`)
	})
	// Trailing "/v2/" on the base URL is tolerated.
	r := New(Config{BaseURL: srv.URL + "/v2/"})
	got, err := r.Rerank(context.Background(), "q", []string{"a", "b", "c"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Errorf("topN=0 should return all results, got %v", got)
	}
	got, err = r.Rerank(context.Background(), "q", []string{"a", "b", "c"}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if want := []rerank.Result{{Index: 1, Score: 0.8}, {Index: 0, Score: 0.6}}; !reflect.DeepEqual(got, want) {
		t.Errorf("results = %v, want %v", got, want)
	}
	rs := reqs()
	if rs[0].path != "/v2/rerank" {
		t.Errorf("path = %q", rs[0].path)
	}
	if _, ok := rs[0].body["top_n"]; ok {
		t.Errorf("top_n sent for topN=0: %v", rs[0].body)
	}
	if rs[0].body["model"] != DefaultModel {
		t.Errorf("model = %v, want default %q", rs[0].body["model"], DefaultModel)
	}
	if rs[0].auth != "" {
		t.Errorf("authorization = %q, want none without an API key", rs[0].auth)
	}
}

func TestRerankErrors(t *testing.T) {
	cases := []struct {
		status    int
		body      string
		permanent bool
	}{
		{400, `{"message":"invalid request"}`, true},
		{401, `{"message":"invalid api token"}`, true},
		{404, `not found`, true},
		{422, `{"message":"too many documents"}`, true},
		{408, `timeout`, false},
		{429, `{"message":"rate limited"}`, false},
		{500, `{"message":"boom"}`, false},
		{503, `unavailable`, false},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			srv, reqs := fakeCohere(t, func(w http.ResponseWriter, r *http.Request, _ map[string]any) {
				writeJSON(w, tc.status, tc.body)
			})
			start := time.Now()
			_, err := New(Config{BaseURL: srv.URL, APIKey: "k"}).Rerank(context.Background(), "q", []string{"a"}, 1)
			took := time.Since(start)
			if err == nil {
				t.Fatal("expected an error")
			}
			if got := errors.Is(err, rerank.ErrPermanent); got != tc.permanent {
				t.Errorf("errors.Is(ErrPermanent) = %v, want %v (err: %v)", got, tc.permanent, err)
			}
			if !strings.Contains(err.Error(), fmt.Sprint(tc.status)) {
				t.Errorf("error %q does not mention the status", err)
			}
			if n := len(reqs()); n != 1 {
				t.Errorf("server saw %d requests, want 1 (retries are Temporal's job)", n)
			}
			// cohere-go's retrier would sleep >= 500ms before giving up.
			if took > 300*time.Millisecond {
				t.Errorf("error took %v, want an immediate return", took)
			}
		})
	}
}

func TestRerankRejectsBadIndexes(t *testing.T) {
	srv, _ := fakeCohere(t, func(w http.ResponseWriter, r *http.Request, _ map[string]any) {
		writeJSON(w, 200, `{"results":[{"index":5,"relevance_score":0.9}]}`)
	})
	_, err := New(Config{BaseURL: srv.URL}).Rerank(context.Background(), "q", []string{"a", "b"}, 2)
	if err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("err = %v, want out-of-range error", err)
	}
}

func TestRerankNoDocsMakesNoRequest(t *testing.T) {
	srv, reqs := fakeCohere(t, func(w http.ResponseWriter, r *http.Request, _ map[string]any) {
		writeJSON(w, 200, `{"results":[]}`)
	})
	got, err := New(Config{BaseURL: srv.URL}).Rerank(context.Background(), "q", nil, 5)
	if err != nil || len(got) != 0 {
		t.Errorf("got %v, %v", got, err)
	}
	if n := len(reqs()); n != 0 {
		t.Errorf("server saw %d requests", n)
	}
}

func TestRerankCancellation(t *testing.T) {
	srv, _ := fakeCohere(t, func(w http.ResponseWriter, r *http.Request, _ map[string]any) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := New(Config{BaseURL: srv.URL}).Rerank(ctx, "q", []string{"a"}, 1)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want deadline exceeded", err)
	}
	if errors.Is(err, rerank.ErrPermanent) {
		t.Errorf("cancellation must not be permanent")
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("took %v after a 50ms deadline", took)
	}
}

// A base URL ending in /v1 (Jina's API) sends the same request to /v1/rerank,
// under any path prefix the server has.
func TestRerankV1BaseURL(t *testing.T) {
	srv, reqs := fakeCohere(t, func(w http.ResponseWriter, r *http.Request, _ map[string]any) {
		writeJSON(w, 200, `{"results":[{"index":0,"relevance_score":0.9}]}`)
	})
	r := New(Config{BaseURL: srv.URL + "/jina/v1/", APIKey: "k", Model: "jina-reranker-v2-base-multilingual"})
	got, err := r.Rerank(context.Background(), "q", []string{"a"}, 1)
	if err != nil || len(got) != 1 || got[0].Score != 0.9 {
		t.Fatalf("rerank: %v %v", got, err)
	}
	rs := reqs()
	if rs[0].path != "/jina/v1/rerank" || rs[0].body["query"] != "q" || rs[0].body["model"] != "jina-reranker-v2-base-multilingual" ||
		rs[0].body["top_n"] != float64(1) || rs[0].auth != "Bearer k" {
		t.Fatalf("request %+v", rs[0])
	}
}
