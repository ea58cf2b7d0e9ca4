package db

import (
	"context"

	"github.com/uptrace/bun"
)

// chat_sessions.message_count counts the messages a reader sees
// (isReaderMessage), as the dashboard does; sessions stored before counted
// every row, tool rows included.
func init() {
	migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		_, err := db.ExecContext(ctx, `UPDATE chat_sessions SET message_count = (SELECT COUNT(*) FROM chat_messages AS m
  WHERE m.thread_id = chat_sessions.thread_id AND `+visibleMessage+`)`)
		return err
	}, nil)
}
