package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/lorekb/lore/internal/convert"
	"github.com/lorekb/lore/internal/datasource/websrc"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/vector"
	"github.com/lorekb/lore/models"
)

// SyncApplyInput is a batch of changes.
type SyncApplyInput struct {
	Spec        SyncSpec
	Changes     []SyncChange
	Concurrency int
	MaxAttempts int32 `json:",omitempty"`
	// Web: the rules and prefix the pages are checked against.
	Robots *websrc.Robots `json:",omitempty"`
	Crawl  bool           `json:",omitempty"`
}

// SyncApplyResult has one item per change, in the batch's order.
type SyncApplyResult struct {
	Items []SyncItemResult
}

// converted is one change read and converted, ready to be written.
type converted struct {
	i    int
	doc  *models.Document
	item *models.SyncItem
}

// SyncApply reads, converts and writes a batch of changes. A file or page
// that cannot be read or converted fails alone with its reason; a database
// error fails the attempt, and the retry finds what the earlier one wrote
// (items keyed by data source and key) and writes nothing twice.
func (a *Sync) SyncApply(ctx context.Context, in SyncApplyInput) (SyncApplyResult, error) {
	stop := heartbeatEvery(ctx, 5*time.Second, nil)
	defer stop()
	ds, err := a.source(ctx, in.Spec)
	if err != nil {
		return SyncApplyResult{}, err
	}
	return a.apply(ctx, in, ds)
}

// apply is SyncApply with the data source read.
func (a *Sync) apply(ctx context.Context, in SyncApplyInput, ds *models.DataSource) (SyncApplyResult, error) {
	keys := make([]string, 0, len(in.Changes))
	for _, c := range in.Changes {
		keys = append(keys, c.Key)
		if c.From != "" {
			keys = append(keys, c.From)
		}
	}
	have, err := a.DB.SyncItemsByKey(ctx, ds.ID, keys)
	if err != nil {
		return SyncApplyResult{}, err
	}
	conv, err := a.Import.converter(ctx, ImportSpec{TenantID: in.Spec.TenantID})
	if err != nil {
		return SyncApplyResult{}, err
	}
	out := make([]SyncItemResult, len(in.Changes))
	ready := make([]*converted, len(in.Changes))
	if ds.Type == models.DataSourceWeb {
		err = a.readPages(ctx, ds, in, have, conv, out, ready)
	} else {
		err = a.readFiles(ctx, ds, in, have, conv, out, ready)
	}
	if err != nil {
		return SyncApplyResult{}, err
	}
	if err := a.write(ctx, in.Spec, have, out, ready); err != nil {
		return SyncApplyResult{}, err
	}
	return SyncApplyResult{Items: out}, nil
}

func outcomeOf(op string) string {
	switch op {
	case SyncAdd:
		return SyncAdded
	case SyncUpdate:
		return SyncUpdated
	case SyncRename:
		return SyncRenamed
	case SyncDelete:
		return SyncDeleted
	}
	return SyncUnchanged
}

// convertItem converts an item's bytes through the import's path (the
// built-in converters, images stored as files of the site) into a document
// row carrying its provenance.
func (a *Sync) convertItem(ctx context.Context, conv convert.Converter, spec SyncSpec, key, name string, data []byte, prov map[string]any) (*models.Document, error) {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	in := ImportFileInput{Spec: ImportSpec{ImportID: fmt.Sprintf("sync-ds-%d", spec.DataSourceID), TenantID: spec.TenantID, SiteID: spec.SiteID,
		CollectionID: spec.CollectionID, Status: spec.Status, Vectorize: spec.Vectorize, Author: spec.Name, MaxBytes: a.Cfg.ImportMaxBytes,
		Options: map[string]any{"extract_images": true, "extract_tables": true}},
		Index: int(h.Sum32() & 0x7fffffff), File: ImportFile{Name: name, Source: SourceDataSource, DataSourceID: spec.DataSourceID, Key: key}}
	doc, _, err := a.Import.prepareData(ctx, conv, in, data)
	if err != nil {
		return nil, err
	}
	doc.ParseMeta = strPtr(withProvenance(doc.ParseMeta, spec, prov, 0))
	return doc, nil
}

func strPtr(s string) *string { return &s }

// withProvenance sets parse_meta.sync: where the document came from, when,
// the revision the sync wrote (a later one was edited in Lore) and the
// edit rule.
func withProvenance(meta *string, spec SyncSpec, prov map[string]any, revision int64) string {
	m := map[string]any{}
	if meta != nil {
		_ = json.Unmarshal([]byte(*meta), &m)
	}
	p, _ := m["sync"].(map[string]any)
	if p == nil {
		p = map[string]any{}
	}
	for k, v := range map[string]any{"data_source_id": spec.DataSourceID, "type": spec.Type, "synced_at": time.Now().UTC().Format(time.RFC3339),
		"run_id": spec.RunID, "edit_rule": EditRule} {
		p[k] = v
	}
	if revision > 0 {
		p["revision"] = revision
	}
	for k, v := range prov {
		if s, ok := v.(string); !ok || s != "" {
			p[k] = v
		}
	}
	m["sync"] = p
	b, _ := json.Marshal(m)
	return string(b)
}

// write stores the converted items: new ones with their documents in one
// transaction, changed ones through the document update (a new revision
// of the same document) in another.
func (a *Sync) write(ctx context.Context, spec SyncSpec, have map[string]models.SyncItem, out []SyncItemResult, ready []*converted) error {
	var fresh []db.NewSyncedDoc
	var at []int
	var changed []*converted
	for _, r := range ready {
		if r == nil {
			continue
		}
		if _, ok := have[r.item.Key]; ok {
			changed = append(changed, r)
			continue
		}
		fresh = append(fresh, db.NewSyncedDoc{Doc: r.doc, Item: r.item})
		at = append(at, r.i)
	}
	if err := a.update(ctx, spec, have, changed, out); err != nil {
		return err
	}
	if len(fresh) == 0 {
		return nil
	}
	for _, nd := range fresh {
		nd.Doc.ParseMeta = strPtr(withProvenance(nd.Doc.ParseMeta, spec, nil, 1))
	}
	created, err := a.DB.CreateSyncedDocuments(ctx, fresh)
	if errors.Is(err, db.ErrCollectionNotInSite) || errors.Is(err, db.ErrNotFound) {
		for _, i := range at {
			out[i].Outcome, out[i].Reason = SyncFailed, out[i].Key+": the sync's collection is gone or belongs to another site"
		}
		return nil
	}
	if err != nil {
		return err
	}
	for k, i := range at {
		out[i].Outcome, out[i].DocumentID, out[i].Title = SyncAdded, fresh[k].Doc.ID, fresh[k].Doc.Title
		_ = created[k] // false: an earlier attempt created it; the outcome is the same
	}
	return nil
}

// update replaces synced documents' titles and contents with the source's
// (the edit rule: the source wins when it changed), records their items and
// provenance, all in one transaction. A document deleted in Lore is created
// again.
func (a *Sync) update(ctx context.Context, spec SyncSpec, have map[string]models.SyncItem, changed []*converted, out []SyncItemResult) error {
	if len(changed) == 0 {
		return nil
	}
	// The revision this change stores is the data source's.
	ctx = db.WithRevision(ctx, db.RevisionMeta{Source: models.RevisionSync, Author: spec.Name})
	edited := make([]bool, len(changed))
	ups := make([]db.SyncedUpdate, len(changed))
	for k, r := range changed {
		it := have[r.item.Key]
		ups[k] = db.SyncedUpdate{DocumentID: it.DocumentID, Item: r.item,
			Change: func(doc *models.Document) error {
				edited[k] = it.SyncedRevision > 0 && doc.ContentVersion > it.SyncedRevision
				doc.Title, doc.Content, doc.ReadingTime = r.doc.Title, r.doc.Content, r.doc.ReadingTime
				if spec.Vectorize {
					doc.VectorStatus = models.VecPending
				}
				return nil
			},
			Meta: func(after *models.Document) string {
				return withProvenance(r.doc.ParseMeta, spec, nil, after.ContentVersion)
			}}
	}
	after, missing, err := a.DB.UpdateSyncedDocuments(ctx, ups)
	if err != nil {
		return err
	}
	for k, r := range changed {
		o := &out[r.i]
		if missing[k] {
			// The item still names the deleted document: point it at a new one.
			r.doc.ID = 0
			if err := a.DB.CreateDocument(ctx, r.doc); err != nil {
				return err
			}
			r.item.DocumentID, r.item.SyncedRevision = r.doc.ID, r.doc.ContentVersion
			if err := a.DB.SaveSyncItem(ctx, r.item); err != nil {
				return err
			}
			o.Outcome, o.DocumentID, o.Title, o.Note = SyncUpdated, r.doc.ID, r.doc.Title, "the document had been deleted in Lore; created again"
			continue
		}
		o.Outcome, o.DocumentID, o.Title = SyncUpdated, after[k].ID, after[k].Title
		if edited[k] {
			o.Note = "replaced an edit made in Lore (the source changed)"
		}
	}
	return nil
}

// SyncDeleteInput lists the items whose documents go.
type SyncDeleteInput struct {
	Spec SyncSpec
	Keys []string
}

// SyncDelete removes the documents of items that left the source: their
// vectors from every store, then the document and its item. An item already
// gone (a retried attempt) counts as deleted.
func (a *Sync) SyncDelete(ctx context.Context, in SyncDeleteInput) (SyncApplyResult, error) {
	stop := heartbeatEvery(ctx, 5*time.Second, nil)
	defer stop()
	have, err := a.DB.SyncItemsByKey(ctx, in.Spec.DataSourceID, in.Keys)
	if err != nil {
		return SyncApplyResult{}, err
	}
	out := make([]SyncItemResult, len(in.Keys))
	for i, k := range in.Keys {
		out[i] = SyncItemResult{Key: k, Outcome: SyncDeleted}
		it, ok := have[k]
		if !ok {
			continue
		}
		out[i].DocumentID = it.DocumentID
		err := a.Vectors.EachVectorStore(ctx, func(s vector.Store) error { return s.DeleteDocument(ctx, it.DocumentID) })
		if err != nil {
			return SyncApplyResult{}, classify(err)
		}
		if err := a.DB.DeleteSyncedDocument(ctx, in.Spec.DataSourceID, k, it.DocumentID); err != nil {
			return SyncApplyResult{}, err
		}
	}
	return SyncApplyResult{Items: out}, nil
}
