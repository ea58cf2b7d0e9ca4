package db

import (
	"context"

	"github.com/lorekb/lore/models"
)

// ActiveSiteAPIKey returns the bot API key of that hash unless it is revoked
// (ErrNotFound then, as for an unknown key). Callers that log or limit per
// key need the row itself, not only its site (SiteByAPIKeyHash).
func (d *DB) ActiveSiteAPIKey(ctx context.Context, hash string) (*models.SiteAPIKey, error) {
	return selectOne[models.SiteAPIKey](ctx, d, "key_hash = ? AND revoked_at IS NULL", hash)
}
