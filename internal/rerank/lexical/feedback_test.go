package lexical

import (
	"math"
	"testing"

	"github.com/lorekb/lore/internal/analyze"
	"github.com/lorekb/lore/internal/vector"
)

func TestFeedbackTermsSharedAndRareFirst(t *testing.T) {
	fb := []Doc{
		{Text: "tarball bundle tarball common"},
		{Text: "tarball bundle common common"},
		{Text: "compression common zipper common"},
	}
	idf := func(term string) float64 {
		if term == analyze.Terms("common")[0] {
			return 0 // as common as a word gets
		}
		return 1
	}
	exp := FeedbackTerms("archive files", fb, 3, idf)
	if len(exp) != 3 {
		t.Fatalf("got %d terms, want 3: %v", len(exp), exp)
	}
	tarball := analyze.Terms("tarball")[0]
	if exp[tarball] != 1 {
		t.Errorf("the term most of the best passages share should weigh 1: %v", exp)
	}
	for term, w := range exp {
		if w <= 0 || w > 1 {
			t.Errorf("weight of %q = %v, want in (0, 1]", term, w)
		}
		for _, q := range analyze.Terms("archive files") {
			if term == q {
				t.Errorf("query term %q in the expansion %v", q, exp)
			}
		}
	}
	if _, ok := exp[analyze.Terms("common")[0]]; ok {
		t.Errorf("a word of no rarity joined the expansion: %v", exp)
	}
	if got := FeedbackTerms("x", nil, 5, idf); len(got) != 0 {
		t.Errorf("no feedback docs gave %v", got)
	}
}

func TestScoreExpanded(t *testing.T) {
	docs := []Doc{
		{Text: "archive the files quickly"},
		{Text: "archive the files with a tarball"},
		{Text: "a tarball and nothing else"},
	}
	st := &vector.KeywordStats{Docs: 100, AvgLen: 5, DocFreq: map[string]int{}}
	for _, d := range docs {
		for _, term := range analyze.Terms(d.Text) {
			st.DocFreq[term] = 10
		}
	}
	plain := ScoreFields("archive files", docs, st)
	if same := ScoreExpanded("archive files", docs, st, nil); !equal(plain, same) {
		t.Fatalf("no expansion changed the scores: %v vs %v", same, plain)
	}
	exp := map[string]float64{analyze.Terms("tarball")[0]: 0.25}
	got := ScoreExpanded("archive files", docs, st, exp)
	if !(got[1] > got[0]) {
		t.Errorf("the passage with the expansion term should rank first: %v", got)
	}
	if got[0] != plain[0] {
		t.Errorf("a passage without the expansion term changed: %v vs %v", got[0], plain[0])
	}
	if got[2] != 0 {
		t.Errorf("a passage sharing only the expansion, no query term, scored %v", got[2])
	}
	// The expansion adds at most its weight times the term's BM25 score.
	if d := got[1] - plain[1]; d <= 0 || d > 0.25*IDF(100, 10)*(k1+1) {
		t.Errorf("expansion added %v", d)
	}
}

func equal(a, b []float64) bool {
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-12 {
			return false
		}
	}
	return len(a) == len(b)
}
