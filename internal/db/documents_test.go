package db_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/db/dbtest"
	"github.com/lorekb/lore/models"
)

func docTestSite(t *testing.T, d *db.DB, name string) *models.Site {
	t.Helper()
	ctx := context.Background()
	tid, err := d.EnsureDefaultTenant(ctx)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	s := &models.Site{TenantID: tid, Name: name, Slug: name, Status: models.SiteActive, ThemeColor: "blue",
		LayoutMode: "sidebar", QuickQuestions: "[]", BotConfig: "{}", IsPublic: true, CreatedAt: now, UpdatedAt: now}
	if _, err := d.NewInsert().Model(s).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

func docTestCollection(t *testing.T, d *db.DB, site *models.Site, parent *models.Collection, title string) *models.Collection {
	t.Helper()
	c := &models.Collection{TenantID: site.TenantID, SiteID: site.ID, Title: title}
	if parent != nil {
		c.ParentID = &parent.ID
	}
	if err := d.CreateCollection(context.Background(), c, nil); err != nil {
		t.Fatalf("create collection %s: %v", title, err)
	}
	return c
}

func docTestDocument(t *testing.T, d *db.DB, site *models.Site, col *models.Collection, title, content string) *models.Document {
	t.Helper()
	doc := &models.Document{TenantID: site.TenantID, SiteID: site.ID, Title: title, Content: content,
		Tags: "[]", Status: models.DocPublished, VectorStatus: models.VecNone}
	if col != nil {
		doc.CollectionID = &col.ID
	}
	if err := d.CreateDocument(context.Background(), doc); err != nil {
		t.Fatalf("create document %s: %v", title, err)
	}
	return doc
}

func docViews(t *testing.T, d *db.DB, id int64) int64 {
	t.Helper()
	doc, err := d.GetDocument(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return doc.Views
}

func docEvents(t *testing.T, d *db.DB, id int64) int {
	t.Helper()
	n, err := d.NewSelect().Model((*models.ViewEvent)(nil)).Where("document_id = ?", id).Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

func TestViewRecorderFlushAndRetry(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		site := docTestSite(t, d, "views")
		a := docTestDocument(t, d, site, nil, "A", "x")
		b := docTestDocument(t, d, site, nil, "B", "y")
		r := db.NewViewRecorder(d, time.Hour) // flushed by hand only
		defer r.Close(ctx)
		for i := 1; i <= 3; i++ {
			if n := r.Record(site.ID, a.ID, "10.0.0.1", "ua/1", "https://ref.example/"); n != int64(i) {
				t.Fatalf("pending after %d records = %d", i, n)
			}
		}
		r.Record(site.ID, b.ID, "10.0.0.2", "ua/2", "")

		// A failing flush (cancelled context) keeps everything pending.
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		if err := r.Flush(cancelled); err == nil {
			t.Fatal("flush with a cancelled context succeeded")
		}
		if r.Pending(a.ID) != 3 || docViews(t, d, a.ID) != 0 {
			t.Fatalf("after failed flush: pending %d views %d", r.Pending(a.ID), docViews(t, d, a.ID))
		}
		r.Record(site.ID, a.ID, "10.0.0.1", "ua/1", "")
		if err := r.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if v := docViews(t, d, a.ID); v != 4 {
			t.Fatalf("views of a = %d, want 4", v)
		}
		if v := docViews(t, d, b.ID); v != 1 {
			t.Fatalf("views of b = %d, want 1", v)
		}
		if n := docEvents(t, d, a.ID); n != 4 {
			t.Fatalf("events of a = %d, want 4", n)
		}
		var ev models.ViewEvent
		if err := d.NewSelect().Model(&ev).Where("document_id = ?", b.ID).Scan(ctx); err != nil {
			t.Fatal(err)
		}
		if ev.IP != "10.0.0.2" || ev.UserAgent != "ua/2" || ev.SiteID != site.ID {
			t.Fatalf("event: %+v", ev)
		}
		if r.Pending(a.ID) != 0 {
			t.Fatalf("pending after flush: %d", r.Pending(a.ID))
		}
		// Nothing pending: a flush is a no-op.
		if err := r.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

func TestViewRecorderConcurrentAndClose(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		site := docTestSite(t, d, "views")
		doc := docTestDocument(t, d, site, nil, "A", "x")
		r := db.NewViewRecorder(d, 15*time.Millisecond) // the background flusher runs meanwhile
		var wg sync.WaitGroup
		for g := 0; g < 20; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 50; i++ {
					r.Record(site.ID, doc.ID, "1.2.3.4", "ua", "")
					if i%10 == 0 {
						time.Sleep(time.Millisecond)
					}
				}
			}()
		}
		wg.Wait()
		if err := r.Close(ctx); err != nil {
			t.Fatal(err)
		}
		if v, n := docViews(t, d, doc.ID), docEvents(t, d, doc.ID); v != 1000 || n != 1000 {
			t.Fatalf("views %d events %d, want 1000 each", v, n)
		}
	})
}

func TestViewRecorderBackgroundFlush(t *testing.T) {
	d := dbtest.Open(t, "sqlite")
	site := docTestSite(t, d, "views")
	doc := docTestDocument(t, d, site, nil, "A", "x")
	r := db.NewViewRecorder(d, 10*time.Millisecond)
	defer r.Close(context.Background())
	r.Record(site.ID, doc.ID, "", "", "")
	deadline := time.Now().Add(5 * time.Second)
	for docViews(t, d, doc.ID) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("background flush did not write the view")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func collectionOrders(t *testing.T, d *db.DB, siteID int64, parent *int64) string {
	t.Helper()
	cols, _, err := d.ListCollections(context.Background(), siteID, parent, 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	s := ""
	for _, c := range cols {
		s += fmt.Sprintf("%s:%d ", c.Title, c.Order)
	}
	return s
}

func TestCollectionMoveRenumbersAndRefuses(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		site := docTestSite(t, d, "tree")
		other := docTestSite(t, d, "other")
		a := docTestCollection(t, d, site, nil, "A")
		b := docTestCollection(t, d, site, nil, "B")
		c := docTestCollection(t, d, site, nil, "C")
		a1 := docTestCollection(t, d, site, a, "A1")
		a2 := docTestCollection(t, d, site, a, "A2")
		a11 := docTestCollection(t, d, site, a1, "A11")
		foreign := docTestCollection(t, d, other, nil, "F")
		if got := collectionOrders(t, d, site.ID, nil); got != "A:0 B:1 C:2 " {
			t.Fatalf("roots: %s", got)
		}
		// C moves under A at position 1: A's children A1 C A2, roots A B.
		pos := 1
		moved, err := d.MoveCollection(ctx, c.ID, &a.ID, &pos)
		if err != nil {
			t.Fatal(err)
		}
		if moved.Order != 1 || *moved.ParentID != a.ID {
			t.Fatalf("moved: %+v", moved)
		}
		if got := collectionOrders(t, d, site.ID, &a.ID); got != "A1:0 C:1 A2:2 " {
			t.Fatalf("children of A: %s", got)
		}
		if got := collectionOrders(t, d, site.ID, nil); got != "A:0 B:1 " {
			t.Fatalf("roots: %s", got)
		}
		// A position past the end is clamped; nil parent is the root.
		pos = 99
		if _, err := d.MoveCollection(ctx, a2.ID, nil, &pos); err != nil {
			t.Fatal(err)
		}
		if got := collectionOrders(t, d, site.ID, nil); got != "A:0 B:1 A2:2 " {
			t.Fatalf("roots: %s", got)
		}
		pos = 0
		for _, tc := range []struct {
			id     int64
			parent int64
			want   error
		}{
			{a.ID, a.ID, db.ErrMoveIntoSelf},
			{a.ID, a11.ID, db.ErrMoveIntoSelf},
			{a.ID, foreign.ID, db.ErrParentOtherSite},
			{a.ID, 999999, db.ErrParentNotFound},
		} {
			if _, err := d.MoveCollection(ctx, tc.id, &tc.parent, &pos); !errors.Is(err, tc.want) {
				t.Fatalf("move %d under %d: %v, want %v", tc.id, tc.parent, err, tc.want)
			}
		}
		if got := collectionOrders(t, d, site.ID, nil); got != "A:0 B:1 A2:2 " {
			t.Fatalf("refused moves changed the roots: %s", got)
		}
		// Delete: refused with children or documents; allowed when empty.
		if err := d.DeleteCollection(ctx, a1.ID); !errors.Is(err, db.ErrCollectionNotEmpty) {
			t.Fatalf("delete with child: %v", err)
		}
		docTestDocument(t, d, site, b, "doc", "")
		if err := d.DeleteCollection(ctx, b.ID); !errors.Is(err, db.ErrCollectionNotEmpty) {
			t.Fatalf("delete with document: %v", err)
		}
		if err := d.DeleteCollection(ctx, a11.ID); err != nil {
			t.Fatal(err)
		}
		// Deleting renumbers the former siblings.
		if err := d.DeleteCollection(ctx, a1.ID); err != nil {
			t.Fatal(err)
		}
		if got := collectionOrders(t, d, site.ID, &a.ID); got != "C:0 " {
			t.Fatalf("children of A after delete: %s", got)
		}
		ids, err := d.CollectionWithDescendants(ctx, a.ID)
		if err != nil || len(ids) != 2 {
			t.Fatalf("descendants of A: %v %v", ids, err)
		}
	})
}

func TestListDocumentsKeywordAndVisibility(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		site := docTestSite(t, d, "kw")
		hidden := docTestSite(t, d, "hidden")
		if _, err := d.NewUpdate().Model(hidden).Set("status = ?", models.SiteInactive).WherePK().Exec(ctx); err != nil {
			t.Fatal(err)
		}
		docTestDocument(t, d, site, nil, "100% 数据库 guide", "")
		docTestDocument(t, d, site, nil, "Plain", "about databases")
		docTestDocument(t, d, site, nil, "Under_score", "")
		docTestDocument(t, d, hidden, nil, "数据库 hidden", "")
		for kw, want := range map[string]int{"%": 1, "_": 1, "数据库": 2, "DATABASE": 1, "GUIDE": 1, "nothing": 0} {
			_, n, err := d.ListDocuments(ctx, db.DocumentFilter{Keyword: kw, Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			if n != want {
				t.Fatalf("keyword %q: %d, want %d", kw, n, want)
			}
		}
		_, n, err := d.ListDocuments(ctx, db.DocumentFilter{Keyword: "数据库", Public: true, Limit: 10})
		if err != nil || n != 1 {
			t.Fatalf("public CJK: %d %v", n, err)
		}
		docs, _, err := d.ListDocuments(ctx, db.DocumentFilter{ExcludeContent: true, Keyword: "databases", Limit: 10})
		if err != nil || len(docs) != 1 || docs[0].Content != "" {
			t.Fatalf("exclude content: %+v %v", docs, err)
		}
		_, n, err = d.ListDocuments(ctx, db.DocumentFilter{CollectionIDs: []int64{}, Limit: 10})
		if err != nil || n != 0 {
			t.Fatalf("empty collection set: %d %v", n, err)
		}
	})
}
