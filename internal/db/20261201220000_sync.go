package db

import (
	"context"
	"fmt"

	"github.com/lorekb/lore/models"
	"github.com/uptrace/bun"
)

// Sync: the settings of data sources kept in sync with a site, the items
// binding their files and pages to documents, and their runs. At most one
// run of a data source is running (the partial unique index): the lock
// that keeps two syncs from writing the same items.
func init() {
	migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		for _, m := range []any{(*models.SyncSettings)(nil), (*models.SyncItem)(nil), (*models.SyncRun)(nil)} {
			if _, err := db.NewCreateTable().Model(m).IfNotExists().Exec(ctx); err != nil {
				return fmt.Errorf("create %T: %w", m, err)
			}
		}
		for _, q := range []string{
			"CREATE INDEX IF NOT EXISTS sync_items_document_idx ON sync_items (document_id)",
			"CREATE INDEX IF NOT EXISTS sync_runs_source_idx ON sync_runs (data_source_id, id)",
			"CREATE UNIQUE INDEX IF NOT EXISTS sync_runs_running_idx ON sync_runs (data_source_id) WHERE status = 'running'",
		} {
			if _, err := db.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		return nil
	}, nil)
}
