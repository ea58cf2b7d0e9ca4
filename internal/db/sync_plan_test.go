package db_test

import (
	"context"
	"testing"

	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/db/dbtest"
	"github.com/lorekb/lore/models"
)

// TestSyncItemVersions: a plan reads every item of its data source, by key,
// with its version and document, and nothing of another data source.
func TestSyncItemVersions(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		site := docTestSite(t, d, "sync-versions-"+d.Dialect().Name().String())
		for _, it := range []models.SyncItem{{DataSourceID: 8, Key: "b.md", Version: "v-b", DocumentID: 2},
			{DataSourceID: 8, Key: "a.md", Version: "v-a", DocumentID: 1}, {DataSourceID: 9, Key: "c.md", Version: "v-c", DocumentID: 3}} {
			it.SiteID, it.Links, it.Ref = site.ID, "[]", "commit"
			if err := d.SaveSyncItem(ctx, &it); err != nil {
				t.Fatal(err)
			}
		}
		got, err := d.SyncItemVersions(ctx, 8)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].Key != "a.md" || got[0].Version != "v-a" || got[0].DocumentID != 1 || got[1].Key != "b.md" {
			t.Fatalf("items %+v", got)
		}
	})
}
