package activities

import (
	"testing"

	"github.com/lorekb/lore/internal/llm/extractive"
)

// A source's score is its passage's support for the query: a page that
// states the answer scores above one that only shares some of its words,
// and every score is in [0,1]. The passages the model reads keep the
// search's relevance in their headers.
func TestSearchSourceScoresAreSupport(t *testing.T) {
	f := newSearchFixture(t)
	q := "How do I upgrade the quokka server?"
	res, sr := f.search(t, f.siteA, q)
	if len(res.Sources) < 2 || len(res.Sources) != len(sr.Passages) {
		t.Fatalf("sources %+v for %d passages", res.Sources, len(sr.Passages))
	}
	titles, contents := make([]string, len(sr.Passages)), make([]string, len(sr.Passages))
	for i, p := range sr.Passages {
		titles[i], contents[i] = p.Title, p.Content
	}
	want := extractive.Support(q, titles, contents)
	score := map[int64]float64{}
	for i, s := range res.Sources {
		if s.Score < 0 || s.Score > 1 || s.Score != want[i] {
			t.Errorf("source %d score %v, want Support %v", i, s.Score, want[i])
		}
		score[s.DocumentID] = s.Score
	}
	if score[f.notes] != 1 || score[f.guide] >= score[f.notes] {
		t.Errorf("notes (says how to upgrade) %v, guide (install only) %v", score[f.notes], score[f.guide])
	}
}
