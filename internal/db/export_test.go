package db

import (
	"context"

	"github.com/lorekb/lore/models"
)

// Internals the db_test package checks.
var (
	SplitWords          = splitWords
	ContentWordsPattern = contentWordsPattern
)

// InsertDocuments inserts docs in one statement as lore's writers do.
func (d *DB) InsertDocuments(ctx context.Context, docs []*models.Document) error {
	return d.insertDocuments(ctx, d.DB, docs)
}
