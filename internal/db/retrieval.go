package db

import (
	"context"

	"github.com/lorekb/lore/models"
)

// DocumentCollections returns the collection of each of the documents (0
// when a document sits at the site's root), so retrieval can keep the hits
// of one collection subtree. Unknown ids are absent.
func (d *DB) DocumentCollections(ctx context.Context, ids []int64) (map[int64]int64, error) {
	return valuesByID(ctx, d, ids, "collection_id", func(doc *models.Document) (int64, int64) {
		if doc.CollectionID == nil {
			return doc.ID, 0
		}
		return doc.ID, *doc.CollectionID
	})
}

// DocumentTitles returns the title of each of the documents (unknown ids are
// absent), for showing ranked chunks.
func (d *DB) DocumentTitles(ctx context.Context, ids []int64) (map[int64]string, error) {
	return valuesByID(ctx, d, ids, "title", func(doc *models.Document) (int64, string) { return doc.ID, doc.Title })
}
