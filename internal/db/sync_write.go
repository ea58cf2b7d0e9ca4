package db

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/lorekb/lore/models"
	"github.com/uptrace/bun"
)

// execRows runs head, then rows as "(?, ?), (?, ?)" ($1… on PostgreSQL,
// the first row cast to types, which the other rows take), then tail: one
// statement for a batch whose values travel as bind parameters, not as
// literals bun escapes into the text (documents are tens of KB).
func (d *DB) execRows(ctx context.Context, tx bun.Tx, head string, types []string, rows [][]any, tail string) error {
	pg := d.Postgres()
	args := make([]any, 0, 1+len(rows)*len(types))
	if pg {
		// The extended protocol: lore's connections default to the simple
		// one, which would write the arguments into the text again.
		args = append(args, pgx.QueryExecModeExec)
	}
	values := make([]string, len(rows))
	for r, row := range rows {
		marks := make([]string, len(row))
		for i, v := range row {
			args = append(args, v)
			switch {
			case !pg:
				marks[i] = "?"
			case r == 0:
				marks[i] = "$" + strconv.Itoa(len(args)-1) + "::" + types[i]
			default:
				marks[i] = "$" + strconv.Itoa(len(args)-1)
			}
		}
		values[r] = "(" + strings.Join(marks, ", ") + ")"
	}
	query := head + strings.Join(values, ", ") + tail
	_, err := tx.Tx.ExecContext(ctx, query, args...)
	return err
}

// timeArg is t as a bind parameter: on SQLite in bun's text, so bun's
// reads and comparisons see what bun would have written.
func (d *DB) timeArg(tx bun.Tx, t time.Time) any {
	if d.Postgres() {
		return t
	}
	return sqliteTime(tx, t)
}

// syncedDocColumns are the columns a sync's update writes: UpdateDocument's
// (views is the view flusher's), the provenance and, on PostgreSQL, the
// content words of a changed content (NULL: the row's stay).
var syncedDocColumns = []string{"id", "collection_id", "title", "content", "summary", "cover_image", "category", "author", "tags", "status",
	"vector_status", "content_version", "reading_time", "updated_at", "parse_meta", "content_words"}

var syncedDocTypes = []string{"bigint", "bigint", "text", "text", "text", "text", "text", "text", "text", "text",
	"text", "bigint", "bigint", "timestamptz", "text", "text"}

// syncedDocValues are a document's syncedDocColumns values, less content_words.
func (d *DB) syncedDocValues(tx bun.Tx, doc *models.Document) []any {
	return []any{doc.ID, doc.CollectionID, doc.Title, doc.Content, doc.Summary, doc.CoverImage, doc.Category, doc.Author, doc.Tags,
		doc.Status, doc.VectorStatus, doc.ContentVersion, doc.ReadingTime, d.timeArg(tx, doc.UpdatedAt), doc.ParseMeta}
}

// sameArg compares two syncedDocValues entries (pointers by what they point at).
func sameArg(a, b any) bool {
	switch x := a.(type) {
	case *int64:
		y := b.(*int64)
		return x == y || (x != nil && y != nil && *x == *y)
	case *string:
		y := b.(*string)
		return x == y || (x != nil && y != nil && *x == *y)
	}
	return a == b
}

// updateSyncedRows writes documents in one statement: the syncedDocColumns
// that differ from olds[i] in some row, so the indexes of the columns a
// sync leaves alone (status, collection, title…) are not rewritten;
// words[i] are docs[i]'s content words on PostgreSQL ("" when its content
// did not change).
func (d *DB) updateSyncedRows(ctx context.Context, tx bun.Tx, docs, olds []*models.Document, words []string) error {
	rows := make([][]any, len(docs))
	changed := make([]bool, len(syncedDocColumns))
	changed[0] = true // the id the rows are matched by
	for i, doc := range docs {
		rows[i] = d.syncedDocValues(tx, doc)
		was := d.syncedDocValues(tx, olds[i])
		for c := 1; c < len(was); c++ {
			changed[c] = changed[c] || !sameArg(was[c], rows[i][c])
		}
		if d.Postgres() {
			var w *string
			if words[i] != "" {
				w = &words[i]
				changed[len(changed)-1] = true
			}
			rows[i] = append(rows[i], w)
		}
	}
	var cols, types, set []string
	for c, col := range syncedDocColumns {
		if !changed[c] {
			continue
		}
		cols, types = append(cols, col), append(types, syncedDocTypes[c])
		switch {
		case c == 0:
		case col == "content_words":
			set = append(set, "content_words = COALESCE(_data.content_words, documents.content_words)")
		default:
			set = append(set, col+" = _data."+col)
		}
	}
	if len(set) == 0 {
		return nil
	}
	for i, row := range rows {
		kept := row[:0:0]
		for c, v := range row {
			if changed[c] {
				kept = append(kept, v)
			}
		}
		rows[i] = kept
	}
	// OR FAIL on SQLite: an error fails the whole transaction anyway, and
	// without ABORT's statement rollback the statement keeps no journal of
	// the pages it changes (which for a batch of documents spills to a
	// temporary file).
	update := " UPDATE documents SET "
	if !d.Postgres() {
		update = " UPDATE OR FAIL documents SET "
	}
	return d.execRows(ctx, tx, "WITH _data ("+strings.Join(cols, ", ")+") AS (VALUES ", types, rows,
		")"+update+strings.Join(set, ", ")+" FROM _data WHERE documents.id = _data.id")
}

// saveSyncItems writes items (insert or replace) in one statement, with
// the time they were synced. A key given twice keeps its last item (one
// statement may not write a row twice).
func (d *DB) saveSyncItems(ctx context.Context, tx bun.Tx, items []*models.SyncItem) error {
	if len(items) == 0 {
		return nil
	}
	now := time.Now().UTC()
	last := map[[2]any]int{}
	for i, it := range items {
		last[[2]any{it.DataSourceID, it.Key}] = i
	}
	var rows [][]any
	for i, it := range items {
		it.SyncedAt = now
		if it.Links == "" {
			it.Links = "[]" // the column's default, as bun's insert writes it
		}
		if last[[2]any{it.DataSourceID, it.Key}] != i {
			continue
		}
		rows = append(rows, []any{it.DataSourceID, it.Key, it.SiteID, it.DocumentID, it.Version, it.Ref, it.ETag, it.LastModified, it.Links,
			it.SyncedRevision, it.RunID, d.timeArg(tx, now)})
	}
	return d.execRows(ctx, tx, `INSERT INTO sync_items (data_source_id, item_key, site_id, document_id, version, ref, etag, last_modified,
		links, synced_revision, run_id, synced_at) VALUES `,
		[]string{"bigint", "text", "bigint", "bigint", "text", "text", "text", "text", "text", "bigint", "bigint", "timestamptz"}, rows,
		` ON CONFLICT (data_source_id, item_key) DO UPDATE SET site_id = EXCLUDED.site_id, document_id = EXCLUDED.document_id,
		version = EXCLUDED.version, ref = EXCLUDED.ref, etag = EXCLUDED.etag, last_modified = EXCLUDED.last_modified,
		links = EXCLUDED.links, synced_revision = EXCLUDED.synced_revision, run_id = EXCLUDED.run_id, synced_at = EXCLUDED.synced_at`)
}
