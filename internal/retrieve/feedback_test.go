package retrieve

import (
	"testing"

	"github.com/lorekb/lore/internal/vector"
)

// TestRunFeedbackLiftsThePassageSharingTheTopsVocabulary: two passages
// match the query alike, word for word; the one that also speaks the
// vocabulary of the best passages (pseudo-relevance feedback) ranks first.
func TestRunFeedbackLiftsThePassageSharingTheTopsVocabulary(t *testing.T) {
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
		chunks = append(chunks, vector.Chunk{DocumentID: int64(i + 1), Title: "Doc", Text: tx})
	}
	res := keywordRerank(t, chunks, "pack files")
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
