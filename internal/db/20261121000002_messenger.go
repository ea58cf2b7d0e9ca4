package db

import (
	"context"

	"github.com/uptrace/bun"
)

// The messenger channels' sync state: the sync_msg cursor of every
// customer-service account, so a pull resumes where the previous one ended.
func init() {
	migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		return createTables(ctx, db, (*MessengerCursor)(nil))
	}, nil)
}
