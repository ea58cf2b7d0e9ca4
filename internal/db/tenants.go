package db

import (
	"context"
	"errors"
	"time"

	"github.com/lorekb/lore/models"
	"github.com/uptrace/bun"
)

// ErrTenantInUse refuses to delete a tenant that still owns sites or users:
// deleting it would orphan them.
var ErrTenantInUse = errors.New("tenant still has sites or users")

// ListTenants returns a page of tenants, newest first, whose name or slug
// contains keyword (case-insensitive; empty: all), and the total.
func (d *DB) ListTenants(ctx context.Context, keyword string, limit, offset int) ([]models.Tenant, int, error) {
	rows := []models.Tenant{}
	q := d.NewSelect().Model(&rows)
	if keyword != "" {
		op, kw := d.LikeOp(), Like(keyword)
		q = q.WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where("name "+op+" ? ESCAPE '\\'", kw).WhereOr("slug "+op+" ? ESCAPE '\\'", kw)
		})
	}
	n, err := q.OrderExpr("id DESC").Limit(int64(limit)).Offset(int64(offset)).ScanAndCount(ctx)
	return rows, int(n), Classify(err)
}

// CreateTenant inserts a tenant; a taken slug is ErrConflict.
func (d *DB) CreateTenant(ctx context.Context, t *models.Tenant) error {
	defer d.tenantsChanged(ctx)
	return d.Tx(ctx, func(ctx context.Context, tx bun.Tx) error { return insertTenant(ctx, tx, t) })
}

// tenantsChanged reports a write to tenant rows.
func (d *DB) tenantsChanged(ctx context.Context) { d.changed(ctx, Change{Tenants: true}) }

func insertTenant(ctx context.Context, tx bun.IDB, t *models.Tenant) error {
	now := time.Now().UTC()
	t.CreatedAt, t.UpdatedAt = now, now
	_, err := tx.NewInsert().Model(t).ExcludeColumn("id").Returning("id").Exec(ctx)
	return Classify(err)
}

// CreateTenantWithAdmin inserts a tenant and its first administrator (an
// admin of the new tenant) together, or neither.
func (d *DB) CreateTenantWithAdmin(ctx context.Context, t *models.Tenant, admin *models.User) error {
	defer d.tenantsChanged(ctx)
	return d.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := insertTenant(ctx, tx, t); err != nil {
			return err
		}
		admin.TenantID = t.ID
		return Classify(insertUser(ctx, tx, admin, nil))
	})
}

// UpdateTenant writes every editable field of a tenant.
func (d *DB) UpdateTenant(ctx context.Context, t *models.Tenant) error {
	defer d.tenantsChanged(ctx)
	t.UpdatedAt = time.Now().UTC()
	res, err := d.NewUpdate().Model(t).Column("name", "slug", "domain", "logo_url", "description", "status", "plan", "updated_at").
		WherePK().Exec(ctx)
	return oneRow(res, err)
}

// DeleteTenant deletes a tenant that owns no site and no user
// (ErrTenantInUse otherwise), with its system configurations.
func (d *DB) DeleteTenant(ctx context.Context, id int64) error {
	defer d.changed(ctx, Change{Tenants: true, Configs: []int64{id}})
	return d.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		for _, m := range []any{(*models.Site)(nil), (*models.User)(nil)} {
			n, err := tx.NewSelect().Model(m).Where("tenant_id = ?", id).Count(ctx)
			if err != nil {
				return err
			}
			if n > 0 {
				return ErrTenantInUse
			}
		}
		if err := deleteByID(ctx, tx, (*models.Tenant)(nil), id); err != nil {
			return err
		}
		_, err := tx.NewDelete().Model((*models.SystemConfig)(nil)).Where("tenant_id = ?", id).Exec(ctx)
		return err
	})
}
