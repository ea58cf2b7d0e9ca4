package db

import (
	"context"

	"github.com/uptrace/bun"
)

// tool_results are keyed by (thread_id, tool_call_id) instead of
// tool_call_id alone: the built-in model derives call ids from the question,
// so two threads asking the same first question overwrote each other's
// result. A database created by this version already has the key (the first
// migration creates the tables from the current models).
func init() {
	migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		if isPostgres(db) {
			var n int
			if err := db.NewRaw(`SELECT COUNT(*) FROM information_schema.key_column_usage
				WHERE table_name = 'tool_results' AND constraint_name = 'tool_results_pkey'`).Scan(ctx, &n); err != nil {
				return err
			}
			if n == 2 {
				return nil
			}
			_, err := db.ExecContext(ctx, "ALTER TABLE tool_results DROP CONSTRAINT tool_results_pkey, ADD PRIMARY KEY (thread_id, tool_call_id)")
			return err
		}
		var n int
		if err := db.NewRaw("SELECT COUNT(*) FROM pragma_table_info('tool_results') WHERE pk > 0").Scan(ctx, &n); err != nil {
			return err
		}
		if n == 2 {
			return nil
		}
		for _, q := range []string{
			`CREATE TABLE tool_results_rekeyed (thread_id VARCHAR NOT NULL, tool_call_id VARCHAR NOT NULL,
				content VARCHAR NOT NULL, created_at TIMESTAMP NOT NULL, PRIMARY KEY (thread_id, tool_call_id))`,
			`INSERT INTO tool_results_rekeyed (thread_id, tool_call_id, content, created_at)
				SELECT thread_id, tool_call_id, content, created_at FROM tool_results`,
			`DROP TABLE tool_results`,
			`ALTER TABLE tool_results_rekeyed RENAME TO tool_results`,
			`CREATE INDEX IF NOT EXISTS tool_results_thread_idx ON tool_results (thread_id)`,
		} {
			if _, err := db.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return nil
	}, nil)
}
