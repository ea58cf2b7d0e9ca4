package db_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/db/dbtest"
	"github.com/lorekb/lore/models"
)

func revisionNumbers(t *testing.T, d *db.DB, docID int64) []int64 {
	t.Helper()
	rows, _, err := d.ListRevisions(context.Background(), docID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := []int64{}
	for _, r := range rows {
		out = append(out, r.Revision)
	}
	return out
}

func editContent(t *testing.T, d *db.DB, ctx context.Context, id int64, content string) *models.Document {
	t.Helper()
	_, after, err := d.UpdateDocument(ctx, id, func(doc *models.Document) error {
		doc.Content = content
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return after
}

// TestRevisionsFollowEveryWrite: a create, an edit, a title change and an
// import each store a revision numbered by the content version, with source,
// author and hash; identical saves and other field changes store none.
func TestRevisionsFollowEveryWrite(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		site := docTestSite(t, d, "rev-"+d.Dialect().Name().String())
		doc := docTestDocument(t, d, site, nil, "Install", "first text")
		r1, err := d.GetRevision(ctx, doc.ID, 1)
		if err != nil {
			t.Fatal(err)
		}
		if r1.Source != models.RevisionCreate || r1.Content != "first text" || r1.Title != "Install" ||
			r1.ContentHash != models.RevisionHash("Install", "first text") || r1.SiteID != site.ID {
			t.Fatalf("first revision %+v", r1)
		}
		uid := int64(42)
		editCtx := db.WithRevision(ctx, db.RevisionMeta{AuthorID: &uid, Author: "ed@example.com"})
		after := editContent(t, d, editCtx, doc.ID, "second text")
		if after.ContentVersion != 2 {
			t.Fatalf("content_version %d", after.ContentVersion)
		}
		r2, err := d.GetRevision(ctx, doc.ID, 2)
		if err != nil {
			t.Fatal(err)
		}
		if r2.Source != models.RevisionEdit || r2.Author != "ed@example.com" || r2.AuthorID == nil || *r2.AuthorID != 42 ||
			r2.Content != "second text" || r2.CreatedAt.Sub(after.UpdatedAt).Abs() > time.Millisecond {
			t.Fatalf("edit revision %+v (updated_at %v)", r2, after.UpdatedAt)
		}
		// Identical content, and a change of other fields only: no revision.
		editContent(t, d, editCtx, doc.ID, "second text")
		if _, _, err := d.UpdateDocument(editCtx, doc.ID, func(doc *models.Document) error {
			doc.Summary, doc.Status = "a summary", models.DocDraft
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if got := revisionNumbers(t, d, doc.ID); fmt.Sprint(got) != "[2 1]" {
			t.Fatalf("revisions after identical saves: %v", got)
		}
		// A title change is a revision; a sync names itself.
		syncCtx := db.WithRevision(ctx, db.RevisionMeta{Source: models.RevisionSync, Author: "git:handbook"})
		if _, _, err := d.UpdateDocument(syncCtx, doc.ID, func(doc *models.Document) error {
			doc.Title = "Installing"
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		r3, err := d.GetRevision(ctx, doc.ID, 3)
		if err != nil || r3.Source != models.RevisionSync || r3.Title != "Installing" || r3.Author != "git:handbook" || r3.AuthorID != nil {
			t.Fatalf("sync revision %+v, %v", r3, err)
		}
		list, total, err := d.ListRevisions(ctx, doc.ID, 2, 0)
		if err != nil || total != 3 || len(list) != 2 || list[0].Revision != 3 || list[0].Content != "" ||
			list[0].ContentBytes != len("second text") {
			t.Fatalf("list %+v total %d err %v", list, total, err)
		}
		if p, err := d.PreviousRevision(ctx, doc.ID, 3); err != nil || p.Revision != 2 {
			t.Fatalf("previous of 3: %+v %v", p, err)
		}
		if _, err := d.PreviousRevision(ctx, doc.ID, 1); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("previous of 1: %v", err)
		}
		if _, err := d.GetRevision(ctx, doc.ID, 9); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("revision 9: %v", err)
		}

		// Imports: one document and a batch.
		imp := &models.Document{TenantID: site.TenantID, SiteID: site.ID, Title: "Imported", Content: "from a file",
			Author: "importer", Tags: "[]", Status: models.DocDraft, VectorStatus: models.VecNone}
		id, _, err := d.CreateImportedDocument(ctx, "imp-1", 0, imp)
		if err != nil {
			t.Fatal(err)
		}
		batch := []db.NewImportedDoc{}
		for i := 1; i <= 3; i++ {
			content := fmt.Sprintf("file %d", i)
			if i == 1 {
				content = "" // an empty first row must not drop the others' content (SQLite's multi-row insert)
			}
			batch = append(batch, db.NewImportedDoc{Index: i, Doc: &models.Document{TenantID: site.TenantID, SiteID: site.ID,
				Title: fmt.Sprintf("File %d", i), Content: content, Tags: "[]", Status: models.DocDraft, VectorStatus: models.VecNone}})
		}
		if _, err := d.CreateImportedDocuments(ctx, "imp-1", batch); err != nil {
			t.Fatal(err)
		}
		for _, want := range append([]*models.Document{{ID: id, Title: "Imported", Content: "from a file"}}, batch[0].Doc, batch[1].Doc, batch[2].Doc) {
			r, err := d.GetRevision(ctx, want.ID, 1)
			if err != nil || r.Source != models.RevisionImport || r.Content != want.Content || r.Title != want.Title {
				t.Fatalf("import revision of %d: %+v %v", want.ID, r, err)
			}
		}
		if r, _ := d.GetRevision(ctx, id, 1); r.Author != "importer" {
			t.Fatalf("import author %q", r.Author)
		}

		// Deleting the document deletes its revisions.
		if _, err := d.DeleteDocument(ctx, doc.ID); err != nil {
			t.Fatal(err)
		}
		if n, err := d.CountRevisions(ctx, doc.ID); err != nil || n != 0 {
			t.Fatalf("revisions of a deleted document: %d %v", n, err)
		}
		// So does deleting the site's documents.
		if _, err := d.DeleteSiteDocuments(ctx, site.ID, 2); err != nil {
			t.Fatal(err)
		}
		if _, err := d.DeleteSiteDocuments(ctx, site.ID, 0); err != nil {
			t.Fatal(err)
		}
		if n, err := d.NewSelect().Model((*models.DocumentRevision)(nil)).Where("site_id = ?", site.ID).Count(ctx); err != nil || n != 0 {
			t.Fatalf("revisions of a deleted site: %d %v", n, err)
		}
	})
}

// TestRevisionsMigrationBackfills: documents written before revisions
// existed get their current version as a revision when the migration runs,
// and running it again changes nothing.
func TestRevisionsMigrationBackfills(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		site := docTestSite(t, d, "backfill-"+d.Dialect().Name().String())
		var docs []*models.Document
		for i := 0; i < 450; i++ { // more than one page of the copy
			docs = append(docs, &models.Document{TenantID: site.TenantID, SiteID: site.ID, Title: fmt.Sprintf("Old %d", i),
				Content: fmt.Sprintf("old text %d", i), Author: "alice", Tags: "[]", Status: models.DocPublished,
				VectorStatus: models.VecNone, ContentVersion: int64(1 + i%3), CreatedAt: time.Now().UTC(), UpdatedAt: time.Now().UTC()})
		}
		if err := d.InsertDocuments(ctx, docs); err != nil { // the raw insert: no revision
			t.Fatal(err)
		}
		if n, _ := d.CountRevisions(ctx, docs[0].ID); n != 0 {
			t.Fatalf("raw insert stored %d revisions", n)
		}
		for i := 0; i < 2; i++ {
			if _, err := d.NewDelete().TableExpr("bun_migrations").Where("name = ?", "20261201210000").Exec(ctx); err != nil {
				t.Fatal(err)
			}
			if err := d.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for _, i := range []int{0, 1, 449} {
			doc := docs[i]
			r, err := d.GetRevision(ctx, doc.ID, doc.ContentVersion)
			want := models.RevisionEdit
			if doc.ContentVersion == 1 {
				want = models.RevisionCreate
			}
			if err != nil || r.Content != doc.Content || r.Source != want || r.Author != "alice" {
				t.Fatalf("backfilled revision of %d: %+v %v", doc.ID, r, err)
			}
		}
		n, err := d.NewSelect().Model((*models.DocumentRevision)(nil)).Where("site_id = ?", site.ID).Count(ctx)
		if err != nil || n != int64(len(docs)) {
			t.Fatalf("%d backfilled revisions for %d documents (%v)", n, len(docs), err)
		}
	})
}

// TestPruneRevisions: the retention keeps the newest Keep revisions and
// none older than MaxAge, never the current one; revisions of deleted
// documents go; a pass pages through documents by cursor.
func TestPruneRevisions(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		site := docTestSite(t, d, "prune-"+d.Dialect().Name().String())
		a := docTestDocument(t, d, site, nil, "A", "a0")
		b := docTestDocument(t, d, site, nil, "B", "b0")
		gone := docTestDocument(t, d, site, nil, "Gone", "g0")
		for i := 1; i <= 6; i++ {
			editContent(t, d, ctx, a.ID, fmt.Sprintf("a%d", i))
		}
		editContent(t, d, ctx, b.ID, "b1")
		// Age: b's revisions are a year old; revision 2 (current) must stay.
		old := time.Now().UTC().Add(-365 * 24 * time.Hour)
		if _, err := d.NewUpdate().Model((*models.DocumentRevision)(nil)).Set("created_at = ?", old).
			Where("document_id = ?", b.ID).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		// A document removed by a path that left its revisions behind.
		if _, err := d.NewDelete().Model((*models.Document)(nil)).Where("id = ?", gone.ID).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		ret := db.RevisionRetention{Keep: 3, MaxAge: 180 * 24 * time.Hour}
		total, after, pages := 0, int64(0), 0
		for {
			n, next, err := d.PruneRevisions(ctx, ret, time.Now(), after, 1)
			if err != nil {
				t.Fatal(err)
			}
			total, pages = total+n, pages+1
			if next == 0 {
				break
			}
			after = next
		}
		if pages < 3 {
			t.Fatalf("pass of %d pages for 3 documents at 1 a page", pages)
		}
		if got := revisionNumbers(t, d, a.ID); fmt.Sprint(got) != "[7 6 5]" {
			t.Fatalf("a keeps %v, want the newest 3", got)
		}
		if got := revisionNumbers(t, d, b.ID); fmt.Sprint(got) != "[2]" {
			t.Fatalf("b keeps %v, want only the current one", got)
		}
		if got := revisionNumbers(t, d, gone.ID); len(got) != 0 {
			t.Fatalf("a deleted document keeps %v", got)
		}
		if total != 4+1+1 {
			t.Fatalf("pruned %d revisions, want 6", total)
		}
		// A second pass finds nothing; no bounds prunes only orphans.
		if n, _, err := d.PruneRevisions(ctx, ret, time.Now(), 0, 100); err != nil || n != 0 {
			t.Fatalf("second pass pruned %d (%v)", n, err)
		}
		editContent(t, d, ctx, a.ID, "a7")
		if n, _, err := d.PruneRevisions(ctx, db.RevisionRetention{}, time.Now(), 0, 100); err != nil || n != 0 {
			t.Fatalf("unbounded retention pruned %d (%v)", n, err)
		}
		if got := revisionNumbers(t, d, a.ID); fmt.Sprint(got) != "[8 7 6 5]" {
			t.Fatalf("a keeps %v", got)
		}
	})
}

// TestSyncedDocumentsGetRevisions: documents a data source sync creates get
// their first revision with source sync.
func TestSyncedDocumentsGetRevisions(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		site := docTestSite(t, d, "sync-rev-"+d.Dialect().Name().String())
		doc := &models.Document{TenantID: site.TenantID, SiteID: site.ID, Title: "Synced", Content: "from git",
			Author: "handbook repo", Tags: "[]", Status: models.DocDraft, VectorStatus: models.VecNone}
		if _, err := d.CreateSyncedDocuments(ctx, []db.NewSyncedDoc{{Doc: doc,
			Item: &models.SyncItem{DataSourceID: 1, Key: "docs/a.md", SiteID: site.ID}}}); err != nil {
			t.Fatal(err)
		}
		r, err := d.GetRevision(ctx, doc.ID, 1)
		if err != nil || r.Source != models.RevisionSync || r.Content != "from git" || r.Author != "handbook repo" {
			t.Fatalf("synced revision %+v %v", r, err)
		}
	})
}

// TestRevisionContentCompressedLikeDocuments checks on PostgreSQL that a
// revision's content is compressed as the document's is (lz4 where the
// server has it): each document write stores the content in both.
func TestRevisionContentCompressedLikeDocuments(t *testing.T) {
	d := dbtest.Open(t, "postgres")
	var got []string
	if err := d.NewRaw(`SELECT attcompression::text FROM pg_attribute WHERE attname = 'content'
		AND attrelid IN ('documents'::regclass, 'document_revisions'::regclass) ORDER BY attrelid::regclass::text`).Scan(context.Background(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != "l" || got[1] != "l" {
		t.Fatalf("compression of document_revisions.content, documents.content: %q, want lz4 (l) for both", got)
	}
}
