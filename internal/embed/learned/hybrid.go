package learned

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/lorekb/lore/internal/analyze"
	"github.com/lorekb/lore/internal/embed/local"
)

// Hybrid is the embedded default embedder. A text's vector is the learned
// part (the model's dimensions) followed by the hashing part (the hashing
// embedder's), scaled by sqrt(c) and sqrt(1-c) where c is the share of the
// text's terms the model knows. Both parts are unit length, so the vector
// is too, and the dot product of two texts' vectors is
// sqrt(c1 c2) cos(learned) + sqrt((1-c1)(1-c2)) cos(hashed): English texts
// meet by meaning, Chinese texts (c = 0) exactly as with the hashing
// embedder alone, and a mixed text by both in proportion.
type Hybrid struct {
	m    *Model
	hash *local.Embedder
	pool sync.Pool
}

// NewHybrid returns the hybrid of m and a hashing embedder of hashDim
// dimensions (local.DefaultDimension when hashDim <= 0).
func NewHybrid(m *Model, hashDim int) *Hybrid {
	h := &Hybrid{m: m, hash: local.New(hashDim)}
	h.pool.New = func() any { acc := make([]float32, m.Dim); return &acc }
	return h
}

// Dimension is the model's dimensions plus the hashing embedder's.
func (h *Hybrid) Dimension() int { return h.m.Dim + h.hash.Dimension() }

// Model names both parts, so vectors of another model version or hashing
// scheme are never compared with these.
func (h *Hybrid) Model() string {
	return fmt.Sprintf("%s.text%d+%s", h.m.ID(), TextRevision, h.hash.Model())
}

// Embed returns one unit vector per text (the zero vector for a text with
// no terms). The only error is the context's.
func (h *Hybrid) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	hashed, err := h.hash.Embed(ctx, texts)
	if err != nil {
		return nil, err
	}
	dim := h.Dimension()
	out := make([][]float32, len(texts))
	backing := make([]float32, len(texts)*dim)
	pacc := h.pool.Get().(*[]float32)
	defer h.pool.Put(pacc)
	acc := *pacc
	for i, t := range texts {
		if i%64 == 63 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		v := backing[i*dim : (i+1)*dim : (i+1)*dim]
		c := h.learnedPart(t, acc)
		lw, hw := float32(math.Sqrt(c)), float32(math.Sqrt(1-c))
		for d, x := range acc {
			v[d] = lw * x
		}
		for d, x := range hashed[i] {
			v[h.m.Dim+d] = hw * x
		}
		out[i] = v
	}
	return out, nil
}

// Coverage is the share of text's terms the model knows (0 when it has
// none).
func (h *Hybrid) Coverage(text string) float64 {
	var known, all int
	analyze.Each(text, func(t string) {
		all++
		if h.m.Knows(t) {
			known++
		}
	})
	if all == 0 {
		return 0
	}
	return float64(known) / float64(all)
}

// learnedPart writes the learned unit vector of text into acc and returns
// the share of its terms the model knows.
func (h *Hybrid) learnedPart(text string, acc []float32) float64 {
	clear(acc)
	var known, all int
	analyze.Each(text, func(t string) {
		all++
		if h.m.addTerm(t, acc) {
			known++
		}
	})
	if known == 0 {
		clear(acc)
		return 0
	}
	h.m.finish(acc)
	return float64(known) / float64(all)
}

// MostSimilar is the highest similarity of term's word vector to one of
// words' (see Model.MostSimilar).
func (h *Hybrid) MostSimilar(term string, words map[string]bool) float64 {
	return h.m.MostSimilar(term, words)
}

// NeighbourSimilarity is how similar a term's nearest words are (see
// Model.NeighbourSimilarity).
func (h *Hybrid) NeighbourSimilarity(term string) float64 { return h.m.NeighbourSimilarity(term) }
