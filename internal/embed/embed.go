// Package embed defines how Lore turns text into vectors, so that ingest and
// search can swap a local, offline embedder for a hosted model without
// touching the code that uses them.
package embed

import (
	"context"
	"errors"
	"math"
)

// Embedder turns texts into dense vectors of a fixed dimension. A document
// indexed with one model can only be searched with vectors from the same
// model and dimension, which is why both are part of the interface.
type Embedder interface {
	// Embed returns one vector per text, in the order of texts.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Dimension is the length of every vector Embed returns (0 when not yet
	// known, for a remote model whose size is learnt from its first answer).
	Dimension() int
	// Model names the model, so stored vectors can be tied to what made them.
	Model() string
}

// ErrPermanent marks an embedding failure that retrying cannot fix (a bad
// request, a rejected key, an unknown model, a wrong dimension). Callers that
// retry, such as Temporal activities, test for it with errors.Is and stop.
var ErrPermanent = errors.New("embed: permanent failure")

// Coverer is implemented by embedders whose vectors mean more for some texts
// than others: a learned model knows only its language's words and falls
// back to hashing for the rest (learned.Hybrid). Coverage is the share of
// text the model knows, in [0, 1].
type Coverer interface {
	Coverage(text string) float64
}

// TermMatcher is implemented by embedders that can say how close in meaning
// analyzer terms are (learned.Hybrid), in [-1, 1], 0 when unknown.
type TermMatcher interface {
	// MostSimilar is the highest similarity of term to one of words (0
	// when the model knows neither term nor any of words).
	MostSimilar(term string, words map[string]bool) float64
	// NeighbourSimilarity is the similarity of a term's nearest words, up
	// to a fixed number of them (1 when the term is unknown): how close
	// another word must be to be one of its nearest.
	NeighbourSimilarity(term string) float64
}

// Cosine is the cosine similarity of two vectors (0 when either is zero).
func Cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range min(len(a), len(b)) {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}
