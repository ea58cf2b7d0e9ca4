// Package activities holds every piece of I/O done for a workflow, as methods
// on structs that hold the narrow capabilities they use (wiring.go builds
// them from the process dependencies). Activities are idempotent:
// a retry after a crash repeats no visible effect twice.
package activities

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lorekb/lore/internal/chunk"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/embed"
	"github.com/lorekb/lore/internal/telemetry"
	"github.com/lorekb/lore/internal/vector"
	"github.com/lorekb/lore/models"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
)

// Vectorize holds the vectorization activities.
type Vectorize struct {
	DB      VectorizeStore
	Vectors TenantVectors
	// Chunking is the chunk size and overlap of LORE_CHUNK_SIZE and
	// LORE_CHUNK_OVERLAP; the index format of the chunks follows from it.
	Chunking chunk.Options
	Metrics  *telemetry.Metrics // model calls; nil records nothing
}

// VectorizeStore is the database of vectorizing and reindexing documents.
type VectorizeStore interface {
	BeginVectorizeMany(ctx context.Context, ids []int64) ([]models.Document, error)
	ReplaceChunks(ctx context.Context, docIDs []int64, rows []models.Chunk) error
	FinishVectorizeMany(ctx context.Context, outs []db.VectorizeOutcome) error
	DocumentScope(ctx context.Context, ids []int64) (map[int64][2]int64, error)
	DeleteDocumentChunks(ctx context.Context, documentID int64) error
	FailVectorize(ctx context.Context, id int64, reason string) error
	ResetVectorStatus(ctx context.Context, id int64) error
	CountReindex(ctx context.Context, s db.ReindexScope) (int, error)
	ReindexPage(ctx context.Context, s db.ReindexScope, afterID int64, limit int) ([]int64, error)
	MarkVectorPending(ctx context.Context, ids []int64) ([]int64, error)
}

// DocRef names one document (payloads carry ids, never text or vectors).
type DocRef struct {
	DocumentID int64
	TenantID   int64 // used when the row may already be gone (remove vectors)
}

// IndexResult reports one indexing run.
type IndexResult struct {
	Chunks  int   `json:"chunks"`
	Version int64 `json:"content_version"`
	Missing bool  `json:"missing"` // the document no longer exists; nothing was done
}

// embedBatch is how many chunks are embedded and upserted per step; the
// activity heartbeats after each step and resumes after the last finished
// document on retry.
const embedBatch = 64

// DocGroup is a group of documents indexed by one activity (batch jobs).
type DocGroup struct {
	DocumentIDs []int64
}

// GroupResult reports a group: which documents completed or were gone.
type GroupResult struct {
	Completed []int64
	Missing   []int64
	Chunks    int
}

// IndexDocument indexes one document (see indexMany).
func (a *Vectorize) IndexDocument(ctx context.Context, in DocRef) (IndexResult, error) {
	res, outs, err := a.indexMany(ctx, []int64{in.DocumentID})
	if err != nil {
		return IndexResult{}, err
	}
	if len(res.Missing) > 0 {
		return IndexResult{Missing: true}, nil
	}
	return IndexResult{Chunks: res.Chunks, Version: outs[0].Version}, nil
}

// IndexDocuments indexes a group of documents in one activity: one read,
// embedding and upserts batched across documents, one write of the results.
// Batch jobs use it so per-document orchestration does not dominate.
func (a *Vectorize) IndexDocuments(ctx context.Context, in DocGroup) (GroupResult, error) {
	res, _, err := a.indexMany(ctx, in.DocumentIDs)
	return res, err
}

// progressMark is the heartbeat detail: documents already indexed in this
// activity, skipped when a retry resumes.
type progressMark struct {
	Done map[int64]int64 // document id → content version indexed
}

// indexMany loads the documents, chunks them, embeds the chunks in batches,
// upserts them under deterministic ids (document, content version, index),
// drops chunks of other versions and marks the documents. A retry overwrites
// the same ids, so it never duplicates a vector.
func (a *Vectorize) indexMany(ctx context.Context, ids []int64) (GroupResult, []db.VectorizeOutcome, error) {
	var res GroupResult
	docs, err := a.DB.BeginVectorizeMany(ctx, ids)
	if err != nil {
		return res, nil, err
	}
	found := map[int64]bool{}
	for _, d := range docs {
		found[d.ID] = true
	}
	for _, id := range ids {
		if !found[id] {
			res.Missing = append(res.Missing, id)
		}
	}
	mark := progressMark{Done: map[int64]int64{}}
	if activity.HasHeartbeatDetails(ctx) {
		var prev progressMark
		if activity.GetHeartbeatDetails(ctx, &prev) == nil && prev.Done != nil {
			mark = prev
		}
	}
	opts := a.Chunking
	format := vector.IndexFormat(opts.Size, opts.Overlap)
	var outs []db.VectorizeOutcome
	// Documents are processed in runs that fill an embedding batch; a run's
	// documents are finished (stale versions dropped) before the heartbeat
	// records them as done.
	type pending struct {
		doc    *models.Document
		pieces []chunk.Piece
		lead   string
	}
	var run []pending
	runChunks := 0
	flush := func(emb embed.Embedder, store vector.Store) error {
		if len(run) == 0 {
			return nil
		}
		var texts []string
		var chunks []vector.Chunk
		for _, p := range run {
			for _, pc := range p.pieces {
				texts = append(texts, chunk.EmbedText(p.doc.Title, p.lead, pc))
				chunks = append(chunks, vector.Chunk{
					ID: vector.ChunkID(p.doc.ID, p.doc.ContentVersion, pc.Index), SiteID: p.doc.SiteID, DocumentID: p.doc.ID,
					Version: p.doc.ContentVersion, Index: pc.Index, Title: p.doc.Title, Heading: pc.Heading, Text: pc.Text,
				})
			}
		}
		for i := 0; i < len(texts); i += embedBatch {
			end := min(i+embedBatch, len(texts))
			t0 := time.Now()
			vecs, err := emb.Embed(ctx, texts[i:end])
			a.Metrics.ObserveModel("embedding", emb.Model(), time.Since(t0), 0, 0, err)
			if err != nil {
				return classify(err)
			}
			for j, v := range vecs {
				chunks[i+j].Vector = v
			}
		}
		if len(chunks) > 0 {
			if err := store.Upsert(ctx, chunks); err != nil {
				return classify(err)
			}
		}
		docIDs := make([]int64, len(run))
		var rows []models.Chunk
		at := 0 // the run's first chunk in chunks
		for i, p := range run {
			if err := store.DeleteStaleVersions(ctx, p.doc.ID, p.doc.ContentVersion); err != nil {
				return err
			}
			if err := dropSurplus(ctx, store, p.doc, chunks[at:at+len(p.pieces)]); err != nil {
				return err
			}
			at += len(p.pieces)
			docIDs[i] = p.doc.ID
			rows = append(rows, chunkRows(p.doc, p.pieces, format)...)
		}
		// The database's record of the chunks, after the store holds them.
		if err := a.DB.ReplaceChunks(ctx, docIDs, rows); err != nil {
			return err
		}
		for _, p := range run {
			mark.Done[p.doc.ID] = p.doc.ContentVersion
			outs = append(outs, db.VectorizeOutcome{ID: p.doc.ID, Version: p.doc.ContentVersion, Chunks: len(p.pieces)})
		}
		activity.RecordHeartbeat(ctx, mark)
		run, runChunks = nil, 0
		return nil
	}
	var emb embed.Embedder
	var store vector.Store
	tenant := int64(-1)
	for i := range docs {
		doc := &docs[i]
		if doc.TenantID != tenant {
			if err := flush(emb, store); err != nil {
				return res, nil, err
			}
			if emb, store, err = a.Vectors.TenantVectors(ctx, doc.TenantID); err != nil {
				return res, nil, err
			}
			tenant = doc.TenantID
		}
		pieces := chunk.Split(doc.Content, opts)
		if v, ok := mark.Done[doc.ID]; ok && v == doc.ContentVersion {
			outs = append(outs, db.VectorizeOutcome{ID: doc.ID, Version: doc.ContentVersion, Chunks: len(pieces)})
			continue // indexed by an earlier attempt
		}
		run = append(run, pending{doc: doc, pieces: pieces, lead: chunk.Lead(doc.Content)})
		runChunks += len(pieces)
		if runChunks >= embedBatch*4 {
			if err := flush(emb, store); err != nil {
				return res, nil, err
			}
		}
	}
	if err := flush(emb, store); err != nil {
		return res, nil, err
	}
	if err := a.DB.FinishVectorizeMany(ctx, outs); err != nil {
		return res, nil, err
	}
	// A document deleted while this run indexed it may have had its vectors
	// removed before the upsert above: drop them now. (A deletion after this
	// check starts its own removal, which runs after the upsert.)
	if len(outs) > 0 {
		ids := make([]int64, len(outs))
		for i, o := range outs {
			ids[i] = o.ID
		}
		scope, err := a.DB.DocumentScope(ctx, ids)
		if err != nil {
			return res, nil, err
		}
		kept := outs[:0]
		for _, o := range outs {
			if _, ok := scope[o.ID]; ok {
				kept = append(kept, o)
				continue
			}
			if err := store.DeleteDocument(ctx, o.ID); err != nil {
				return res, nil, err
			}
			if err := a.DB.DeleteDocumentChunks(ctx, o.ID); err != nil {
				return res, nil, err
			}
			res.Missing = append(res.Missing, o.ID)
		}
		outs = kept
	}
	for _, o := range outs {
		res.Completed = append(res.Completed, o.ID)
		res.Chunks += o.Chunks
	}
	return res, outs, nil
}

// dropSurplus removes chunks of the document's current version beyond the
// ones just written: a re-index of an unchanged version (after an analyzer or
// chunking change) can cut fewer chunks than the earlier index, and
// DeleteStaleVersions only removes other versions. The document had at least
// chunk_count chunks of some version before, so only a shrink costs a count;
// the rare surplus is removed by deleting the document and writing its new
// chunks again (a moment in which the document has no chunks, never a
// moment in which old and new are mixed).
func dropSurplus(ctx context.Context, store vector.Store, doc *models.Document, written []vector.Chunk) error {
	if doc.ChunkCount <= len(written) {
		return nil
	}
	n, err := store.CountDocument(ctx, doc.ID)
	if err != nil || n <= len(written) {
		return classify(err)
	}
	if err := store.DeleteDocument(ctx, doc.ID); err != nil {
		return classify(err)
	}
	if len(written) == 0 {
		return nil
	}
	return classify(store.Upsert(ctx, written))
}

// chunkRows are the database rows of a document's pieces, each located in
// the content (the pieces are trimmed slices of it in order, an overlap
// prefix repeating the previous piece's end; a piece that is not a verbatim
// slice, such as a long code block fenced again, gets -1).
func chunkRows(doc *models.Document, pieces []chunk.Piece, format string) []models.Chunk {
	rows := make([]models.Chunk, len(pieces))
	content := doc.Content
	from, runes := 0, 0 // byte offset where the next piece may start, runes before it
	for i, p := range pieces {
		rows[i] = models.Chunk{DocumentID: doc.ID, Version: doc.ContentVersion, Index: p.Index, SiteID: doc.SiteID,
			Heading: p.Heading, Text: p.Text, Start: -1, End: -1, IndexFormat: format}
		at := strings.Index(content[from:], p.Text)
		if p.Text == "" || at < 0 {
			continue
		}
		at += from
		runes += utf8.RuneCountInString(content[from:at])
		rows[i].Start = runes
		rows[i].End = runes + utf8.RuneCountInString(p.Text)
		// The next piece starts after this one's first rune (its overlap
		// may repeat this one's end).
		_, size := utf8.DecodeRuneInString(content[at:])
		from = at + size
		runes++
	}
	return rows
}

// MarkFailed records a vectorization that failed for good.
func (a *Vectorize) MarkFailed(ctx context.Context, in DocRef, reason string) error {
	err := a.DB.FailVectorize(ctx, in.DocumentID, reason)
	if errors.Is(err, db.ErrNotFound) {
		return nil
	}
	return err
}

// RemoveVectors deletes every chunk of the document, from every
// dimension's store (the tenant may have changed embedding models since
// the document was indexed), and resets its status.
func (a *Vectorize) RemoveVectors(ctx context.Context, in DocRef) error {
	err := a.Vectors.EachVectorStore(ctx, func(s vector.Store) error { return s.DeleteDocument(ctx, in.DocumentID) })
	if err != nil {
		return classify(err)
	}
	if err := a.DB.DeleteDocumentChunks(ctx, in.DocumentID); err != nil {
		return err
	}
	return a.DB.ResetVectorStatus(ctx, in.DocumentID)
}

// classify turns errors that retrying cannot fix into non-retryable
// application errors, so Temporal stops retrying and the workflow records
// the failure on the document.
func classify(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, embed.ErrPermanent) || errors.Is(err, vector.ErrDimension) || errors.Is(err, vector.ErrPermanent) {
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrPermanent, err)
	}
	return fmt.Errorf("%w", err)
}
