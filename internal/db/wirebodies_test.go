package db_test

import (
	"context"
	"testing"

	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/db/dbtest"
	"github.com/lorekb/lore/models"
)

// TestParseMetaMigrationAddsTheColumn plays the upgrade of a database made
// before documents.parse_meta existed: without the column and without the
// migration's record, Migrate adds the column, and running it again is a
// no-op. A document then keeps its parse_meta; lists do not read it.
func TestParseMetaMigrationAddsTheColumn(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		for _, q := range []string{"ALTER TABLE documents DROP COLUMN parse_meta",
			"DELETE FROM bun_migrations WHERE name = '20261121000006'"} {
			if _, err := d.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		for i := 0; i < 2; i++ {
			if err := d.Migrate(ctx); err != nil {
				t.Fatalf("migrate %d: %v", i, err)
			}
		}
		s := newTestSite(t, d, "Meta", "meta", nil)
		meta := `{"parser":"pdf"}`
		doc := &models.Document{TenantID: s.TenantID, SiteID: s.ID, Title: "t", Status: models.DocPublished, ParseMeta: &meta}
		if err := d.CreateDocument(ctx, doc); err != nil {
			t.Fatal(err)
		}
		got, err := d.GetDocumentWithSite(ctx, doc.ID)
		if err != nil || got.ParseMeta == nil || *got.ParseMeta != meta {
			t.Fatalf("stored parse_meta: %v %v", got.ParseMeta, err)
		}
		for _, f := range []db.DocumentFilter{{Limit: 10}, {Keyword: "t", Limit: 10}} {
			docs, _, err := d.ListDocuments(ctx, f)
			if err != nil || len(docs) != 1 || docs[0].ParseMeta != nil {
				t.Fatalf("list %+v: %v %v", f, docs, err)
			}
		}
	})
}
