package db

import (
	"context"
	"errors"
	"time"

	"github.com/lorekb/lore/models"
	"github.com/uptrace/bun"
)

// GetSyncSettings reads how a data source syncs (ErrNotFound: it was never
// given a sync object).
func (d *DB) GetSyncSettings(ctx context.Context, dataSourceID int64) (*models.SyncSettings, error) {
	s := new(models.SyncSettings)
	if err := d.NewSelect().Model(s).Where("data_source_id = ?", dataSourceID).Scan(ctx); err != nil {
		return nil, Classify(err)
	}
	return s, nil
}

// SaveSyncSettings inserts or replaces a data source's sync settings.
func (d *DB) SaveSyncSettings(ctx context.Context, s *models.SyncSettings) error {
	s.UpdatedAt = time.Now().UTC()
	_, err := d.NewInsert().Model(s).On("CONFLICT (data_source_id) DO UPDATE").
		Set("schedule = EXCLUDED.schedule").Set("collection_id = EXCLUDED.collection_id").
		Set("publish = EXCLUDED.publish").Set("delete_share = EXCLUDED.delete_share").
		Set("updated_at = EXCLUDED.updated_at").Exec(ctx)
	return Classify(err)
}

// DeleteSyncData removes a data source's sync settings, items and runs (its
// documents stay: they are the site's now).
func (d *DB) DeleteSyncData(ctx context.Context, dataSourceID int64) error {
	return d.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		for _, m := range []any{(*models.SyncSettings)(nil), (*models.SyncItem)(nil), (*models.SyncRun)(nil)} {
			if _, err := tx.NewDelete().Model(m).Where("data_source_id = ?", dataSourceID).Exec(ctx); err != nil {
				return err
			}
		}
		return nil
	})
}

// SyncItems returns every item of a data source, by key, at most limit (0:
// all).
func (d *DB) SyncItems(ctx context.Context, dataSourceID int64, limit int) ([]models.SyncItem, error) {
	out := []models.SyncItem{}
	q := d.NewSelect().Model(&out).Where("data_source_id = ?", dataSourceID).Order("item_key")
	if limit > 0 {
		q = q.Limit(int64(limit))
	}
	return out, Classify(q.Scan(ctx))
}

// SyncItemsByKey returns the items of the given keys, by key.
func (d *DB) SyncItemsByKey(ctx context.Context, dataSourceID int64, keys []string) (map[string]models.SyncItem, error) {
	out := map[string]models.SyncItem{}
	if len(keys) == 0 {
		return out, nil
	}
	var rows []models.SyncItem
	for i := 0; i < len(keys); i += 500 {
		var part []models.SyncItem
		err := d.NewSelect().Model(&part).Where("data_source_id = ? AND item_key IN (?)", dataSourceID, bun.List(keys[i:min(i+500, len(keys))])).Scan(ctx)
		if err != nil {
			return nil, Classify(err)
		}
		rows = append(rows, part...)
	}
	for _, r := range rows {
		out[r.Key] = r
	}
	return out, nil
}

// SyncItemOfDocument returns the item a document was synced from
// (ErrNotFound: it was not).
func (d *DB) SyncItemOfDocument(ctx context.Context, documentID int64) (*models.SyncItem, error) {
	it := new(models.SyncItem)
	err := d.NewSelect().Model(it).Where("document_id = ?", documentID).Limit(1).Scan(ctx)
	return it, Classify(err)
}

// NewSyncedDoc is a document a sync creates with its item.
type NewSyncedDoc struct {
	Doc  *models.Document
	Item *models.SyncItem
}

// CreateSyncedDocuments creates documents with their items in one
// transaction. An item that exists already (a retried activity whose
// earlier attempt committed) keeps its document: its key is skipped and
// created[i] is false, with the existing document's id set on Doc.ID. One
// file or page never makes two documents.
func (d *DB) CreateSyncedDocuments(ctx context.Context, docs []NewSyncedDoc) (created []bool, err error) {
	created = make([]bool, len(docs))
	if len(docs) == 0 {
		return created, nil
	}
	err = d.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		keys := make([]string, len(docs))
		for i, nd := range docs {
			keys[i] = nd.Item.Key
		}
		var have []models.SyncItem
		q := tx.NewSelect().Model(&have).Where("data_source_id = ? AND item_key IN (?)", docs[0].Item.DataSourceID, bun.List(keys))
		if d.Postgres() {
			q = q.For("UPDATE")
		}
		if err := q.Scan(ctx); err != nil {
			return err
		}
		exists := map[string]int64{}
		for _, h := range have {
			exists[h.Key] = h.DocumentID
		}
		now := time.Now().UTC()
		var rows []*models.Document
		var at []int
		checked := map[int64]bool{}
		for i, nd := range docs {
			if id, ok := exists[nd.Item.Key]; ok {
				nd.Doc.ID = id
				continue
			}
			nd.Doc.CreatedAt, nd.Doc.UpdatedAt = now, now
			if nd.Doc.ContentVersion == 0 {
				nd.Doc.ContentVersion = 1
			}
			if c := nd.Doc.CollectionID; c != nil && !checked[*c] {
				if err := d.checkDocCollection(ctx, tx, nd.Doc.SiteID, c); err != nil {
					return err
				}
				checked[*c] = true
			}
			rows = append(rows, nd.Doc)
			at = append(at, i)
		}
		if len(rows) == 0 {
			return nil
		}
		if err := d.insertDocuments(ctx, tx, rows); err != nil {
			return err
		}
		if err := d.createdRevisions(ctx, tx, rows, models.RevisionSync); err != nil {
			return err
		}
		items := make([]models.SyncItem, len(at))
		for k, i := range at {
			it := *docs[i].Item
			it.DocumentID, it.SyncedRevision, it.SyncedAt = docs[i].Doc.ID, docs[i].Doc.ContentVersion, now
			items[k] = it
			created[i] = true
		}
		// One row a statement: a multi-row insert on SQLite leaves out a
		// column whose first row is empty (its default), for every row.
		for i := range items {
			if _, err := tx.NewInsert().Model(&items[i]).Exec(ctx); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return created, nil
}

// SyncedUpdate is a synced document a sync changes with its item.
type SyncedUpdate struct {
	DocumentID int64
	Change     func(doc *models.Document) error // as UpdateDocument's
	// Meta is the parse_meta to store, given the row after the change.
	Meta func(after *models.Document) string
	Item *models.SyncItem // written with the document's id and version
}

// UpdateSyncedDocuments applies a sync's changes to its documents in one
// transaction, as UpdateDocument would each (a new title or content is a
// new version with its revision), with their parse_meta and items, in a
// few statements for the whole batch: the documents read at once, written
// at once, their revisions and their items. A document gone (deleted in
// Lore) is left out: missing[i] says so, and its item is not written.
// After the commit, after[i] is the row as written.
func (d *DB) UpdateSyncedDocuments(ctx context.Context, ups []SyncedUpdate) (after []*models.Document, missing []bool, err error) {
	after, missing = make([]*models.Document, len(ups)), make([]bool, len(ups))
	ids := make([]int64, len(ups))
	for i, u := range ups {
		ids[i] = u.DocumentID
	}
	var written []int64
	err = d.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		written = written[:0]
		var docs []*models.Document
		q := tx.NewSelect().Model(&docs).Where("id IN (?)", bun.List(ids)).Order("id")
		if d.Postgres() {
			q = q.For("UPDATE")
		}
		if err := q.Scan(ctx); err != nil {
			return err
		}
		byID := make(map[int64]*models.Document, len(docs))
		for _, doc := range docs {
			byID[doc.ID] = doc
		}
		var rows, olds []*models.Document
		var words []string
		var revs []*models.DocumentRevision
		var items []*models.SyncItem
		at := map[int64]int{} // a document's place in rows (two changes of one document: one row)
		now := time.Now().UTC()
		for i, u := range ups {
			doc, ok := byID[u.DocumentID]
			if !ok {
				missing[i] = true
				continue
			}
			old := *doc
			if err := u.Change(doc); err != nil {
				return err
			}
			if !sameParent(old.CollectionID, doc.CollectionID) {
				if err := d.checkDocCollection(ctx, tx, doc.SiteID, doc.CollectionID); err != nil {
					return err
				}
			}
			if doc.Title != old.Title || doc.Content != old.Content {
				doc.ContentVersion = old.ContentVersion + 1
				if old.VectorStatus == models.VecCompleted {
					doc.VectorStatus = models.VecOutdated
				}
				if !d.revisionsOff.Load() {
					revs = append(revs, newRevision(doc, revisionMeta(ctx, models.RevisionEdit, doc), now))
				}
			}
			doc.UpdatedAt = now
			meta := u.Meta(doc)
			doc.ParseMeta = &meta
			k, seen := at[doc.ID]
			if !seen {
				k = len(rows)
				at[doc.ID] = k
				rows, olds, words = append(rows, doc), append(olds, &old), append(words, "")
			}
			if d.Postgres() && (doc.Content != old.Content || words[k] != "") {
				words[k] = ContentWords(doc.Content)
			}
			u.Item.DocumentID, u.Item.SyncedRevision = doc.ID, doc.ContentVersion
			items = append(items, u.Item)
			a := *doc
			after[i] = &a
		}
		if len(rows) == 0 {
			return nil
		}
		if err := d.updateSyncedRows(ctx, tx, rows, olds, words); err != nil {
			return err
		}
		if err := d.saveRevisions(ctx, tx, revs); err != nil {
			return err
		}
		for _, doc := range rows {
			written = append(written, doc.ID)
		}
		return d.saveSyncItems(ctx, tx, items)
	})
	if err != nil {
		return nil, nil, err
	}
	if len(written) > 0 {
		d.changed(ctx, Change{Documents: written})
	}
	return after, missing, nil
}

// SaveSyncItem writes an item (insert or replace), with the time it was
// synced.
func (d *DB) SaveSyncItem(ctx context.Context, it *models.SyncItem) error {
	return Classify(saveSyncItem(ctx, d.DB, it))
}

func saveSyncItem(ctx context.Context, db bun.IDB, it *models.SyncItem) error {
	it.SyncedAt = time.Now().UTC()
	_, err := db.NewInsert().Model(it).On("CONFLICT (data_source_id, item_key) DO UPDATE").
		Set("site_id = EXCLUDED.site_id").Set("document_id = EXCLUDED.document_id").Set("version = EXCLUDED.version").
		Set("ref = EXCLUDED.ref").Set("etag = EXCLUDED.etag").Set("last_modified = EXCLUDED.last_modified").
		Set("links = EXCLUDED.links").Set("synced_revision = EXCLUDED.synced_revision").
		Set("run_id = EXCLUDED.run_id").Set("synced_at = EXCLUDED.synced_at").Exec(ctx)
	return err
}

// RenameSyncItem moves an item to a new key (a file renamed in the
// repository): its document stays the same.
func (d *DB) RenameSyncItem(ctx context.Context, dataSourceID int64, from string, it *models.SyncItem) error {
	return d.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewDelete().Model((*models.SyncItem)(nil)).Where("data_source_id = ? AND item_key = ?", dataSourceID, from).Exec(ctx); err != nil {
			return err
		}
		it.SyncedAt = time.Now().UTC()
		_, err := tx.NewInsert().Model(it).On("CONFLICT (data_source_id, item_key) DO NOTHING").Exec(ctx)
		return err
	})
}

// SetDocumentParseMeta replaces a document's parse_meta (a sync's
// provenance) without touching its content or version.
func (d *DB) SetDocumentParseMeta(ctx context.Context, documentID int64, meta string) error {
	_, err := d.NewUpdate().Model((*models.Document)(nil)).Set("parse_meta = ?", meta).Where("id = ?", documentID).Exec(ctx)
	if err == nil {
		d.changed(ctx, Change{Documents: []int64{documentID}})
	}
	return Classify(err)
}

// DeleteSyncedDocument deletes the document of an item (with its chunk
// rows) and the item, in one transaction. A document already gone leaves
// only the item to delete.
func (d *DB) DeleteSyncedDocument(ctx context.Context, dataSourceID int64, key string, documentID int64) error {
	err := d.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewDelete().Model((*models.Chunk)(nil)).Where("document_id = ?", documentID).Exec(ctx); err != nil {
			return err
		}
		if _, err := tx.NewDelete().Model((*models.Document)(nil)).Where("id = ?", documentID).Exec(ctx); err != nil {
			return err
		}
		_, err := tx.NewDelete().Model((*models.SyncItem)(nil)).Where("data_source_id = ? AND item_key = ?", dataSourceID, key).Exec(ctx)
		return err
	})
	if err == nil {
		d.changed(ctx, Change{Documents: []int64{documentID}})
	}
	return err
}

// BeginSyncRun records run (found by its job id when an earlier attempt
// recorded it) and tries to make it the data source's running sync. When
// another run holds the data source it returns that run and leaves this one
// waiting; else it returns nil and run is running.
func (d *DB) BeginSyncRun(ctx context.Context, run *models.SyncRun) (holder *models.SyncRun, err error) {
	existing := new(models.SyncRun)
	err = Classify(d.NewSelect().Model(existing).Where("job_id = ?", run.JobID).Scan(ctx))
	switch {
	case errors.Is(err, ErrNotFound):
		run.CreatedAt = time.Now().UTC()
		run.Status = models.SyncWaiting
		if _, err := d.NewInsert().Model(run).On("CONFLICT (job_id) DO NOTHING").Exec(ctx); err != nil {
			return nil, Classify(err)
		}
		if err := d.NewSelect().Model(run).Where("job_id = ?", run.JobID).Scan(ctx); err != nil {
			return nil, Classify(err)
		}
	case err != nil:
		return nil, err
	default:
		*run = *existing
		if run.Status != models.SyncWaiting {
			return nil, nil // running already (a retried activity), or finished
		}
	}
	now := time.Now().UTC()
	_, err = d.NewUpdate().Model((*models.SyncRun)(nil)).Set("status = ?", models.SyncRunning).Set("started_at = ?", now).
		Where("id = ? AND status = ?", run.ID, models.SyncWaiting).Exec(ctx)
	if err = Classify(err); errors.Is(err, ErrConflict) {
		h := new(models.SyncRun)
		if err := d.NewSelect().Model(h).Where("data_source_id = ? AND status = ?", run.DataSourceID, models.SyncRunning).Limit(1).Scan(ctx); err != nil {
			if errors.Is(Classify(err), ErrNotFound) {
				return d.BeginSyncRun(ctx, run) // it finished meanwhile
			}
			return nil, Classify(err)
		}
		return h, nil
	}
	if err != nil {
		return nil, err
	}
	run.Status, run.StartedAt = models.SyncRunning, &now
	return nil, nil
}

// RunningSync returns the data source's running sync (ErrNotFound: none).
func (d *DB) RunningSync(ctx context.Context, dataSourceID int64) (*models.SyncRun, error) {
	r := new(models.SyncRun)
	err := d.NewSelect().Model(r).Where("data_source_id = ? AND status = ?", dataSourceID, models.SyncRunning).Limit(1).Scan(ctx)
	return r, Classify(err)
}

// FinishSyncRun writes a run's outcome (status, counts, items, message):
// the data source is free for the next one. A run is finished once: a later
// record of it (its start retried after a crash, which plans again, finds
// the changes it applied already in place and counts them unchanged)
// changes nothing.
func (d *DB) FinishSyncRun(ctx context.Context, run *models.SyncRun) error {
	now := time.Now().UTC()
	run.FinishedAt = &now
	_, err := d.NewUpdate().Model(run).Column("status", "ref", "added", "updated", "deleted", "unchanged", "failed",
		"message", "items", "finished_at").WherePK().Where("finished_at IS NULL").Exec(ctx)
	return Classify(err)
}

// GetSyncRun reads a run by its job id.
func (d *DB) GetSyncRun(ctx context.Context, jobID string) (*models.SyncRun, error) {
	r := new(models.SyncRun)
	err := d.NewSelect().Model(r).Where("job_id = ?", jobID).Scan(ctx)
	return r, Classify(err)
}

// LastSyncRun is the data source's latest run that applied its changes
// (completed or held), ErrNotFound when none did.
func (d *DB) LastSyncRun(ctx context.Context, dataSourceID int64) (*models.SyncRun, error) {
	r := new(models.SyncRun)
	err := d.NewSelect().Model(r).Where("data_source_id = ? AND status IN (?)", dataSourceID,
		bun.List([]string{models.SyncCompleted, models.SyncHeld})).Order("id DESC").Limit(1).Scan(ctx)
	return r, Classify(err)
}

// ListSyncRuns lists a data source's runs, newest first, with the total.
func (d *DB) ListSyncRuns(ctx context.Context, dataSourceID int64, limit, offset int) ([]models.SyncRun, int, error) {
	out := []models.SyncRun{}
	n, err := d.NewSelect().Model(&out).Where("data_source_id = ?", dataSourceID).Order("id DESC").
		Limit(int64(limit)).Offset(int64(offset)).ScanAndCount(ctx)
	return out, int(n), Classify(err)
}
