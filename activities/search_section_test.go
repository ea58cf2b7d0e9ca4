package activities

import (
	"testing"

	"github.com/lorekb/lore/internal/retrieve"
	"github.com/lorekb/lore/internal/vector"
)

// A passage names the section of the fragment the search ranked first,
// which is where a citation of it opens.
func TestSearchPassagesNameTheirSection(t *testing.T) {
	hit := func(doc int64, idx int, heading string) retrieve.Result {
		return retrieve.Result{Hit: vector.Hit{DocumentID: doc, ChunkIndex: idx, Heading: heading, Text: "text"}, Relevance: 0.5}
	}
	ps := SearchPassages([]retrieve.Result{
		hit(1, 4, "Growing tomatoes > Watering > In summer"),
		hit(2, 0, ""),
		hit(1, 1, "Growing tomatoes"), // earlier on the page, ranked lower
		hit(3, 2, "Pruning"),
	})
	want := map[int64]string{1: "In summer", 2: "", 3: "Pruning"}
	if len(ps) != 3 {
		t.Fatalf("%d passages", len(ps))
	}
	for _, p := range ps {
		if p.Section != want[p.DocumentID] {
			t.Errorf("document %d: section %q, want %q", p.DocumentID, p.Section, want[p.DocumentID])
		}
	}
}
