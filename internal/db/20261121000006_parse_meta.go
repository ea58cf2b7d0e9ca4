package db

import (
	"context"

	"github.com/uptrace/bun"
)

// documents.parse_meta holds the parser metadata a client may send when it
// creates a document (WIRE §3 DocumentCreate parse_meta): a JSON object as
// text, NULL when none. A database created by this version already has the
// column (the first migration creates the tables from the current models),
// so the column is added only where it is missing. Adding a nullable column
// without a default rewrites no rows on either dialect.
func init() {
	migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		if db.Dialect().Name().String() == "pg" {
			_, err := db.ExecContext(ctx, "ALTER TABLE documents ADD COLUMN IF NOT EXISTS parse_meta TEXT")
			return err
		}
		var n int
		if err := db.NewRaw("SELECT COUNT(*) FROM pragma_table_info('documents') WHERE name = 'parse_meta'").Scan(ctx, &n); err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		_, err := db.ExecContext(ctx, "ALTER TABLE documents ADD COLUMN parse_meta TEXT")
		return err
	}, nil)
}
