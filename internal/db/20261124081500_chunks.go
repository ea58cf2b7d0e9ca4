package db

import (
	"context"
	"fmt"

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
		if _, err := db.NewCreateTable().Model((*models.Chunk)(nil)).IfNotExists().Exec(ctx); err != nil {
			return fmt.Errorf("create chunks: %w", err)
		}
		q := "CREATE INDEX IF NOT EXISTS chunks_site_format_idx ON chunks (site_id, index_format)"
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
		return nil
	}, nil)
}
