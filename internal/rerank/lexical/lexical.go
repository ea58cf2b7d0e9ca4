// Package lexical is a local reranker that needs no network or model: it
// scores each document with BM25 over the query terms, using the documents
// being reranked as the corpus, plus a small bonus when the query appears as
// a phrase. It is the default so that a fresh install ranks passages sensibly
// without a paid reranking service, and it is deterministic so results are
// reproducible in tests and Temporal replays.
package lexical

import (
	"context"
	"math"
	"sort"

	"github.com/lorekb/lore/internal/analyze"
	"github.com/lorekb/lore/internal/rerank"
)

// BM25 parameters: the usual defaults, which work well for passage-sized
// documents.
const (
	k1 = 1.2
	b  = 0.75
)

// PhraseBonus is added to a document's score when the whole query (two or
// more terms) occurs in it as a contiguous phrase. It is small next to a
// typical BM25 score so it reorders near-ties rather than overriding term
// evidence.
const PhraseBonus = 0.5

// Reranker is the BM25 [rerank.Reranker]. The zero value is ready to use.
type Reranker struct{}

var _ rerank.Reranker = (*Reranker)(nil)

// New returns a lexical Reranker. It exists for symmetry with the remote
// rerankers' constructors.
func New() *Reranker { return &Reranker{} }

// Rerank scores every doc against query and returns the best topN (all when
// topN <= 0), highest score first, ties broken by original index. Documents
// sharing no term with the query score 0 and come last. Scores are raw BM25
// values, not normalised to [0,1].
func (r *Reranker) Rerank(ctx context.Context, query string, docs []string, topN int) ([]rerank.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	scores := Score(query, docs)
	results := make([]rerank.Result, len(docs))
	for i, s := range scores {
		results[i] = rerank.Result{Index: i, Score: s}
	}
	sort.SliceStable(results, func(i, j int) bool {
		if results[i].Score != results[j].Score {
			return results[i].Score > results[j].Score
		}
		return results[i].Index < results[j].Index
	})
	if topN > 0 && len(results) > topN {
		results = results[:topN]
	}
	return results, nil
}

// Score returns the BM25-plus-phrase score of each doc for query, in doc
// order, treating docs as the whole corpus. It is exported for callers that
// need scores without ranking (for example to score sentences of passages).
func Score(query string, docs []string) []float64 {
	scores := make([]float64, len(docs))
	qTerms := analyze.Terms(query)
	if len(qTerms) == 0 || len(docs) == 0 {
		return scores
	}
	unique := dedupe(qTerms)

	docTerms := make([][]string, len(docs))
	tfs := make([]map[string]int, len(docs))
	df := make(map[string]int, len(unique))
	totalLen := 0
	for i, d := range docs {
		terms := analyze.Terms(d)
		docTerms[i] = terms
		totalLen += len(terms)
		tf := make(map[string]int)
		for _, t := range terms {
			tf[t]++
		}
		tfs[i] = tf
		for _, q := range unique {
			if tf[q] > 0 {
				df[q]++
			}
		}
	}
	n := float64(len(docs))
	avgLen := float64(totalLen) / n
	if avgLen == 0 {
		avgLen = 1
	}
	for i := range docs {
		dl := float64(len(docTerms[i]))
		var s float64
		for _, q := range unique {
			tf := float64(tfs[i][q])
			if tf == 0 {
				continue
			}
			dfq := float64(df[q])
			idf := math.Log(1 + (n-dfq+0.5)/(dfq+0.5))
			s += idf * tf * (k1 + 1) / (tf + k1*(1-b+b*dl/avgLen))
		}
		if len(qTerms) >= 2 && containsSeq(docTerms[i], qTerms) {
			s += PhraseBonus
		}
		scores[i] = s
	}
	return scores
}

func dedupe(terms []string) []string {
	seen := make(map[string]bool, len(terms))
	out := make([]string, 0, len(terms))
	for _, t := range terms {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// containsSeq reports whether needle occurs contiguously in hay.
func containsSeq(hay, needle []string) bool {
	if len(needle) == 0 || len(needle) > len(hay) {
		return false
	}
outer:
	for i := 0; i+len(needle) <= len(hay); i++ {
		for j, t := range needle {
			if hay[i+j] != t {
				continue outer
			}
		}
		return true
	}
	return false
}
