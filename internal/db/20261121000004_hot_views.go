package db

import (
	"context"

	"github.com/uptrace/bun"
)

// View counting writes documents.views many times a second. With an index on
// views every such update rewrote an entry in every index of the row,
// including the large trigram GIN indexes, whose growing pending lists then
// slowed keyword search down (measured: a keyword list that takes ~10 ms on a
// fresh table took ~800 ms after a third of the rows had new view counts).
// Without that index, and with free space left in each page, PostgreSQL
// updates views in place (HOT) and touches no index. Sorting the admin list
// by views still works on the site-filtered rows.
func init() {
	migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		// vector_status changes three times per vectorization: without its
		// index those writes are in-place too.
		for _, idx := range []string{"documents_views_idx", "documents_vector_status_idx"} {
			if _, err := db.ExecContext(ctx, "DROP INDEX IF EXISTS "+idx); err != nil {
				return err
			}
		}
		if !isPostgres(db) {
			return nil
		}
		_, err := db.ExecContext(ctx, "ALTER TABLE documents SET (fillfactor = 85)")
		return err
	}, nil)
}
