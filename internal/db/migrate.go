package db

import (
	"context"
	"fmt"

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
