package db

import (
	"context"

	"github.com/uptrace/bun"

	"github.com/lorekb/lore/models"
)

// chunkInsertBatch bounds the rows of one INSERT (10 columns each: well
// under SQLite's and PostgreSQL's parameter limits).
const chunkInsertBatch = 500

// ReplaceChunks makes rows the stored chunks of the documents docIDs: every
// earlier row of those documents (any version) goes, in the same
// transaction, so a reader sees the old set or the new one. Idempotent.
func (d *DB) ReplaceChunks(ctx context.Context, docIDs []int64, rows []models.Chunk) error {
	if len(docIDs) == 0 {
		return nil
	}
	return d.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewDelete().Model((*models.Chunk)(nil)).Where("document_id IN (?)", bun.List(docIDs)).Exec(ctx); err != nil {
			return err
		}
		for i := 0; i < len(rows); i += chunkInsertBatch {
			part := rows[i:min(i+chunkInsertBatch, len(rows))]
			if _, err := tx.NewInsert().Model(&part).Exec(ctx); err != nil {
				return err
			}
		}
		return nil
	})
}

// DeleteDocumentChunks removes the document's chunk rows (its vectors are
// being removed). Idempotent.
func (d *DB) DeleteDocumentChunks(ctx context.Context, documentID int64) error {
	_, err := d.NewDelete().Model((*models.Chunk)(nil)).Where("document_id = ?", documentID).Exec(ctx)
	return Classify(err)
}

// DocumentChunks returns the document's chunk rows ordered by version, then
// index.
func (d *DB) DocumentChunks(ctx context.Context, documentID int64) ([]models.Chunk, error) {
	rows := []models.Chunk{}
	err := d.NewSelect().Model(&rows).Where("document_id = ?", documentID).
		Order("content_version", "chunk_index").Scan(ctx)
	return rows, Classify(err)
}

// ChunkKey names one chunk of a document version.
type ChunkKey struct {
	DocumentID int64
	Version    int64
	Index      int
}

// ChunksByKey returns the rows of the keys that exist (a retrieval result
// names at most a few dozen).
func (d *DB) ChunksByKey(ctx context.Context, keys []ChunkKey) (map[ChunkKey]models.Chunk, error) {
	out := make(map[ChunkKey]models.Chunk, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	docs := make([]int64, 0, len(keys))
	seen := make(map[int64]bool, len(keys))
	want := make(map[ChunkKey]bool, len(keys))
	for _, k := range keys {
		if !seen[k.DocumentID] {
			seen[k.DocumentID] = true
			docs = append(docs, k.DocumentID)
		}
		want[k] = true
	}
	var rows []models.Chunk
	if err := d.NewSelect().Model(&rows).Where("document_id IN (?)", bun.List(docs)).Scan(ctx); err != nil {
		return nil, Classify(err)
	}
	for _, r := range rows {
		k := ChunkKey{DocumentID: r.DocumentID, Version: r.Version, Index: r.Index}
		if want[k] {
			out[k] = r
		}
	}
	return out, nil
}

// SiteRef names a site for a system job.
type SiteRef struct {
	ID       int64  `bun:"id"`
	TenantID int64  `bun:"tenant_id"`
	Name     string `bun:"name"`
}

// SitesWithOldIndex returns the sites (not being deleted) whose index is not
// all of format: a chunk row of another format, or a vectorized document
// without chunk rows (indexed before chunk rows were kept), in id order.
func (d *DB) SitesWithOldIndex(ctx context.Context, format string) ([]SiteRef, error) {
	old := d.NewSelect().Model((*models.Chunk)(nil)).Column("site_id").Where("index_format <> ?", format)
	bare := d.NewSelect().TableExpr("documents AS d").ColumnExpr("d.site_id").
		Where("d.vector_status IN (?)", bun.List([]string{models.VecCompleted, models.VecOutdated})).
		Where("d.chunk_count > 0").
		Where("NOT EXISTS (SELECT 1 FROM chunks AS c WHERE c.document_id = d.id)")
	var out []SiteRef
	err := d.NewSelect().Model((*models.Site)(nil)).Column("id", "tenant_id", "name").
		Where("deleting = ?", false).
		WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where("id IN (?)", old).WhereOr("id IN (?)", bare)
		}).Order("id").Scan(ctx, &out)
	return out, Classify(err)
}
