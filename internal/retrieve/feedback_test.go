package retrieve

import (
	"context"
	"testing"

	"github.com/lorekb/lore/internal/rerank/lexical"
	"github.com/lorekb/lore/internal/vector"
	vlocal "github.com/lorekb/lore/internal/vector/local"
)

// TestRunFeedbackLiftsThePassageSharingTheTopsVocabulary: two passages
// match the query alike, word for word; the one that also speaks the
// vocabulary of the best passages (pseudo-relevance feedback) ranks first.
func TestRunFeedbackLiftsThePassageSharingTheTopsVocabulary(t *testing.T) {
	store, err := vlocal.Open(t.TempDir(), 8)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	texts := []string{
		"Pack files into a tarball archive with gzip compression.",
		"Pack files: tarball archive, gzip compression.",
		"Pack files as one tarball archive and gzip compression.",
		"Pack files, then read about suitcase travel and many other long unrelated things.", // the query's words, elsewhere
		"Pack files, then read about tarball gzip and many other long unrelated things.",    // in the tops' vocabulary
		"Weather today is sunny.",
		"Suitcase sizes for airline travel.",
	}
	var chunks []vector.Chunk
	for i, tx := range texts {
		id := int64(i + 1)
		chunks = append(chunks, vector.Chunk{ID: vector.ChunkID(id, 1, 0), SiteID: 1, DocumentID: id, Version: 1,
			Title: "Doc", Text: tx, Vector: []float32{1, 0, 0, 0, 0, 0, 0, 0}})
	}
	if err := store.Upsert(context.Background(), chunks); err != nil {
		t.Fatal(err)
	}
	p := Pipeline{Store: store, Reranker: lexical.New()}
	res, err := p.Run(context.Background(), 1, "pack files", Options{RecallK: 50, TopK: 10, Stages: Stages{Keyword: true, Rerank: true}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pos := map[int64]int{}
	for i, r := range res {
		pos[r.Hit.DocumentID] = i + 1
	}
	if pos[4] == 0 || pos[5] == 0 {
		t.Fatalf("both passages should be found: %v", pos)
	}
	if pos[5] > pos[4] {
		t.Errorf("the passage in the best passages' vocabulary ranks %d, below the other's %d", pos[5], pos[4])
	}
}
