package db_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/db/dbtest"
	"github.com/lorekb/lore/models"
)

// TestInsertDocumentsBoundMatchesBun writes the same documents through lore's
// insert (values as bind parameters) and through bun's (values as literals)
// and checks that every column reads back equal, and that the returned ids
// and defaults were scanned into the models as bun does.
func TestInsertDocumentsBoundMatchesBun(t *testing.T) {
	d := dbtest.Open(t, "postgres")
	ctx := context.Background()
	site := docTestSite(t, d, "bound")
	col := docTestCollection(t, d, site, nil, "C")
	meta := `{"pages": 3, "q": "it's"}`
	at := time.Date(2026, 11, 24, 12, 30, 15, 123456000, time.UTC)
	long := strings.Repeat("Ünïcödé 数据 'quoted' \"double\" back\\slash $1 ? ?? :name %s \t\r\n🙂 ", 2000)
	mk := func() []*models.Document {
		base := func() models.Document {
			return models.Document{TenantID: site.TenantID, SiteID: site.ID, CreatedAt: at, UpdatedAt: at}
		}
		a := base()
		a.Title, a.Content, a.Tags, a.Status, a.VectorStatus = "O'Brien's \\ guide", long, `["a","b'c"]`, models.DocPublished, models.VecNone
		a.CollectionID, a.ParseMeta, a.VectorizedAt = &col.ID, &meta, &at
		a.Summary, a.Author, a.Category, a.ContentVersion, a.ReadingTime = "sum", "me", "cat", 7, 3
		b := base() // every defaulted column left zero
		b.Title = "empty"
		c := base()
		c.Title, c.Content = "words", "Alpha beta, ALPHA; gamma_delta 50% C:\\path"
		return []*models.Document{&a, &b, &c}
	}
	bound, lit := mk(), mk()
	if err := d.InsertDocuments(ctx, bound); err != nil {
		t.Fatal(err)
	}
	if _, err := d.NewInsert().Model(&lit).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range bound {
		if bound[i].ID == 0 || lit[i].ID == 0 || bound[i].ID == lit[i].ID {
			t.Fatalf("document %d: ids %d (bound) and %d (bun)", i, bound[i].ID, lit[i].ID)
		}
		// The models as scanned back: equal but for the id.
		bm, lm := *bound[i], *lit[i]
		bm.ID, lm.ID = 0, 0
		bj, _ := json.Marshal(bm)
		lj, _ := json.Marshal(lm)
		if string(bj) != string(lj) {
			t.Errorf("document %d as returned:\nbound %s\nbun   %s", i, bj, lj)
		}
		// The rows as stored: every column but the id.
		row := func(id int64) string {
			var s string
			if err := d.NewRaw("SELECT (to_jsonb(d) - 'id')::text FROM documents d WHERE id = ?", id).Scan(ctx, &s); err != nil {
				t.Fatal(err)
			}
			return s
		}
		if b, l := row(bound[i].ID), row(lit[i].ID); b != l {
			t.Errorf("document %d as stored:\nbound %.400s\nbun   %.400s", i, b, l)
		}
	}
	if bound[1].Status != models.DocDraft || bound[1].VectorStatus != "none" || bound[1].ContentVersion != 1 || bound[1].Tags != "[]" {
		t.Errorf("defaults not returned into the model: %+v", *bound[1])
	}
}
