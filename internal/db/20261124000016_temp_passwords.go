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
	if db.Dialect().Name().String() == "pg" {
		if typ == "TIMESTAMP" {
			typ = "TIMESTAMPTZ"
		}
		_, err := db.ExecContext(ctx, "ALTER TABLE "+table+" ADD COLUMN IF NOT EXISTS "+column+" "+typ)
		return err
	}
	var n int
	if err := db.NewRaw("SELECT COUNT(*) FROM pragma_table_info(?) WHERE name = ?", table, column).Scan(ctx, &n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	_, err := db.ExecContext(ctx, "ALTER TABLE "+table+" ADD COLUMN "+column+" "+typ)
	return err
}
