package db

import (
	"context"
	"time"

	"github.com/lorekb/lore/models"
)

// CreateSiteAPIKey inserts a bot API key row (only the key's hash is stored).
// A hash collision is ErrConflict.
func (d *DB) CreateSiteAPIKey(ctx context.Context, k *models.SiteAPIKey) error {
	k.CreatedAt = time.Now().UTC()
	k.RevokedAt = nil
	_, err := d.NewInsert().Model(k).ExcludeColumn("id").Returning("id").Exec(ctx)
	return Classify(err)
}

// ListSiteAPIKeys returns every key of a site, revoked ones included, newest
// first.
func (d *DB) ListSiteAPIKeys(ctx context.Context, siteID int64) ([]models.SiteAPIKey, error) {
	keys := []models.SiteAPIKey{}
	err := d.NewSelect().Model(&keys).Where("site_id = ?", siteID).Order("id DESC").Scan(ctx)
	return keys, Classify(err)
}

// RevokeSiteAPIKey sets revoked_at on a key of the site (keeping the first
// revocation time when it is already revoked) and returns the key. A key that
// does not exist or belongs to another site is ErrNotFound.
func (d *DB) RevokeSiteAPIKey(ctx context.Context, siteID, keyID int64) (*models.SiteAPIKey, error) {
	now := time.Now().UTC()
	if _, err := d.NewUpdate().Model((*models.SiteAPIKey)(nil)).Set("revoked_at = ?", now).
		Where("id = ? AND site_id = ? AND revoked_at IS NULL", keyID, siteID).Exec(ctx); err != nil {
		return nil, Classify(err)
	}
	k := new(models.SiteAPIKey)
	if err := d.NewSelect().Model(k).Where("id = ? AND site_id = ?", keyID, siteID).Scan(ctx); err != nil {
		return nil, Classify(err)
	}
	return k, nil
}
