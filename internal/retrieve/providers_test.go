package retrieve

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lorekb/lore/internal/embed/local"
	"github.com/lorekb/lore/internal/embed/oai"
	"github.com/lorekb/lore/internal/rerank/cohere"
	"github.com/lorekb/lore/internal/vector"
	vlocal "github.com/lorekb/lore/internal/vector/local"
)

// fakeProviders is an OpenAI-compatible /v1/embeddings (vectors from the
// local embedder, so similarity is meaningful) and a Cohere-compatible
// /v2/rerank that ranks documents containing "archive" first, so the test
// can tell the remote order from the lexical one.
func fakeProviders(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	emb := local.New(0)
	var reranks atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/embeddings":
			var in struct {
				Input []string `json:"input"`
			}
			_ = json.NewDecoder(r.Body).Decode(&in)
			vecs, _ := emb.Embed(r.Context(), in.Input)
			data := make([]map[string]any, len(vecs))
			for i, v := range vecs {
				data[i] = map[string]any{"object": "embedding", "index": i, "embedding": v}
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": "fake",
				"usage": map[string]int{"prompt_tokens": 1, "total_tokens": 1}})
		case "/v2/rerank":
			reranks.Add(1)
			var in struct {
				Documents []string `json:"documents"`
			}
			_ = json.NewDecoder(r.Body).Decode(&in)
			var results []map[string]any
			for i, d := range in.Documents {
				score := 0.1
				if strings.Contains(d, "archive") {
					score = 0.9
				}
				results = append(results, map[string]any{"index": i, "relevance_score": score})
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"id": "x", "results": results})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &reranks
}

// TestRunWithRemoteProviders: the OpenAI-compatible embedder and the
// Cohere-compatible reranker go through the same stages, and the remote
// reranker's order is the final order.
func TestRunWithRemoteProviders(t *testing.T) {
	srv, reranks := fakeProviders(t)
	emb := oai.New(oai.Config{BaseURL: srv.URL + "/v1", APIKey: "k", Model: "fake", Dimension: local.DefaultDimension})
	store, err := vlocal.Open(t.TempDir(), local.DefaultDimension)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	texts := []string{"Backups are taken nightly; restore a backup with the restore command.", "Copy the archive back to restore."}
	vecs, err := emb.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	var chunks []vector.Chunk
	for i, txt := range texts {
		id := int64(i + 1)
		chunks = append(chunks, vector.Chunk{ID: vector.ChunkID(id, 1, 0), SiteID: 1, DocumentID: id, Version: 1, Title: "Backups", Text: txt, Vector: vecs[i]})
	}
	if err := store.Upsert(ctx, chunks); err != nil {
		t.Fatal(err)
	}
	p := Pipeline{Store: store, Embedder: emb, Reranker: cohere.New(cohere.Config{BaseURL: srv.URL, APIKey: "k"})}
	res, err := p.Run(ctx, 1, "restore a backup", opts(AllStages()), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].Hit.DocumentID != 2 || reranks.Load() != 1 {
		t.Fatalf("results %+v, %d rerank calls; want the remote order (document 2 first)", res, reranks.Load())
	}
	if res[0].Dense == nil || res[0].Rerank == nil || *res[0].Rerank != 0.9 || res[0].Score != 0.9 {
		t.Errorf("stage scores: %+v", res[0])
	}
	// With the rerank stage off, the fused order stands and no call is made.
	if _, err := p.Run(ctx, 1, "restore a backup", opts(Stages{Dense: true, Keyword: true}), nil); err != nil || reranks.Load() != 1 {
		t.Errorf("rerank off: %v, %d calls", err, reranks.Load())
	}
}
