package db_test

import (
	"context"
	"errors"
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

// TestCreateSiteWithAdminIsOneTransaction: when the administrator cannot be
// written (its email is taken), the site is not written either; otherwise
// both are, and an existing user is assigned the new site.
func TestCreateSiteWithAdminIsOneTransaction(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		tid := defaultTenant(t, d)
		site := func(name string) *models.Site {
			return &models.Site{TenantID: tid, Name: name, Slug: name, Status: models.SiteActive, IsPublic: true}
		}
		user := func(email string) *models.User {
			return &models.User{TenantID: tid, Email: email, PasswordHash: "x", Role: models.RoleSiteAdmin, Status: models.UserActive}
		}
		taken := user("taken@example.com")
		if err := d.CreateUser(ctx, taken, nil); err != nil {
			t.Fatal(err)
		}
		if err := d.CreateSiteWithAdmin(ctx, site("half"), user("Taken@example.com"), 0); !errors.Is(err, db.ErrConflict) {
			t.Fatalf("taken email: %v", err)
		}
		if n := countWhere(t, d, (*models.Site)(nil), "slug = ?", "half"); n != 0 {
			t.Fatal("the site was written without its administrator")
		}
		fresh := user("fresh@example.com")
		whole := site("whole")
		if err := d.CreateSiteWithAdmin(ctx, whole, fresh, 0); err != nil {
			t.Fatal(err)
		}
		assigned := site("assigned")
		if err := d.CreateSiteWithAdmin(ctx, assigned, nil, taken.ID); err != nil {
			t.Fatal(err)
		}
		for u, want := range map[int64]int64{fresh.ID: whole.ID, taken.ID: assigned.ID} {
			if ids, err := d.UserSiteIDs(ctx, u); err != nil || len(ids) != 1 || ids[0] != want {
				t.Fatalf("user %d sites %v %v, want [%d]", u, ids, err, want)
			}
		}
	})
}
