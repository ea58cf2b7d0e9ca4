package db

import (
	"context"

	"github.com/uptrace/bun"
)

// users.temp_password_expires_at marks a generated (invite or reset)
// password: when it stops working, and that it must be changed first. A
// database created by this version already has the column; older ones get
// it (nullable, no default: no row is rewritten).
func init() {
	migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return addColumnIfMissing(ctx, db, "users", "temp_password_expires_at", "TIMESTAMP")
	}, nil)
}

// addColumnIfMissing adds a nullable column on either dialect unless the
// table has it already.
func addColumnIfMissing(ctx context.Context, db *bun.DB, table, column, typ string) error {
	if isPostgres(db) && typ == "TIMESTAMP" {
		typ = "TIMESTAMPTZ"
	}
	return addMissingColumns(ctx, db, table, [][2]string{{column, typ}})
}
