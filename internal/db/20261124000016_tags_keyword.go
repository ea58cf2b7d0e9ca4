package db

import (
	"context"

	"github.com/uptrace/bun"
)

// The document keyword also matches tags (the reference's keyword covers
// title, content, summary and tags). On PostgreSQL the keyword list finds
// matches through trigram indexes only (see listDocumentsByKeyword), so tags
// get one like title, summary and content have.
func init() {
	migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		if db.Dialect().Name().String() != "pg" {
			return nil
		}
		_, err := db.ExecContext(ctx, "CREATE INDEX IF NOT EXISTS documents_tags_trgm_idx ON documents USING gin (tags gin_trgm_ops)")
		return err
	}, nil)
}
