package db

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"
)

// migrations is the one migration set, shared by both dialects. A new schema
// change is a new entry; an applied entry is never edited.
var migrations = migrate.NewMigrations()

// Migrate applies every pending migration. It is safe to run on every start.
func (d *DB) Migrate(ctx context.Context) error {
	m := migrate.NewMigrator(d.DB, migrations, migrate.WithMarkAppliedOnSuccess(true))
	if err := m.Init(ctx); err != nil {
		return fmt.Errorf("migrate init: %w", err)
	}
	if err := m.Lock(ctx); err != nil {
		return fmt.Errorf("migrate lock: %w", err)
	}
	defer m.Unlock(ctx) //nolint:errcheck
	if _, err := m.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

// createTables creates the tables of the given models where they do not
// exist yet.
func createTables(ctx context.Context, db *bun.DB, ms ...any) error {
	for _, m := range ms {
		if _, err := db.NewCreateTable().Model(m).IfNotExists().Exec(ctx); err != nil {
			return fmt.Errorf("create %T: %w", m, err)
		}
	}
	return nil
}

// execAll runs the statements in order; the error names the one that failed.
func execAll(ctx context.Context, db *bun.DB, stmts ...string) error {
	for _, q := range stmts {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

func isPostgres(db *bun.DB) bool { return db.Dialect().Name().String() == "pg" }

// postgresOnly is a migration that runs fn on PostgreSQL and does nothing on
// SQLite.
func postgresOnly(fn migrate.MigrationFunc) migrate.MigrationFunc {
	return func(ctx context.Context, db *bun.DB) error {
		if !isPostgres(db) {
			return nil
		}
		return fn(ctx, db)
	}
}

// onPostgres is a migration that runs the statements on PostgreSQL only.
func onPostgres(stmts ...string) migrate.MigrationFunc {
	return postgresOnly(func(ctx context.Context, db *bun.DB) error { return execAll(ctx, db, stmts...) })
}

// addingColumns is a migration that adds each (name, SQL type) column the
// table lacks.
func addingColumns(table string, cols ...[2]string) migrate.MigrationFunc {
	return func(ctx context.Context, db *bun.DB) error { return addMissingColumns(ctx, db, table, cols) }
}

// pgServerVersion is PostgreSQL's server_version_num (140000 for 14.0).
func pgServerVersion(ctx context.Context, db *bun.DB) (int, error) {
	var version int
	if err := db.NewRaw("SELECT current_setting('server_version_num')::int").Scan(ctx, &version); err != nil {
		return 0, fmt.Errorf("server version: %w", err)
	}
	return version, nil
}

// contentIsLZ4 reports whether documents.content is compressed with lz4
// (the keyword migration made it so wherever the server has lz4).
func contentIsLZ4(ctx context.Context, db *bun.DB) (bool, error) {
	version, err := pgServerVersion(ctx, db)
	if err != nil || version < 140000 {
		return false, err
	}
	var n int
	err = db.NewRaw(`SELECT count(*) FROM pg_attribute WHERE attrelid = 'documents'::regclass
		AND attname = 'content' AND attcompression = 'l'`).Scan(ctx, &n)
	if err != nil {
		return false, fmt.Errorf("content compression: %w", err)
	}
	return n > 0, nil
}

// addMissingColumns adds each (name, SQL type) column the table lacks.
func addMissingColumns(ctx context.Context, db *bun.DB, table string, cols [][2]string) error {
	for _, c := range cols {
		if isPostgres(db) {
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
