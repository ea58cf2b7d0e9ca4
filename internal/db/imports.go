package db

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/lorekb/lore/models"
	"github.com/uptrace/bun"
)

// ImportedDocument returns the document an import already created for one
// of its files, if any.
func (d *DB) ImportedDocument(ctx context.Context, importID string, index int) (int64, bool, error) {
	var item models.ImportItem
	err := Classify(d.NewSelect().Model(&item).Where("import_id = ? AND item_index = ?", importID, index).Scan(ctx))
	if errors.Is(err, ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return item.DocumentID, true, nil
}

// CreateImportedDocument creates the document of one imported file and its
// import item in one transaction. When the item already exists (a retried
// activity, or a concurrent attempt that won) nothing is created and the
// existing document's id is returned with created=false: one file never
// makes two documents.
func (d *DB) CreateImportedDocument(ctx context.Context, importID string, index int, doc *models.Document) (int64, bool, error) {
	if id, ok, err := d.ImportedDocument(ctx, importID, index); err != nil || ok {
		return id, false, err
	}
	now := time.Now().UTC()
	doc.CreatedAt, doc.UpdatedAt = now, now
	if doc.ContentVersion == 0 {
		doc.ContentVersion = 1
	}
	err := d.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := d.checkDocCollection(ctx, tx, doc.SiteID, doc.CollectionID); err != nil {
			return err
		}
		if _, err := tx.NewInsert().Model(doc).Exec(ctx); err != nil {
			return err
		}
		_, err := tx.NewInsert().Model(&models.ImportItem{ImportID: importID, ItemIndex: index, DocumentID: doc.ID, CreatedAt: now}).Exec(ctx)
		return err
	})
	if errors.Is(err, ErrConflict) {
		// Another attempt recorded the item first; its document stands.
		if id, ok, rerr := d.ImportedDocument(ctx, importID, index); rerr == nil && ok {
			return id, false, nil
		}
	}
	if err != nil {
		return 0, false, err
	}
	return doc.ID, true, nil
}

// CountImportItems counts the documents an import created (tests, chaos).
func (d *DB) CountImportItems(ctx context.Context, importID string) (int, error) {
	n, err := d.NewSelect().Model((*models.ImportItem)(nil)).Where("import_id = ?", importID).Count(ctx)
	return int(n), Classify(err)
}

// DataSourceFilter narrows a data source list to a tenant and, for callers
// who are not admins, to their sites.
type DataSourceFilter struct {
	TenantID int64 // 0: every tenant (a platform admin)
	// SiteIDs, when non-nil, keeps only data sources of these sites (a
	// site_admin's); tenant-wide data sources are then left out.
	SiteIDs []int64
	SiteID  int64 // only this site's
	Limit   int
	Offset  int
}

// ListDataSources lists data sources, newest first, with the total count.
func (d *DB) ListDataSources(ctx context.Context, f DataSourceFilter) ([]models.DataSource, int, error) {
	var out []models.DataSource
	q := d.NewSelect().Model(&out).OrderExpr("id DESC")
	if f.TenantID > 0 {
		q = q.Where("tenant_id = ?", f.TenantID)
	}
	if f.SiteIDs != nil {
		if len(f.SiteIDs) == 0 {
			return []models.DataSource{}, 0, nil
		}
		q = q.Where("site_id IN (?)", bun.In(f.SiteIDs))
	}
	if f.SiteID > 0 {
		q = q.Where("site_id = ?", f.SiteID)
	}
	if f.Limit > 0 {
		q = q.Limit(int64(f.Limit)).Offset(int64(f.Offset))
	}
	n, err := q.ScanAndCount(ctx)
	if out == nil {
		out = []models.DataSource{}
	}
	for i := range out {
		if err == nil {
			err = d.openDataSource(&out[i])
		}
	}
	return out, int(n), Classify(err)
}

// GetDataSource reads one data source.
func (d *DB) GetDataSource(ctx context.Context, id int64) (*models.DataSource, error) {
	ds := new(models.DataSource)
	if err := d.NewSelect().Model(ds).Where("id = ?", id).Scan(ctx); err != nil {
		return nil, Classify(err)
	}
	return ds, d.openDataSource(ds)
}

// SaveDataSource inserts a new data source (ID 0) or updates one.
func (d *DB) SaveDataSource(ctx context.Context, ds *models.DataSource) error {
	now := time.Now().UTC()
	ds.UpdatedAt = now
	if ds.ID == 0 {
		ds.CreatedAt = now
		return Classify(d.withSealed(&ds.Config, func() error {
			_, err := d.NewInsert().Model(ds).Exec(ctx)
			return err
		}))
	}
	var res sql.Result
	err := d.withSealed(&ds.Config, func() (err error) {
		res, err = d.NewUpdate().Model(ds).WherePK().Exec(ctx)
		return err
	})
	if err != nil {
		return Classify(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// DeleteDataSource removes a data source row (its files stay where they
// are: an external bucket is not Lore's to empty).
func (d *DB) DeleteDataSource(ctx context.Context, id int64) error {
	res, err := d.NewDelete().Model((*models.DataSource)(nil)).Where("id = ?", id).Exec(ctx)
	if err != nil {
		return Classify(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}
