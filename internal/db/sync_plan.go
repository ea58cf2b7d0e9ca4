package db

import (
	"context"

	"github.com/lorekb/lore/models"
)

// SyncItemVersions returns every item of a data source, by key, with only
// what a plan compares: key, version and document. Every run of a large
// source reads them all, most of them unchanged.
func (d *DB) SyncItemVersions(ctx context.Context, dataSourceID int64) ([]models.SyncItem, error) {
	out := []models.SyncItem{}
	err := d.NewSelect().Model(&out).Column("item_key", "version", "document_id").
		Where("data_source_id = ?", dataSourceID).Order("item_key").Scan(ctx)
	return out, Classify(err)
}
