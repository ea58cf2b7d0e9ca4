// Package rerank defines the capability that reorders retrieved passages by
// relevance to the query before they are shown to the chat model. Retrieval
// (vector and keyword search) is tuned for recall; a reranker restores
// precision so the few passages that fit in the prompt are the best ones.
//
// Implementations: lexical (local BM25, no network) and cohere (any
// Cohere-compatible /v2/rerank server).
package rerank

import (
	"context"
	"errors"
	"sort"
)

// Result is one ranked document. Index points into the docs slice given to
// Rerank, so callers can map results back to their own passage records.
type Result struct {
	Index int
	Score float64
}

// Reranker orders docs by relevance to query. It returns at most topN
// results (all when topN <= 0) sorted by Score descending. Scores are only
// comparable within one call and one implementation.
type Reranker interface {
	Rerank(ctx context.Context, query string, docs []string, topN int) ([]Result, error)
}

// ErrPermanent marks errors that retrying cannot fix (HTTP 4xx other than
// 408 and 429), so callers can fail fast or fall back instead of retrying.
var ErrPermanent = errors.New("rerank: permanent error")

// Top sorts results by Score, best first, ties by Index (so equal scores
// keep the caller's order), and keeps the first topN (all when topN <= 0).
// Every implementation returns its results through it, so they order alike.
func Top(results []Result, topN int) []Result {
	sort.SliceStable(results, func(i, j int) bool {
		if results[i].Score != results[j].Score {
			return results[i].Score > results[j].Score
		}
		return results[i].Index < results[j].Index
	})
	if topN > 0 && len(results) > topN {
		results = results[:topN]
	}
	return results
}
