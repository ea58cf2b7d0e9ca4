package db

import (
	"context"

	"github.com/uptrace/bun"

	"github.com/lorekb/lore/models"
)

// DocumentCollections returns the collection of each of the documents (0
// when a document sits at the site's root), so retrieval can keep the hits
// of one collection subtree. Unknown ids are absent.
func (d *DB) DocumentCollections(ctx context.Context, ids []int64) (map[int64]int64, error) {
	out := make(map[int64]int64, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var rows []models.Document
	err := d.NewSelect().Model(&rows).Column("id", "collection_id").Where("id IN (?)", bun.List(ids)).Scan(ctx)
	for _, r := range rows {
		var c int64
		if r.CollectionID != nil {
			c = *r.CollectionID
		}
		out[r.ID] = c
	}
	return out, Classify(err)
}

// DocumentTitles returns the title of each of the documents (unknown ids are
// absent), for showing ranked chunks.
func (d *DB) DocumentTitles(ctx context.Context, ids []int64) (map[int64]string, error) {
	out := make(map[int64]string, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var rows []models.Document
	err := d.NewSelect().Model(&rows).Column("id", "title").Where("id IN (?)", bun.List(ids)).Scan(ctx)
	for _, r := range rows {
		out[r.ID] = r.Title
	}
	return out, Classify(err)
}
