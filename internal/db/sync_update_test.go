package db_test

import (
	"context"
	"fmt"
	"testing"

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
