package db

import (
	"context"
	"time"

	"github.com/lorekb/lore/models"
	"github.com/uptrace/bun"
)

// System configuration documents (ai-config, bot-config) are JSON values
// keyed by (tenant_id, config_key); the site access password lives on the
// site row. Both are written here.

// GetSystemConfig returns one configuration document of a tenant, or
// ErrNotFound when the tenant has not stored it.
func (d *DB) GetSystemConfig(ctx context.Context, tenantID int64, key string) (*models.SystemConfig, error) {
	row := new(models.SystemConfig)
	err := d.NewSelect().Model(row).Where("tenant_id = ? AND config_key = ?", tenantID, key).Scan(ctx)
	if err != nil {
		return nil, Classify(err)
	}
	return row, d.openConfig(row)
}

// ListSystemConfigs returns every configuration document of a tenant,
// ordered by key.
func (d *DB) ListSystemConfigs(ctx context.Context, tenantID int64) ([]models.SystemConfig, error) {
	rows := []models.SystemConfig{}
	err := d.NewSelect().Model(&rows).Where("tenant_id = ?", tenantID).Order("config_key").Scan(ctx)
	for i := range rows {
		if err == nil {
			err = d.openConfig(&rows[i])
		}
	}
	return rows, Classify(err)
}

// PutSystemConfig stores (inserts or replaces) a configuration document.
func (d *DB) PutSystemConfig(ctx context.Context, tenantID int64, key, value string) (*models.SystemConfig, error) {
	row := &models.SystemConfig{TenantID: tenantID, ConfigKey: key, Value: value}
	err := d.withSealed(&row.Value, func() error { return upsertSystemConfig(ctx, d.DB, row) })
	d.configsChanged(ctx, tenantID)
	return row, err
}

// configsChanged reports a write (or a failed attempt, which may have
// landed) to a tenant's configuration documents.
func (d *DB) configsChanged(ctx context.Context, tenantID int64) {
	d.changed(ctx, Change{Configs: []int64{tenantID}})
}

// UpdateSystemConfig reads, changes and writes one configuration document in
// a transaction, so concurrent updates of different sections do not lose each
// other's changes. The row is created first when missing (an empty value, ON
// CONFLICT DO NOTHING, so racing first writers wait for each other on the
// unique key) and then read locked (FOR UPDATE on PostgreSQL; SQLite
// transactions take the write lock up front). fn gets the stored value (""
// and false when there was none) and returns the new value; an error from fn
// rolls everything back, the created row included, and is returned as is.
func (d *DB) UpdateSystemConfig(ctx context.Context, tenantID int64, key string,
	fn func(current string, exists bool) (string, error)) (*models.SystemConfig, error) {
	cur := new(models.SystemConfig)
	var fnErr error
	err := d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		now := time.Now().UTC()
		seed := &models.SystemConfig{TenantID: tenantID, ConfigKey: key, CreatedAt: now, UpdatedAt: now}
		res, err := tx.NewInsert().Model(seed).ExcludeColumn("id").
			On("CONFLICT (tenant_id, config_key) DO NOTHING").Returning("NULL").Exec(ctx)
		if err != nil {
			return err
		}
		created, _ := res.RowsAffected()
		q := tx.NewSelect().Model(cur).Where("tenant_id = ? AND config_key = ?", tenantID, key)
		if d.Postgres() {
			q = q.For("UPDATE")
		}
		if err := q.Scan(ctx); err != nil {
			return err
		}
		if err := d.openConfig(cur); err != nil {
			return err
		}
		value, err := fn(cur.Value, created == 0)
		if err != nil {
			fnErr = err
			return err
		}
		cur.Value, cur.UpdatedAt = value, now
		return d.withSealed(&cur.Value, func() error {
			_, err := tx.NewUpdate().Model(cur).Column("value", "updated_at").WherePK().Exec(ctx)
			return err
		})
	})
	if fnErr != nil {
		return nil, fnErr
	}
	d.configsChanged(ctx, tenantID)
	if err != nil {
		return nil, Classify(err)
	}
	return cur, nil
}

func upsertSystemConfig(ctx context.Context, db bun.IDB, row *models.SystemConfig) error {
	now := time.Now().UTC()
	row.CreatedAt, row.UpdatedAt = now, now
	_, err := db.NewInsert().Model(row).ExcludeColumn("id").
		On("CONFLICT (tenant_id, config_key) DO UPDATE").
		Set("value = EXCLUDED.value").Set("updated_at = EXCLUDED.updated_at").Exec(ctx)
	return Classify(err)
}

// DeleteSystemConfig removes a configuration document; ErrNotFound when the
// tenant has none under that key.
func (d *DB) DeleteSystemConfig(ctx context.Context, tenantID int64, key string) error {
	res, err := d.NewDelete().Model((*models.SystemConfig)(nil)).
		Where("tenant_id = ? AND config_key = ?", tenantID, key).Exec(ctx)
	d.configsChanged(ctx, tenantID)
	return oneRow(res, err)
}

// SetSitePassword stores the bcrypt hash of a site's access password and
// makes the site private (requires_password true, is_public false). A site
// that is gone or being deleted is ErrNotFound.
func (d *DB) SetSitePassword(ctx context.Context, siteID int64, hash string) error {
	return d.updateSiteAccess(ctx, siteID, hash, true)
}

// ClearSitePassword removes a site's access password and makes the site
// public again (requires_password false, is_public true). A site that is gone
// or being deleted is ErrNotFound.
func (d *DB) ClearSitePassword(ctx context.Context, siteID int64) error {
	return d.updateSiteAccess(ctx, siteID, "", false)
}

func (d *DB) updateSiteAccess(ctx context.Context, siteID int64, hash string, protect bool) error {
	res, err := d.NewUpdate().Model((*models.Site)(nil)).
		Set("password_hash = ?", hash).Set("requires_password = ?", protect).Set("is_public = ?", !protect).
		Set("updated_at = ?", time.Now().UTC()).
		Where("id = ? AND deleting = ?", siteID, false).Exec(ctx)
	if err := oneRow(res, err); err != nil {
		return err
	}
	d.sitesChanged(ctx, d.siteKeys(ctx, siteID))
	return nil
}

// SiteTenants returns the tenant of each existing site among ids (missing
// ids are absent), so configuration that names sites can be checked against
// the caller's tenant in one query.
func (d *DB) SiteTenants(ctx context.Context, ids []int64) (map[int64]int64, error) {
	return valuesByID(ctx, d, ids, "tenant_id", func(s *models.Site) (int64, int64) { return s.ID, s.TenantID })
}
