package retrieve

import (
	"context"
	"testing"

	"github.com/lorekb/lore/internal/rerank/lexical"
	"github.com/lorekb/lore/internal/vector"
	vlocal "github.com/lorekb/lore/internal/vector/local"
)

// TestRunRelevanceCountsTheChunksSection: a section cut into two chunks,
// each holding half of the question's words, is relevant as a whole (the
// answer spans the cut); a page that holds the other half in another section
// is not, nor is a page retrieved for only half the question.
func TestRunRelevanceCountsTheChunksSection(t *testing.T) {
	chunks := []vector.Chunk{
		// Document 1: one section in two chunks.
		{DocumentID: 1, Heading: "OS > freemem", Text: "Returns the amount of unused memory."},
		{DocumentID: 1, Heading: "OS > freemem", Text: "Counted for the whole machine in bytes."},
		// Document 2: the same words, in two different sections.
		{DocumentID: 2, Heading: "Agent > sockets", Text: "Sockets kept open use some memory."},
		{DocumentID: 2, Heading: "Cluster > workers", Text: "One worker per machine core."},
		// Document 3: half the question only.
		{DocumentID: 3, Heading: "Buffers", Text: "Buffers hold memory outside the heap."},
	}
	res := keywordRerank(t, chunks, "memory machine")
	got := map[string]float64{}
	for _, r := range res {
		got[r.Hit.Heading+" | "+r.Hit.Text] = r.Relevance
	}
	want := map[string]bool{ // relevance 1 (whole question), else below 1
		"OS > freemem | Returns the amount of unused memory.":    true,
		"OS > freemem | Counted for the whole machine in bytes.": true,
		"Agent > sockets | Sockets kept open use some memory.":   false,
		"Cluster > workers | One worker per machine core.":       false,
		"Buffers | Buffers hold memory outside the heap.":        false,
	}
	if len(got) != len(want) {
		t.Fatalf("results %v, want the %d chunks", got, len(want))
	}
	for k, whole := range want {
		rel, ok := got[k]
		if !ok {
			t.Fatalf("%q missing from %v", k, got)
		}
		if whole != (rel == 1) || rel <= 0 {
			t.Errorf("%q: relevance %v, want 1: %v (and above 0)", k, rel, whole)
		}
	}
}

// keywordRerank runs the keyword and rerank stages for query over chunks
// (see flatStore), top 10.
func keywordRerank(t *testing.T, chunks []vector.Chunk, query string) []Result {
	t.Helper()
	p := Pipeline{Store: flatStore(t, chunks), Reranker: lexical.New()}
	res, err := p.Run(context.Background(), 1, query, Options{RecallK: 50, TopK: 10, Stages: Stages{Keyword: true, Rerank: true}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// flatStore is an embedded store of site 1 holding chunks, one vector for
// all (tests of the keyword side and the reranker), each chunk at its
// position in its document.
func flatStore(t *testing.T, chunks []vector.Chunk) vector.Store {
	t.Helper()
	store, err := vlocal.Open(t.TempDir(), 8)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	next := map[int64]int{}
	for i := range chunks {
		c := &chunks[i]
		c.Index = next[c.DocumentID]
		next[c.DocumentID]++
		c.ID = vector.ChunkID(c.DocumentID, 1, c.Index)
		c.SiteID, c.Version = 1, 1
		if c.Title == "" {
			c.Title = "Doc"
		}
		c.Vector = []float32{1, 0, 0, 0, 0, 0, 0, 0}
	}
	if err := store.Upsert(context.Background(), chunks); err != nil {
		t.Fatal(err)
	}
	return store
}
