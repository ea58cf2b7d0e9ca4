// Package activities holds every piece of I/O done for a workflow, as methods
// on structs that hold the process dependencies. Activities are idempotent:
// a retry after a crash repeats no visible effect twice.
package activities

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lorekb/lore/internal/chunk"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/internal/embed"
	"github.com/lorekb/lore/internal/vector"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
)

// Vectorize holds the vectorization activities.
type Vectorize struct {
	D *deps.Deps
}

// DocRef names one document (payloads carry ids, never text or vectors).
type DocRef struct {
	DocumentID int64
	TenantID   int64 // used when the row may already be gone (remove vectors)
}

// IndexResult reports one indexing run.
type IndexResult struct {
	Chunks  int
	Version int64
	Missing bool // the document no longer exists; nothing was done
}

// embedBatch is how many chunks are embedded and upserted per step; the
// activity heartbeats after each step and resumes from the last one on retry.
const embedBatch = 64

// IndexDocument loads the document, chunks it, embeds the chunks in batches,
// upserts them under deterministic ids (document, content version, index),
// drops chunks of other versions and marks the document. A retry overwrites
// the same ids, so it never duplicates a vector.
func (a *Vectorize) IndexDocument(ctx context.Context, in DocRef) (IndexResult, error) {
	doc, err := a.D.DB.BeginVectorize(ctx, in.DocumentID)
	if errors.Is(err, db.ErrNotFound) {
		return IndexResult{Missing: true}, nil
	}
	if err != nil {
		return IndexResult{}, err
	}
	emb, store, err := a.D.TenantVectors(ctx, doc.TenantID)
	if err != nil {
		return IndexResult{}, err
	}
	pieces := chunk.Split(doc.Content, chunk.Options{Size: a.D.Cfg.ChunkSize, Overlap: a.D.Cfg.ChunkOverlap})
	start := 0
	if activity.HasHeartbeatDetails(ctx) {
		var resume struct {
			Version int64
			Next    int
		}
		if activity.GetHeartbeatDetails(ctx, &resume) == nil && resume.Version == doc.ContentVersion {
			start = resume.Next
		}
	}
	for i := start; i < len(pieces); i += embedBatch {
		end := min(i+embedBatch, len(pieces))
		texts := make([]string, 0, end-i)
		for _, p := range pieces[i:end] {
			texts = append(texts, embedText(doc.Title, p))
		}
		t0 := time.Now()
		vecs, err := emb.Embed(ctx, texts)
		a.D.Metrics.ObserveModel("embedding", emb.Model(), time.Since(t0), 0, 0, err)
		if err != nil {
			return IndexResult{}, classify(err)
		}
		chunks := make([]vector.Chunk, 0, len(vecs))
		for j, p := range pieces[i:end] {
			chunks = append(chunks, vector.Chunk{
				ID: vector.ChunkID(doc.ID, doc.ContentVersion, p.Index), SiteID: doc.SiteID, DocumentID: doc.ID,
				Version: doc.ContentVersion, Index: p.Index, Title: doc.Title, Heading: p.Heading,
				Text: p.Text, Vector: vecs[j],
			})
		}
		if err := store.Upsert(ctx, chunks); err != nil {
			return IndexResult{}, classify(err)
		}
		activity.RecordHeartbeat(ctx, struct {
			Version int64
			Next    int
		}{doc.ContentVersion, end})
	}
	if err := store.DeleteStaleVersions(ctx, doc.ID, doc.ContentVersion); err != nil {
		return IndexResult{}, err
	}
	if err := a.D.DB.FinishVectorize(ctx, doc.ID, doc.ContentVersion, len(pieces)); err != nil {
		return IndexResult{}, err
	}
	return IndexResult{Chunks: len(pieces), Version: doc.ContentVersion}, nil
}

// embedText is what gets embedded for a chunk: title and heading path give
// the fragment its context.
func embedText(title string, p chunk.Piece) string {
	if p.Heading != "" {
		return title + "\n" + p.Heading + "\n" + p.Text
	}
	return title + "\n" + p.Text
}

// MarkFailed records a vectorization that failed for good.
func (a *Vectorize) MarkFailed(ctx context.Context, in DocRef, reason string) error {
	err := a.D.DB.FailVectorize(ctx, in.DocumentID, reason)
	if errors.Is(err, db.ErrNotFound) {
		return nil
	}
	return err
}

// RemoveVectors deletes every chunk of the document and resets its status.
func (a *Vectorize) RemoveVectors(ctx context.Context, in DocRef) error {
	_, store, err := a.D.TenantVectors(ctx, in.TenantID)
	if err != nil {
		return err
	}
	if err := store.DeleteDocument(ctx, in.DocumentID); err != nil {
		return err
	}
	return a.D.DB.ResetVectorStatus(ctx, in.DocumentID)
}

// classify turns errors that retrying cannot fix into non-retryable
// application errors, so Temporal stops retrying and the workflow records
// the failure on the document.
func classify(err error) error {
	if errors.Is(err, embed.ErrPermanent) || errors.Is(err, vector.ErrDimension) {
		return temporal.NewNonRetryableApplicationError(err.Error(), "Permanent", err)
	}
	return fmt.Errorf("%w", err)
}
