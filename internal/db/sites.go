package db

import (
	"context"

	"github.com/lorekb/lore/models"
)

// GetSite returns a site by id, including one being deleted.
func (d *DB) GetSite(ctx context.Context, id int64) (*models.Site, error) {
	s := new(models.Site)
	err := d.NewSelect().Model(s).Where("id = ?", id).Scan(ctx)
	return s, Classify(err)
}
