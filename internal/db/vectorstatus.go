package db

import (
	"context"
	"strings"
	"time"

	"github.com/lorekb/lore/models"
	"github.com/uptrace/bun"
)

// Vector status transitions. Every write is guarded so that a retried or
// superseded activity cannot move a document backwards.

// MarkVectorPending sets the listed documents to pending and returns the ids
// that exist.
func (d *DB) MarkVectorPending(ctx context.Context, ids []int64) ([]int64, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var found []int64
	err := d.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := tx.NewSelect().Model((*models.Document)(nil)).Column("id").
			Where("id IN (?)", bun.List(ids)).Order("id").Scan(ctx, &found); err != nil {
			return err
		}
		if len(found) == 0 {
			return nil
		}
		_, err := tx.NewUpdate().Model((*models.Document)(nil)).
			Set("vector_status = ?", models.VecPending).Set("vector_error = ''").
			Where("id IN (?)", bun.List(found)).Exec(ctx)
		return err
	})
	return found, err
}

// BeginVectorize marks the document processing and returns it with its
// content and current content version.
func (d *DB) BeginVectorize(ctx context.Context, id int64) (*models.Document, error) {
	doc := new(models.Document)
	if err := d.NewSelect().Model(doc).Where("id = ?", id).Scan(ctx); err != nil {
		return nil, Classify(err)
	}
	_, err := d.NewUpdate().Model((*models.Document)(nil)).Set("vector_status = ?", models.VecProcessing).
		Where("id = ?", id).Exec(ctx)
	doc.VectorStatus = models.VecProcessing
	return doc, Classify(err)
}

// FinishVectorize records a successful run of content version: completed when
// the document still has that version, outdated when it was edited meanwhile.
func (d *DB) FinishVectorize(ctx context.Context, id, version int64, chunks int) error {
	now := time.Now().UTC()
	_, err := d.NewUpdate().Model((*models.Document)(nil)).
		Set("vector_status = CASE WHEN content_version = ? THEN ? ELSE ? END", version, models.VecCompleted, models.VecOutdated).
		Set("chunk_count = ?", chunks).Set("vectorized_at = ?", now).Set("vector_error = ''").
		Where("id = ?", id).Exec(ctx)
	return Classify(err)
}

// FailVectorize records a failed run with its reason.
func (d *DB) FailVectorize(ctx context.Context, id int64, reason string) error {
	if len(reason) > 2000 {
		reason = reason[:2000]
	}
	_, err := d.NewUpdate().Model((*models.Document)(nil)).
		Set("vector_status = ?", models.VecFailed).Set("vector_error = ?", reason).
		Where("id = ?", id).Exec(ctx)
	return Classify(err)
}

// ResetVectorStatus marks a document as having no vectors.
func (d *DB) ResetVectorStatus(ctx context.Context, id int64) error {
	_, err := d.NewUpdate().Model((*models.Document)(nil)).
		Set("vector_status = ?", models.VecNone).Set("vector_error = ''").Set("chunk_count = 0").
		Set("vectorized_at = NULL").Where("id = ?", id).Exec(ctx)
	return Classify(err)
}

// MarkTenantVectorsOutdated marks every vectorized document of a tenant as
// outdated (used when the embedding model changes).
func (d *DB) MarkTenantVectorsOutdated(ctx context.Context, tenantID int64) (int, error) {
	res, err := d.NewUpdate().Model((*models.Document)(nil)).Set("vector_status = ?", models.VecOutdated).
		Where("tenant_id = ? AND vector_status = ?", tenantID, models.VecCompleted).Exec(ctx)
	if err != nil {
		return 0, Classify(err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// DocumentScope returns the site and tenant of documents by id (missing ids
// are absent from the map).
func (d *DB) DocumentScope(ctx context.Context, ids []int64) (map[int64][2]int64, error) {
	var rows []models.Document
	err := d.NewSelect().Model(&rows).Column("id", "site_id", "tenant_id").Where("id IN (?)", bun.List(ids)).Scan(ctx)
	out := make(map[int64][2]int64, len(rows))
	for _, r := range rows {
		out[r.ID] = [2]int64{r.SiteID, r.TenantID}
	}
	return out, Classify(err)
}

// SaveJob records (or refreshes) the job row of a workflow.
func (d *DB) SaveJob(ctx context.Context, j *models.Job) error {
	j.CreatedAt = time.Now().UTC()
	_, err := d.NewInsert().Model(j).On("CONFLICT (id) DO UPDATE").
		Set("run_id = EXCLUDED.run_id").Set("subject = EXCLUDED.subject").Set("created_by = EXCLUDED.created_by").
		Set("created_at = EXCLUDED.created_at").Set("tenant_id = EXCLUDED.tenant_id").Set("site_id = EXCLUDED.site_id").
		Set("document_id = EXCLUDED.document_id").Set("title = EXCLUDED.title").Exec(ctx)
	return Classify(err)
}

// GetJob returns a job by id.
func (d *DB) GetJob(ctx context.Context, id string) (*models.Job, error) {
	return selectOne[models.Job](ctx, d, "id = ?", id)
}

// BeginVectorizeMany marks the documents processing and returns them (with
// content) in id order; ids that no longer exist are absent.
func (d *DB) BeginVectorizeMany(ctx context.Context, ids []int64) ([]models.Document, error) {
	var docs []models.Document
	err := d.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := tx.NewSelect().Model(&docs).Where("id IN (?)", bun.List(ids)).Order("id").Scan(ctx); err != nil {
			return err
		}
		_, err := tx.NewUpdate().Model((*models.Document)(nil)).Set("vector_status = ?", models.VecProcessing).
			Where("id IN (?)", bun.List(ids)).Exec(ctx)
		return err
	})
	for i := range docs {
		docs[i].VectorStatus = models.VecProcessing
	}
	return docs, err
}

// VectorizeOutcome is the result of indexing one document version.
type VectorizeOutcome struct {
	ID      int64
	Version int64
	Chunks  int
}

// FinishVectorizeMany records successful runs in one transaction (see
// FinishVectorize for the version guard).
func (d *DB) FinishVectorizeMany(ctx context.Context, outs []VectorizeOutcome) error {
	if len(outs) == 0 {
		return nil
	}
	// One statement for the whole group: WITH v(id, version, chunks) AS
	// (VALUES …) UPDATE documents … FROM v (both dialects).
	var q strings.Builder
	args := make([]any, 0, 3*len(outs)+5)
	q.WriteString("WITH v(id, version, chunks) AS (VALUES ")
	for i, o := range outs {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT))")
		args = append(args, o.ID, o.Version, o.Chunks)
	}
	q.WriteString(") UPDATE documents SET vector_status = CASE WHEN documents.content_version = v.version THEN ? ELSE ? END, " +
		"chunk_count = v.chunks, vectorized_at = ?, vector_error = '' FROM v WHERE documents.id = v.id")
	args = append(args, models.VecCompleted, models.VecOutdated, time.Now().UTC())
	_, err := d.ExecContext(ctx, q.String(), args...)
	return Classify(err)
}

// GetJobs returns the job rows of ids, by id (absent ids are left out).
func (d *DB) GetJobs(ctx context.Context, ids []string) (map[string]models.Job, error) {
	out := make(map[string]models.Job, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var rows []models.Job
	if err := d.NewSelect().Model(&rows).Where("id IN (?)", bun.List(ids)).Scan(ctx); err != nil {
		return nil, Classify(err)
	}
	for _, j := range rows {
		out[j.ID] = j
	}
	return out, nil
}
