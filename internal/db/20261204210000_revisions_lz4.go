package db

import (
	"context"

	"github.com/uptrace/bun"
)

// document_revisions.content is compressed with lz4 like documents.content:
// every created or imported document stores its content in both, and pglz
// took twice lz4's time on a 30 KB page (256 such pages: 131 ms against
// 64 ms of PostgreSQL's time). Only values written from now on use it.
func init() {
	migrations.MustRegister(postgresOnly(func(ctx context.Context, db *bun.DB) error {
		lz4, err := contentIsLZ4(ctx, db)
		if err != nil || !lz4 {
			return err
		}
		_, err = db.ExecContext(ctx, "ALTER TABLE document_revisions ALTER COLUMN content SET COMPRESSION lz4")
		return err
	}), nil)
}
