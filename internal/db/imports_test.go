package db_test

import (
	"context"
	"errors"
	"testing"

	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/db/dbtest"
	"github.com/lorekb/lore/models"
)

// TestCreateImportedDocuments: a batch's documents and items are written in
// one transaction and found again by ImportedDocuments; a later batch that
// repeats a file (a retried attempt that lost the race) keeps that file's
// existing document and creates only the new ones; a collection of another
// site fails the whole batch and writes nothing.
func TestCreateImportedDocuments(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) { testCreateImportedDocuments(t, d) })
}

func testCreateImportedDocuments(t *testing.T, d *db.DB) {
	ctx := context.Background()
	site := docTestSite(t, d, "imports-batch")
	other := docTestSite(t, d, "imports-other")
	col := docTestCollection(t, d, other, nil, "elsewhere")
	mk := func(title string) *models.Document {
		return &models.Document{TenantID: site.TenantID, SiteID: site.ID, Title: title, Content: "# " + title,
			Tags: "[]", Status: models.DocDraft, VectorStatus: models.VecNone}
	}
	created, err := d.CreateImportedDocuments(ctx, "import-x", []db.NewImportedDoc{{Index: 0, Doc: mk("zero")}, {Index: 2, Doc: mk("two")}})
	if err != nil || len(created) != 2 || !created[0] || !created[1] {
		t.Fatalf("created %v, %v", created, err)
	}
	got, err := d.ImportedDocuments(ctx, "import-x", []int{0, 1, 2})
	if err != nil || len(got) != 2 || got[0].Title != "zero" || got[2].Title != "two" || got[0].ID == 0 || got[0].ID == got[2].ID {
		t.Fatalf("imported %+v, %v", got, err)
	}
	again := mk("zero again")
	fresh := mk("one")
	created, err = d.CreateImportedDocuments(ctx, "import-x", []db.NewImportedDoc{{Index: 0, Doc: again}, {Index: 1, Doc: fresh}})
	if err != nil || created[0] || !created[1] || again.ID != got[0].ID || fresh.ID == 0 {
		t.Fatalf("second batch: created %v, ids %d %d, %v", created, again.ID, fresh.ID, err)
	}
	n, err := d.CountImportItems(ctx, "import-x")
	if err != nil || n != 3 {
		t.Fatalf("%d import items, %v", n, err)
	}
	docs, err := d.NewSelect().Model((*models.Document)(nil)).Where("site_id = ?", site.ID).Count(ctx)
	if err != nil || docs != 3 {
		t.Fatalf("%d documents, want 3 (one per file), %v", docs, err)
	}
	bad := mk("bad")
	bad.CollectionID = &col.ID
	if _, err := d.CreateImportedDocuments(ctx, "import-y", []db.NewImportedDoc{{Index: 0, Doc: mk("fine")}, {Index: 1, Doc: bad}}); !errors.Is(err, db.ErrCollectionNotInSite) {
		t.Fatalf("collection of another site: %v", err)
	}
	if n, _ := d.CountImportItems(ctx, "import-y"); n != 0 {
		t.Fatalf("a failed batch left %d items", n)
	}
}
