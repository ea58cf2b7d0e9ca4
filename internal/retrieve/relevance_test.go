package retrieve

import (
	"testing"

	"github.com/lorekb/lore/internal/analyze"
	"github.com/lorekb/lore/internal/vector"
)

// An example value the reader typed (a UUID, a port) is a word no page
// uses: left out of the question's weight where a section lacks it, it no
// longer sinks the page that answers; a section that holds it gets it.
func TestRelevanceLeavesOutExampleValuesASectionLacks(t *testing.T) {
	q := dedupe(analyze.Words("How do I make a unique identifier like 3b241101-e2bb-4255-8caf-4136c566a962?"))
	st := &vector.KeywordStats{Docs: 100, DocFreq: map[string]int{}}
	words := map[string]bool{} // the question's words, its values left out
	for _, w := range q {
		if !hasDigit(w) {
			st.DocFreq[w] = 5
			words[w] = true
		}
	}
	if len(words) == len(q) || len(words) == 0 {
		t.Fatalf("the question's words %v should hold both words and values", q)
	}
	if got := relevance(q, &sectionTerms{have: words}, st, nil); got != 1 {
		t.Errorf("a section with every word but the example value: relevance %v, want 1", got)
	}
	half := map[string]bool{}
	for w := range words {
		half[w] = true
		break
	}
	if got := relevance(q, &sectionTerms{have: half}, st, nil); got <= 0 || got >= 1 {
		t.Errorf("a section with one of the words: relevance %v, want between 0 and 1", got)
	}
	all := map[string]bool{}
	for _, w := range q {
		all[w] = true
	}
	if got := relevance(q, &sectionTerms{have: all}, st, nil); got != 1 {
		t.Errorf("a section with the value too: relevance %v, want 1", got)
	}
	if got := relevance(q, &sectionTerms{have: map[string]bool{}}, st, nil); got != 0 {
		t.Errorf("a section with none of them: relevance %v, want 0", got)
	}
}
