package db_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/db/dbtest"
	"github.com/lorekb/lore/models"
)

// TestUpdateSyncedDocuments: a sync's batch of changes is written in one
// transaction, each document through the update path (a new version with a
// sync revision), its parse_meta and its item; a document deleted in Lore
// is reported missing and its item left alone.
func TestUpdateSyncedDocuments(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := db.WithRevision(context.Background(), db.RevisionMeta{Source: models.RevisionSync, Author: "Repo"})
		site := docTestSite(t, d, "sync-up-"+d.Dialect().Name().String())
		a := docTestDocument(t, d, site, nil, "A", "old a")
		gone := docTestDocument(t, d, site, nil, "Gone", "old gone")
		if _, err := d.DeleteDocument(ctx, gone.ID); err != nil {
			t.Fatal(err)
		}
		item := func(key string) *models.SyncItem {
			return &models.SyncItem{DataSourceID: 7, Key: key, SiteID: site.ID, Version: "v2", Links: "[]"}
		}
		set := func(content string) func(*models.Document) error {
			return func(doc *models.Document) error { doc.Content = content; return nil }
		}
		meta := func(after *models.Document) string {
			return fmt.Sprintf(`{"sync":{"revision":%d}}`, after.ContentVersion)
		}
		after, missing, err := d.UpdateSyncedDocuments(ctx, []db.SyncedUpdate{
			{DocumentID: a.ID, Change: set("new a"), Meta: meta, Item: item("a.md")},
			{DocumentID: gone.ID, Change: set("new gone"), Meta: meta, Item: item("gone.md")},
		})
		if err != nil {
			t.Fatal(err)
		}
		if missing[0] || !missing[1] || after[0] == nil || after[0].ContentVersion != 2 || after[1] != nil {
			t.Fatalf("missing %v, after %+v", missing, after)
		}
		doc, err := d.GetDocument(ctx, a.ID)
		if err != nil || doc.Content != "new a" || doc.ParseMeta == nil || *doc.ParseMeta != `{"sync":{"revision":2}}` {
			t.Fatalf("document %+v: %v", doc, err)
		}
		if r, err := d.GetRevision(ctx, a.ID, 2); err != nil || r.Source != models.RevisionSync || r.Content != "new a" {
			t.Fatalf("revision %+v: %v", r, err)
		}
		items, err := d.SyncItemsByKey(ctx, 7, []string{"a.md", "gone.md"})
		if err != nil {
			t.Fatal(err)
		}
		if it, ok := items["a.md"]; !ok || it.DocumentID != a.ID || it.SyncedRevision != 2 || it.Version != "v2" {
			t.Fatalf("item a.md %+v", it)
		}
		if _, ok := items["gone.md"]; ok {
			t.Fatal("the missing document's item was written")
		}
	})
}

// TestUpdateSyncedDocumentsBatch: a batch writes every document in one go
// as UpdateDocument would each: a changed content is a new version (an
// indexed document's vectors outdated, a revision, on PostgreSQL its
// content words), an unchanged one keeps its version and gets no
// revision; a column one document changes is written for it and leaves the
// others' alone; items that exist already are replaced, the other fields
// of the documents (views, status) stay.
func TestUpdateSyncedDocumentsBatch(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := db.WithRevision(context.Background(), db.RevisionMeta{Source: models.RevisionSync, Author: "Repo"})
		site := docTestSite(t, d, "sync-batch-"+d.Dialect().Name().String())
		var docs []*models.Document
		for i := range 3 {
			docs = append(docs, docTestDocument(t, d, site, nil, fmt.Sprint("Doc ", i), fmt.Sprint("old words ", i)))
		}
		if _, err := d.NewUpdate().Model((*models.Document)(nil)).Set("vector_status = ?", models.VecCompleted).Set("views = 7").
			Where("id = ?", docs[0].ID).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		for i, doc := range docs {
			if err := d.SaveSyncItem(ctx, &models.SyncItem{DataSourceID: 5, Key: fmt.Sprint(i, ".md"), SiteID: site.ID, DocumentID: doc.ID,
				Version: "v1", Ref: "c1", Links: "[]", SyncedRevision: 1, RunID: 1}); err != nil {
				t.Fatal(err)
			}
		}
		var ups []db.SyncedUpdate
		for i, doc := range docs {
			content := fmt.Sprint("fresh words ", i)
			if i == 1 {
				content = doc.Content // the same bytes: no new version
			}
			ups = append(ups, db.SyncedUpdate{DocumentID: doc.ID,
				Item: &models.SyncItem{DataSourceID: 5, Key: fmt.Sprint(i, ".md"), SiteID: site.ID, Version: "v2", Ref: "c2", RunID: 2},
				Change: func(doc *models.Document) error {
					doc.Content, doc.ReadingTime = content, 3
					if i == 2 {
						doc.Title = "Renamed 2" // the title column is written for this row, the others keep theirs
					}
					return nil
				},
				Meta: func(after *models.Document) string { return fmt.Sprintf(`{"v":%d}`, after.ContentVersion) }})
		}
		after, missing, err := d.UpdateSyncedDocuments(ctx, ups)
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range []int64{2, 1, 2} {
			if missing[i] || after[i].ContentVersion != want {
				t.Fatalf("document %d: missing %v, version %d, want %d", i, missing[i], after[i].ContentVersion, want)
			}
			doc, err := d.GetDocument(ctx, docs[i].ID)
			if err != nil {
				t.Fatal(err)
			}
			title := fmt.Sprint("Doc ", i)
			if i == 2 {
				title = "Renamed 2"
			}
			if doc.ContentVersion != want || doc.ReadingTime != 3 || doc.Status != models.DocPublished || doc.ParseMeta == nil || doc.Title != title ||
				*doc.ParseMeta != fmt.Sprintf(`{"v":%d}`, want) || !doc.UpdatedAt.After(docs[i].UpdatedAt.Add(-time.Millisecond)) {
				t.Fatalf("document %d as stored: %+v", i, doc)
			}
			_, revErr := d.GetRevision(ctx, doc.ID, 2)
			if (want == 2) != (revErr == nil) {
				t.Fatalf("document %d: revision 2: %v", i, revErr)
			}
		}
		if doc, _ := d.GetDocument(ctx, docs[0].ID); doc.VectorStatus != models.VecOutdated || doc.Views != 7 {
			t.Fatalf("an indexed document's vectors and views: %s, %d", doc.VectorStatus, doc.Views)
		}
		items, err := d.SyncItemsByKey(ctx, 5, []string{"0.md", "1.md", "2.md"})
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range []int64{2, 1, 2} {
			it := items[fmt.Sprint(i, ".md")]
			if it.DocumentID != docs[i].ID || it.Version != "v2" || it.Ref != "c2" || it.RunID != 2 || it.SyncedRevision != want || it.Links != "[]" {
				t.Fatalf("item %d: %+v", i, it)
			}
		}
		if d.Postgres() {
			var words string
			if err := d.NewRaw("SELECT content_words FROM documents WHERE id = ?", docs[2].ID).Scan(ctx, &words); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(words, "fresh") || strings.Contains(words, "old") {
				t.Fatalf("content words after the update: %q", words)
			}
		}
	})
}

// TestFinishSyncRunKeepsTheFirstRecord: a run's outcome is written once; a
// second record of the same run (a retried start that found its changes
// already applied) leaves the first one's counts, status and time.
func TestFinishSyncRunKeepsTheFirstRecord(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		site := docTestSite(t, d, "sync-run-"+d.Dialect().Name().String())
		ds := &models.DataSource{TenantID: site.TenantID, SiteID: &site.ID, Name: "repo", Type: models.DataSourceGit,
			Config: `{"url":"https://example.com/repo.git","branch":"main"}`}
		if err := d.SaveDataSource(ctx, ds); err != nil {
			t.Fatal(err)
		}
		run := &models.SyncRun{DataSourceID: ds.ID, TenantID: ds.TenantID, SiteID: site.ID, JobID: "sync-once", Trigger: "manual"}
		if holder, err := d.BeginSyncRun(ctx, run); err != nil || holder != nil {
			t.Fatalf("begin: holder %v, %v", holder, err)
		}
		first := &models.SyncRun{ID: run.ID, Status: models.SyncCompleted, Ref: "abc", Updated: 3, Unchanged: 97, Items: "[]"}
		if err := d.FinishSyncRun(ctx, first); err != nil {
			t.Fatal(err)
		}
		again := &models.SyncRun{ID: run.ID, Status: models.SyncCompleted, Ref: "abc", Unchanged: 100, Items: "[]"}
		if err := d.FinishSyncRun(ctx, again); err != nil {
			t.Fatal(err)
		}
		got, err := d.GetSyncRun(ctx, "sync-once")
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != models.SyncCompleted || got.Updated != 3 || got.Unchanged != 97 || got.FinishedAt == nil ||
			got.FinishedAt.Sub(*first.FinishedAt).Abs() > time.Millisecond {
			t.Fatalf("run after a second record: %+v (first finished at %v)", got, first.FinishedAt)
		}
	})
}
