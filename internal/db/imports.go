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
	err := d.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := d.insertNewDocument(ctx, tx, doc, now, models.RevisionImport); err != nil {
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

// ImportedDoc is a document an import created for one of its files.
type ImportedDoc struct {
	Index int
	ID    int64
	Title string
}

// ImportedDocuments returns the documents an import already created for
// the given file indexes (one query for a batch, so a retried batch skips
// its done files), keyed by index.
func (d *DB) ImportedDocuments(ctx context.Context, importID string, indexes []int) (map[int]ImportedDoc, error) {
	out := map[int]ImportedDoc{}
	if len(indexes) == 0 {
		return out, nil
	}
	var rows []struct {
		ItemIndex  int    `bun:"item_index"`
		DocumentID int64  `bun:"document_id"`
		Title      string `bun:"title"`
	}
	err := d.NewSelect().TableExpr("import_items AS it").
		ColumnExpr("it.item_index, it.document_id, COALESCE(d.title, '') AS title").
		Join("LEFT JOIN documents AS d ON d.id = it.document_id").
		Where("it.import_id = ? AND it.item_index IN (?)", importID, bun.List(indexes)).Scan(ctx, &rows)
	if err != nil {
		return nil, Classify(err)
	}
	for _, r := range rows {
		out[r.ItemIndex] = ImportedDoc{Index: r.ItemIndex, ID: r.DocumentID, Title: r.Title}
	}
	return out, nil
}

// NewImportedDoc is one document of CreateImportedDocuments.
type NewImportedDoc struct {
	Index int
	Doc   *models.Document
}

// CreateImportedDocuments creates the documents of several files of one
// import (one batch) and their import items in one transaction, the
// per-file cost of a round trip and a commit paid once. When an item
// already exists (a concurrent attempt won) the transaction is undone and
// each file goes through CreateImportedDocument, which keeps the existing
// document: one file never makes two documents. created[i] is false where
// an earlier attempt had created docs[i]'s document.
func (d *DB) CreateImportedDocuments(ctx context.Context, importID string, docs []NewImportedDoc) (created []bool, err error) {
	if len(docs) == 0 {
		return nil, nil
	}
	now := time.Now().UTC()
	rows := make([]*models.Document, len(docs))
	for i, nd := range docs {
		nd.Doc.CreatedAt, nd.Doc.UpdatedAt = now, now
		if nd.Doc.ContentVersion == 0 {
			nd.Doc.ContentVersion = 1
		}
		rows[i] = nd.Doc
	}
	err = d.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		checked := map[int64]bool{}
		for _, r := range rows {
			if r.CollectionID != nil && checked[*r.CollectionID] {
				continue
			}
			if err := d.checkDocCollection(ctx, tx, r.SiteID, r.CollectionID); err != nil {
				return err
			}
			if r.CollectionID != nil {
				checked[*r.CollectionID] = true
			}
		}
		if err := d.insertDocuments(ctx, tx, rows); err != nil {
			return err
		}
		if err := d.createdRevisions(ctx, tx, rows, models.RevisionImport); err != nil {
			return err
		}
		items := make([]models.ImportItem, len(docs))
		for i, nd := range docs {
			items[i] = models.ImportItem{ImportID: importID, ItemIndex: nd.Index, DocumentID: nd.Doc.ID, CreatedAt: now}
		}
		_, err := tx.NewInsert().Model(&items).Exec(ctx)
		return err
	})
	created = make([]bool, len(docs))
	if errors.Is(err, ErrConflict) {
		for i, nd := range docs {
			nd.Doc.ID = 0
			id, c, err := d.CreateImportedDocument(ctx, importID, nd.Index, nd.Doc)
			if err != nil {
				return nil, err
			}
			nd.Doc.ID, created[i] = id, c
		}
		return created, nil
	}
	if err != nil {
		return nil, err
	}
	for i := range created {
		created[i] = true
	}
	return created, nil
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
		q = q.Where("site_id IN (?)", bun.List(f.SiteIDs))
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
	return oneRow(res, err)
}

// DeleteDataSource removes a data source row (its files stay where they
// are: an external bucket is not Lore's to empty).
func (d *DB) DeleteDataSource(ctx context.Context, id int64) error {
	return Classify(deleteByID(ctx, d, (*models.DataSource)(nil), id))
}
