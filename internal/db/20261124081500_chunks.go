package db

import (
	"context"

	"github.com/lorekb/lore/models"
	"github.com/uptrace/bun"
)

// Chunk rows (models.Chunk): the indexed chunks of every document version in
// the database, whatever the vector store. A database created by this
// version already has the table from the first migration. Documents indexed
// before it have no rows: their sites are re-indexed once when a worker
// starts (worker.ReindexOutdatedSites), which writes them.
func init() {
	migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		if err := createTables(ctx, db, (*models.Chunk)(nil)); err != nil {
			return err
		}
		return execAll(ctx, db, "CREATE INDEX IF NOT EXISTS chunks_site_format_idx ON chunks (site_id, index_format)")
	}, nil)
}
