package db

import (
	"context"

	"github.com/lorekb/lore/models"
	"github.com/uptrace/bun"
)

// Sync: the settings of data sources kept in sync with a site, the items
// binding their files and pages to documents, and their runs. At most one
// run of a data source is running (the partial unique index): the lock
// that keeps two syncs from writing the same items.
func init() {
	migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		if err := createTables(ctx, db, (*models.SyncSettings)(nil), (*models.SyncItem)(nil), (*models.SyncRun)(nil)); err != nil {
			return err
		}
		return execAll(ctx, db,
			"CREATE INDEX IF NOT EXISTS sync_items_document_idx ON sync_items (document_id)",
			"CREATE INDEX IF NOT EXISTS sync_runs_source_idx ON sync_runs (data_source_id, id)",
			"CREATE UNIQUE INDEX IF NOT EXISTS sync_runs_running_idx ON sync_runs (data_source_id) WHERE status = 'running'",
		)
	}, nil)
}
