package activities

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/temporal"

	"github.com/lorekb/lore/internal/rerank"
	"github.com/lorekb/lore/internal/retrieve"
	"github.com/lorekb/lore/internal/vector"
)

// retrieve runs the retrieval pipeline (package retrieve) for the chat's
// search tool and the admins' retrieval test alike, over the site's
// published, completed chunks, further narrowed by narrow when it is not
// nil. Failures are classified for Temporal: a bad reranker configuration or
// a permanent rerank error stops retries, a model error is classified like
// the other model calls.
func (a *Chat) retrieve(ctx context.Context, tenantID, siteID int64, query string, stages retrieve.Stages, topK int,
	narrow retrieve.Filter) ([]retrieve.Result, error) {
	cfg := a.D.Cfg
	emb, store, err := a.D.TenantVectors(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	p := retrieve.Pipeline{Store: store, Embedder: emb, Observe: func(kind, model string, took time.Duration, err error) {
		a.D.Metrics.ObserveModel(kind, model, took, 0, 0, err)
	}}
	if stages.Rerank && cfg.RAGEnableRerank {
		rr, err := a.D.Reranker(ctx, tenantID)
		if err != nil {
			return nil, temporal.NewNonRetryableApplicationError(err.Error(), "Config", err)
		}
		p.Reranker = rr
	}
	opt := retrieve.Options{
		RecallK: min(cfg.RAGRecallK, cfg.RAGRecallMax), Threshold: float32(cfg.RAGRecallThreshold),
		TopK: topK, Stages: stages, DenseWeight: cfg.RAGDenseWeight,
	}
	filter := func(ctx context.Context, hits []vector.Hit) ([]vector.Hit, error) {
		hits, err := a.visible(ctx, siteID, hits)
		if err != nil || narrow == nil || len(hits) == 0 {
			return hits, err
		}
		return narrow(ctx, hits)
	}
	// Reads may be a few seconds stale (vector.AllowStale): every hit is
	// checked against the database by the filter, so a chunk indexed a
	// moment ago is all a stale read can miss, and Milvus skips the wait
	// for its newest writes.
	res, err := p.Run(vector.AllowStale(ctx), siteID, query, opt, filter)
	switch {
	case err == nil:
		return res, nil
	case errors.Is(err, retrieve.ErrEmbed):
		return nil, classify(errors.Unwrap(err))
	case errors.Is(err, rerank.ErrPermanent):
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), "RerankPermanent", err)
	}
	return nil, err
}

// RetrieveInput is one retrieval test: the admins' view of what the chat's
// search tool would get for query.
type RetrieveInput struct {
	TenantID     int64
	SiteID       int64
	Query        string
	TopK         int
	CollectionID int64   // 0: any; else this collection and its descendants
	DocumentIDs  []int64 // empty: any
	Stages       retrieve.Stages
}

// RetrievedChunk is one ranked chunk with the score of every stage (nil: the
// stage did not see it).
type RetrievedChunk struct {
	DocumentID int64    `json:"document_id"`
	Title      string   `json:"title"`
	ChunkIndex int      `json:"chunk_index"`
	Version    int64    `json:"content_version"`
	Heading    string   `json:"heading_path"`
	Text       string   `json:"text"`
	Dense      *float64 `json:"dense_score"`
	Keyword    *float64 `json:"keyword_score"`
	Fused      float64  `json:"fused_score"`
	Rerank     *float64 `json:"rerank_score"`
	Relevance  float64  `json:"relevance"`
	Score      float64  `json:"score"`
}

// RetrieveOutput is the ranked chunks. Unlike the chat's search (which keeps
// passages in the database and returns a hash), the retrieval test returns
// its chunks in the result: it is an interactive diagnostic whose answer is
// bounded by top_k (at most 50 chunks of LORE_CHUNK_SIZE runes each).
type RetrieveOutput struct {
	Chunks []RetrievedChunk
}

// Retrieve runs the chat's retrieval pipeline for an admin, with the stages
// asked for, over the site's published, vectorized documents (narrowed to a
// collection subtree or a set of documents when asked).
func (a *Chat) Retrieve(ctx context.Context, in RetrieveInput) (RetrieveOutput, error) {
	narrow, err := a.narrowing(ctx, in)
	if err != nil {
		return RetrieveOutput{}, err
	}
	res, err := a.retrieve(ctx, in.TenantID, in.SiteID, in.Query, in.Stages, in.TopK, narrow)
	if err != nil {
		return RetrieveOutput{}, err
	}
	out := RetrieveOutput{Chunks: make([]RetrievedChunk, len(res))}
	for i, r := range res {
		out.Chunks[i] = RetrievedChunk{DocumentID: r.Hit.DocumentID, Title: r.Hit.Title, ChunkIndex: r.Hit.ChunkIndex,
			Version: r.Hit.Version, Heading: r.Hit.Heading, Text: r.Hit.Text, Dense: r.Dense, Keyword: r.Keyword,
			Fused: r.Fused, Rerank: r.Rerank, Relevance: r.Relevance, Score: r.Score}
	}
	return out, nil
}

// narrowing is the filter for the test's collection and document ids (nil
// when it names neither).
func (a *Chat) narrowing(ctx context.Context, in RetrieveInput) (retrieve.Filter, error) {
	if in.CollectionID == 0 && len(in.DocumentIDs) == 0 {
		return nil, nil
	}
	var docs, colls map[int64]bool
	if len(in.DocumentIDs) > 0 {
		docs = make(map[int64]bool, len(in.DocumentIDs))
		for _, id := range in.DocumentIDs {
			docs[id] = true
		}
	}
	if in.CollectionID != 0 {
		ids, err := a.D.DB.CollectionWithDescendants(ctx, in.CollectionID)
		if err != nil {
			return nil, err
		}
		colls = make(map[int64]bool, len(ids))
		for _, id := range ids {
			colls[id] = true
		}
	}
	return func(ctx context.Context, hits []vector.Hit) ([]vector.Hit, error) {
		var of map[int64]int64
		if colls != nil {
			ids := make([]int64, len(hits))
			for i, h := range hits {
				ids[i] = h.DocumentID
			}
			var err error
			if of, err = a.D.DB.DocumentCollections(ctx, ids); err != nil {
				return nil, err
			}
		}
		out := hits[:0]
		for _, h := range hits {
			if (docs == nil || docs[h.DocumentID]) && (colls == nil || colls[of[h.DocumentID]]) {
				out = append(out, h)
			}
		}
		return out, nil
	}, nil
}

// ChunksInput names the document whose stored chunks an editor views.
type ChunksInput struct {
	TenantID   int64
	DocumentID int64
}

// StoredChunk is one stored chunk of a document with where its text starts
// and ends in the current content, in runes (-1 when the chunk is of
// another content version or cannot be located).
type StoredChunk struct {
	Index   int    `json:"chunk_index"`
	Version int64  `json:"content_version"`
	Heading string `json:"heading_path"`
	Text    string `json:"text"`
	Start   int    `json:"start"`
	End     int    `json:"end"`
}

// DocumentChunks lists the document's stored chunks, in version and chunk
// order, locating each in the content (the stored text is a verbatim,
// trimmed slice of it; an overlap prefix repeats the previous chunk's end).
func (a *Chat) DocumentChunks(ctx context.Context, in ChunksInput) ([]StoredChunk, error) {
	_, store, err := a.D.TenantVectors(ctx, in.TenantID)
	if err != nil {
		return nil, err
	}
	lister, ok := store.(vector.ChunkLister)
	if !ok {
		return nil, temporal.NewNonRetryableApplicationError("this vector store cannot list a document's chunks", "Unsupported", nil)
	}
	hits, err := lister.DocumentChunks(ctx, in.DocumentID)
	if err != nil {
		return nil, err
	}
	doc, err := a.D.DB.GetDocument(ctx, in.DocumentID)
	if err != nil {
		return nil, err
	}
	out := make([]StoredChunk, len(hits))
	from := 0 // byte offset where the next chunk may start
	for i, h := range hits {
		out[i] = StoredChunk{Index: h.ChunkIndex, Version: h.Version, Heading: h.Heading, Text: h.Text, Start: -1, End: -1}
		if at := indexFrom(doc.Content, h.Text, from); at >= 0 {
			out[i].Start = runeCount(doc.Content[:at])
			out[i].End = out[i].Start + runeCount(h.Text)
			from = at + 1
		}
	}
	return out, nil
}

// indexFrom is strings.Index of sub in s at or after byte from.
func indexFrom(s, sub string, from int) int {
	if from > len(s) || sub == "" {
		return -1
	}
	if i := strings.Index(s[from:], sub); i >= 0 {
		return from + i
	}
	return -1
}

func runeCount(s string) int { return utf8.RuneCountInString(s) }
