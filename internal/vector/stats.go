package vector

import (
	"context"

	"github.com/lorekb/lore/internal/analyze"
	"github.com/lorekb/lore/internal/chunk"
)

// KeywordStats are a site's keyword corpus statistics, as the keyword index
// counts them: how many chunks, their mean weighted length in terms, and in
// how many chunks each asked term occurs. Scoring with them (instead of with
// the few candidates of one query) makes a reranker's idf agree with the
// index, and lets retrieval tell a question the site covers from one whose
// words it has never seen.
type KeywordStats struct {
	Docs    int
	AvgLen  float64
	DocFreq map[string]int // analyzed term → chunks containing it (absent: 0)
}

// StatsSource is implemented by stores that can report KeywordStats. It is
// optional: callers fall back to statistics of the candidates at hand.
type StatsSource interface {
	// KeywordStats returns the site's statistics for the given analyzed
	// terms (analyze.Terms); an unknown site has Docs 0.
	KeywordStats(ctx context.Context, siteID int64, terms []string) (KeywordStats, error)
}

// Field weights of the keyword index: a term of the document's title counts
// TitleWeight times, since a title is the document's own summary of what it
// is about (a man page's NAME line, an API page's module name) and a
// question usually asks for that; a term of a chunk's own section heading
// (the last level of its heading path) counts LeafHeadingWeight times, since
// it names what the section is about; the outer headings count once, like
// the text. Measured on make eval (bench/EVAL.md): a title weight of 5
// instead of 1 raised MRR@10 from 0.806 to 0.816 (English) and, with the
// character terms of Chinese words, from 0.643 to 0.725 (Chinese). Stores
// and rerankers that score fields use EachFieldTerm so their rankings agree.
const (
	TitleWeight       = 5
	LeafHeadingWeight = 3
)

// EachFieldTerm calls emit for every analyzed term of a chunk's fields with
// the weight it counts in the keyword index.
func EachFieldTerm(title, heading, text string, emit func(term string, weight int)) {
	one := func(t string) { emit(t, 1) }
	analyze.Each(title, func(t string) { emit(t, TitleWeight) })
	parents, leaf := chunk.SplitHeading(heading)
	analyze.Each(parents, one)
	analyze.Each(leaf, func(t string) { emit(t, LeafHeadingWeight) })
	analyze.Each(text, one)
}
