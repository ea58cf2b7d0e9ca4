package db

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"
)

// Keyword search (PostgreSQL): the content column is compressed with lz4
// instead of pglz. Every candidate row of a keyword list is rechecked against
// its content, and a ~4 KB content took ~25 µs to decompress with pglz and
// ~9 µs with lz4 (measured on the 10,000-document benchmark corpus), which is
// a third of the recheck. Only values written from now on use lz4; existing
// ones are converted when their document is next saved (or by an operator
// with UPDATE documents SET content = concat(content) and a VACUUM). A server
// older than 14 or built without lz4 keeps pglz. The trigram indexes the
// keyword list uses come from the first migration.
func init() {
	migrations.MustRegister(postgresOnly(func(ctx context.Context, db *bun.DB) error {
		version, err := pgServerVersion(ctx, db)
		if err != nil || version < 140000 { // lz4 came with PostgreSQL 14
			return err
		}
		_, err = db.ExecContext(ctx, "ALTER TABLE documents ALTER COLUMN content SET COMPRESSION lz4")
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "0A000" { // compression method lz4 not supported
			return nil
		}
		if err != nil {
			return fmt.Errorf("documents.content lz4: %w", err)
		}
		return nil
	}), nil)
}
