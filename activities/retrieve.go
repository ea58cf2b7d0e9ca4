package activities

import (
	"context"
	"errors"
	"sort"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/lorekb/lore/internal/embed"
	"github.com/lorekb/lore/internal/rerank"
	"github.com/lorekb/lore/internal/retrieve"
	"github.com/lorekb/lore/internal/vector"
)

// retrieve runs the retrieval pipeline (package retrieve) for the chat's
// search tool and the admins' retrieval test alike, over each site's
// published, completed chunks, further narrowed by narrow when it is not
// nil. Several sites (a chat turn of no site) are searched one by one, each
// run scoped to its site, with the query embedded once; their results are
// merged by score and cut to topK. Failures are classified for Temporal: a
// bad reranker configuration or a permanent rerank error stops retries, a
// model error is classified like the other model calls.
func (a *Chat) retrieve(ctx context.Context, tenantID int64, siteIDs []int64, query string, stages retrieve.Stages, topK int,
	narrow retrieve.Filter) ([]retrieve.Result, error) {
	cfg := a.Cfg
	emb, store, err := a.Vectors.TenantVectors(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	p := retrieve.Pipeline{Store: store, Embedder: emb, Observe: func(kind, model string, took time.Duration, err error) {
		a.Metrics.ObserveModel(kind, model, took, 0, 0, err)
	}}
	if stages.Rerank && cfg.RAGEnableRerank {
		rr, err := a.Models.Reranker(ctx, tenantID)
		if err != nil {
			return nil, temporal.NewNonRetryableApplicationError(err.Error(), ErrConfig, err)
		}
		p.Reranker = rr
	}
	opt := retrieve.Options{
		RecallK: min(cfg.RAGRecallK, cfg.RAGRecallMax), Threshold: float32(cfg.RAGRecallThreshold),
		TopK: topK, Stages: stages, DenseWeight: cfg.RAGDenseWeight,
	}
	if len(siteIDs) > 1 {
		p.Embedder = embed.Once(emb)
	}
	var all []retrieve.Result
	for _, siteID := range siteIDs {
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
		if err != nil {
			return nil, retrieveError(err)
		}
		all = append(all, res...)
	}
	if len(siteIDs) > 1 {
		sort.SliceStable(all, func(i, j int) bool { return all[i].Score > all[j].Score })
		if len(all) > topK {
			all = all[:topK]
		}
	}
	return all, nil
}

// retrieveError classifies a failure of the pipeline for Temporal.
func retrieveError(err error) error {
	switch {
	case errors.Is(err, retrieve.ErrEmbed):
		return classify(errors.Unwrap(err))
	case errors.Is(err, rerank.ErrPermanent):
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrRerankPermanent, err)
	}
	return err
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

// RankedChunk is one ranked chunk of a retrieval test: which chunk, and the
// score of every stage (nil: the stage did not see it). Its text, heading
// path and title stay out of the workflow's history: the handler reads them
// from the database (models.Chunk), as payloads carry ids, never text.
type RankedChunk struct {
	DocumentID int64
	Version    int64
	ChunkIndex int
	Dense      *float64
	Keyword    *float64
	Fused      float64
	Rerank     *float64
	Relevance  float64
	Score      float64
}

// RetrieveOutput is the ranked chunks, best first.
type RetrieveOutput struct {
	Chunks []RankedChunk
}

// Retrieve runs the chat's retrieval pipeline for an admin, with the stages
// asked for, over the site's published, vectorized documents (narrowed to a
// collection subtree or a set of documents when asked).
func (a *Chat) Retrieve(ctx context.Context, in RetrieveInput) (RetrieveOutput, error) {
	narrow, err := a.narrowing(ctx, in)
	if err != nil {
		return RetrieveOutput{}, err
	}
	res, err := a.retrieve(ctx, in.TenantID, []int64{in.SiteID}, in.Query, in.Stages, in.TopK, narrow)
	if err != nil {
		return RetrieveOutput{}, err
	}
	out := RetrieveOutput{Chunks: make([]RankedChunk, len(res))}
	for i, r := range res {
		out.Chunks[i] = RankedChunk{DocumentID: r.Hit.DocumentID, Version: r.Hit.Version, ChunkIndex: r.Hit.ChunkIndex,
			Dense: r.Dense, Keyword: r.Keyword, Fused: r.Fused, Rerank: r.Rerank, Relevance: r.Relevance, Score: r.Score}
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
		ids, err := a.DB.CollectionWithDescendants(ctx, in.CollectionID)
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
			if of, err = a.DB.DocumentCollections(ctx, ids); err != nil {
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
