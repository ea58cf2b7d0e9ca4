package db

import (
	"context"
	"fmt"

	"github.com/lorekb/lore/models"
	"github.com/uptrace/bun"
)

// Imports: data sources and the import items that make a retried import
// activity idempotent (see models.ImportItem). A database created by this
// version already has both tables from the first migration.
func init() {
	migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		for _, m := range []any{(*models.DataSource)(nil), (*models.ImportItem)(nil)} {
			if _, err := db.NewCreateTable().Model(m).IfNotExists().Exec(ctx); err != nil {
				return fmt.Errorf("create %T: %w", m, err)
			}
		}
		for _, q := range []string{
			"CREATE INDEX IF NOT EXISTS data_sources_tenant_idx ON data_sources (tenant_id, site_id)",
			"CREATE INDEX IF NOT EXISTS import_items_document_idx ON import_items (document_id)",
		} {
			if _, err := db.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		return nil
	}, nil)
}
