package db

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
)

// The messenger channels' sync state: the sync_msg cursor of every
// customer-service account, so a pull resumes where the previous one ended.
func init() {
	migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		if _, err := db.NewCreateTable().Model((*MessengerCursor)(nil)).IfNotExists().Exec(ctx); err != nil {
			return fmt.Errorf("create messenger_cursors: %w", err)
		}
		return nil
	}, nil)
}
