package db

import (
	"context"
	"time"

	"github.com/lorekb/lore/models"
	"github.com/uptrace/bun"
)

// ReindexScope selects the documents a re-index covers: those of one site,
// or of every site of a tenant (SiteID 0), that are published or have been
// vectorized before (any vector_status but none).
type ReindexScope struct {
	TenantID int64
	SiteID   int64
}

func (s ReindexScope) apply(q *bun.SelectQuery) *bun.SelectQuery {
	q = q.Where("tenant_id = ?", s.TenantID)
	if s.SiteID != 0 {
		q = q.Where("site_id = ?", s.SiteID)
	}
	return q.Where("(status = ? OR vector_status <> ?)", models.DocPublished, models.VecNone)
}

// CountReindex counts the documents of a re-index.
func (d *DB) CountReindex(ctx context.Context, s ReindexScope) (int, error) {
	n, err := s.apply(d.NewSelect().Model((*models.Document)(nil))).Count(ctx)
	return int(n), Classify(err)
}

// ReindexPage returns up to limit ids of the re-index after afterID, in id
// order (a keyset page: no offset, so page n costs what page 1 does).
func (d *DB) ReindexPage(ctx context.Context, s ReindexScope, afterID int64, limit int) ([]int64, error) {
	var ids []int64
	err := s.apply(d.NewSelect().Model((*models.Document)(nil)).Column("id")).
		Where("id > ?", afterID).Order("id").Limit(int64(limit)).Scan(ctx, &ids)
	return ids, Classify(err)
}

// VectorStats is a site's indexing at a glance.
type VectorStats struct {
	Documents int            `json:"documents"`
	ByStatus  map[string]int `json:"by_status" doc:"documents by vector_status (every status present, 0 when none)"`
	Chunks    int64          `json:"chunks" doc:"chunks stored for the documents' vectorized versions"`
	Outdated  int            `json:"outdated" doc:"documents whose vectors are of an older version or embedding model"`
	LastError *VectorError   `json:"last_error" doc:"the most recently failed document, null when none failed"`
}

// VectorError is a document whose vectorization failed.
type VectorError struct {
	DocumentID int64     `json:"document_id"`
	Title      string    `json:"title"`
	Error      string    `json:"error"`
	UpdatedAt  time.Time `json:"updated_at" doc:"when the document row last changed"`
}

// SiteVectorStats counts a site's documents by vector status, their chunks,
// and its latest vectorization failure.
func (d *DB) SiteVectorStats(ctx context.Context, siteID int64) (*VectorStats, error) {
	var rows []struct {
		VectorStatus string `bun:"vector_status"`
		N            int    `bun:"n"`
		Chunks       int64  `bun:"chunks"`
	}
	err := d.NewSelect().Model((*models.Document)(nil)).Column("vector_status").
		ColumnExpr("COUNT(*) AS n").ColumnExpr("COALESCE(SUM(chunk_count), 0) AS chunks").
		Where("site_id = ?", siteID).Group("vector_status").Scan(ctx, &rows)
	if err != nil {
		return nil, Classify(err)
	}
	st := &VectorStats{ByStatus: map[string]int{}}
	for _, s := range []string{models.VecNone, models.VecPending, models.VecProcessing, models.VecCompleted, models.VecFailed, models.VecOutdated} {
		st.ByStatus[s] = 0
	}
	for _, r := range rows {
		st.ByStatus[r.VectorStatus] += r.N
		st.Documents += r.N
		st.Chunks += r.Chunks
	}
	st.Outdated = st.ByStatus[models.VecOutdated]
	var last []models.Document
	err = d.NewSelect().Model(&last).Column("id", "title", "vector_error", "updated_at").
		Where("site_id = ? AND vector_status = ?", siteID, models.VecFailed).Order("updated_at DESC", "id DESC").Limit(1).Scan(ctx)
	if err != nil {
		return nil, Classify(err)
	}
	if len(last) == 1 {
		st.LastError = &VectorError{DocumentID: last[0].ID, Title: last[0].Title, Error: last[0].VectorError, UpdatedAt: last[0].UpdatedAt}
	}
	return st, nil
}
