package db

import (
	"context"

	"github.com/uptrace/bun"
)

// tenants gain the fields the reference's tenant schema carries (domain,
// logo_url, description, status) and a JSON object of its EE plan fields. A
// database created by this version already has them (the first migration
// creates the tables from the current models), so each column is added only
// where it is missing; none rewrites rows (nullable, or a constant default).
func init() {
	migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return addMissingColumns(ctx, db, "tenants", [][2]string{
			{"domain", "TEXT"}, {"logo_url", "TEXT"}, {"description", "TEXT"},
			{"status", "TEXT NOT NULL DEFAULT 'active'"}, {"plan", "TEXT NOT NULL DEFAULT '{}'"},
		})
	}, nil)
}

// addMissingColumns adds each (name, SQL type) column the table lacks.
func addMissingColumns(ctx context.Context, db *bun.DB, table string, cols [][2]string) error {
	for _, c := range cols {
		if db.Dialect().Name().String() == "pg" {
			if _, err := db.ExecContext(ctx, "ALTER TABLE "+table+" ADD COLUMN IF NOT EXISTS "+c[0]+" "+c[1]); err != nil {
				return err
			}
			continue
		}
		var n int
		if err := db.NewRaw("SELECT COUNT(*) FROM pragma_table_info(?) WHERE name = ?", table, c[0]).Scan(ctx, &n); err != nil {
			return err
		}
		if n > 0 {
			continue
		}
		if _, err := db.ExecContext(ctx, "ALTER TABLE "+table+" ADD COLUMN "+c[0]+" "+c[1]); err != nil {
			return err
		}
	}
	return nil
}
