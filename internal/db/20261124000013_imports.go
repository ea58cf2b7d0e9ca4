package db

import (
	"context"

	"github.com/lorekb/lore/models"
	"github.com/uptrace/bun"
)

// Imports: data sources and the import items that make a retried import
// activity idempotent (see models.ImportItem). A database created by this
// version already has both tables from the first migration.
func init() {
	migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		if err := createTables(ctx, db, (*models.DataSource)(nil), (*models.ImportItem)(nil)); err != nil {
			return err
		}
		return execAll(ctx, db,
			"CREATE INDEX IF NOT EXISTS data_sources_tenant_idx ON data_sources (tenant_id, site_id)",
			"CREATE INDEX IF NOT EXISTS import_items_document_idx ON import_items (document_id)",
		)
	}, nil)
}
