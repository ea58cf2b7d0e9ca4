package db

import (
	"context"

	"github.com/uptrace/bun"
)

// jobs gain what a job concerns (tenant_id, site_id, document_id) and its
// human title, so a job's scope is checked from its row and job views name
// their subject. A database created by this version already has the columns
// (the first migration creates the tables from the current models); older
// ones get them with defaults (0 and ”), which rewrites no rows on
// PostgreSQL 11+ and SQLite.
func init() {
	migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		cols := []struct{ name, def string }{
			{"tenant_id", "BIGINT NOT NULL DEFAULT 0"}, {"site_id", "BIGINT NOT NULL DEFAULT 0"},
			{"document_id", "BIGINT NOT NULL DEFAULT 0"}, {"title", "TEXT NOT NULL DEFAULT ''"},
		}
		pg := db.Dialect().Name().String() == "pg"
		for _, c := range cols {
			if pg {
				if _, err := db.ExecContext(ctx, "ALTER TABLE jobs ADD COLUMN IF NOT EXISTS "+c.name+" "+c.def); err != nil {
					return err
				}
				continue
			}
			var n int
			if err := db.NewRaw("SELECT COUNT(*) FROM pragma_table_info('jobs') WHERE name = ?", c.name).Scan(ctx, &n); err != nil {
				return err
			}
			if n > 0 {
				continue
			}
			if _, err := db.ExecContext(ctx, "ALTER TABLE jobs ADD COLUMN "+c.name+" "+c.def); err != nil {
				return err
			}
		}
		return nil
	}, nil)
}
