package embed

import (
	"context"
	"strings"
	"sync"
)

// Once wraps e so that a text embedded once is not sent again: a search run
// over several sites one after the other (a chat turn of no site) embeds its
// query once. Results are kept for the wrapper's life, so wrap per request.
func Once(e Embedder) Embedder { return &once{Embedder: e, seen: map[string][][]float32{}} }

type once struct {
	Embedder
	mu   sync.Mutex
	seen map[string][][]float32
}

func (o *once) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	key := strings.Join(texts, "\x00")
	o.mu.Lock()
	v, ok := o.seen[key]
	o.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := o.Embedder.Embed(ctx, texts)
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	o.seen[key] = v
	o.mu.Unlock()
	return v, nil
}

// Unwrap returns the embedder Once wraps, so its optional interfaces
// (Coverer, TermMatcher) stay reachable through the wrapper.
func (o *once) Unwrap() Embedder { return o.Embedder }

// Unwrap returns the innermost embedder of e, through wrappers such as Once.
func Unwrap(e Embedder) Embedder {
	for {
		w, ok := e.(interface{ Unwrap() Embedder })
		if !ok {
			return e
		}
		e = w.Unwrap()
	}
}
