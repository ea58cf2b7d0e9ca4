package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/db/dbtest"
	"github.com/lorekb/lore/models"
)

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
