package db

import (
	"context"
	"strings"
	"time"

	"github.com/lorekb/lore/models"
	"github.com/uptrace/bun"
)

// DefaultTenantSlug is the slug of the tenant created on first start.
const DefaultTenantSlug = "default"

// EnsureDefaultTenant creates the default tenant when no tenant exists and
// returns its id.
func (d *DB) EnsureDefaultTenant(ctx context.Context) (int64, error) {
	var t models.Tenant
	err := d.NewSelect().Model(&t).Where("slug = ?", DefaultTenantSlug).Scan(ctx)
	if err == nil {
		return t.ID, nil
	}
	if Classify(err) != ErrNotFound {
		return 0, Classify(err)
	}
	now := time.Now().UTC()
	t = models.Tenant{Slug: DefaultTenantSlug, Name: "Default", CreatedAt: now, UpdatedAt: now}
	if _, err := d.NewInsert().Model(&t).On("CONFLICT (slug) DO NOTHING").Exec(ctx); err != nil {
		return 0, Classify(err)
	}
	err = d.NewSelect().Model(&t).Where("slug = ?", DefaultTenantSlug).Scan(ctx)
	return t.ID, Classify(err)
}

// GetTenant returns a tenant by id.
func (d *DB) GetTenant(ctx context.Context, id int64) (*models.Tenant, error) {
	return selectOne[models.Tenant](ctx, d, "id = ?", id)
}

// TenantBySlug returns a tenant by slug.
func (d *DB) TenantBySlug(ctx context.Context, slug string) (*models.Tenant, error) {
	return selectOne[models.Tenant](ctx, d, "slug = ?", slug)
}

// GetUser returns a user by id.
func (d *DB) GetUser(ctx context.Context, id int64) (*models.User, error) {
	return selectOne[models.User](ctx, d, "id = ?", id)
}

// UserByEmail returns a user by email (case-insensitive).
func (d *DB) UserByEmail(ctx context.Context, email string) (*models.User, error) {
	return selectOne[models.User](ctx, d, "email = ?", strings.ToLower(strings.TrimSpace(email)))
}

// CountUsers counts all users.
func (d *DB) CountUsers(ctx context.Context) (int, error) {
	n, err := d.NewSelect().Model((*models.User)(nil)).Count(ctx)
	return int(n), Classify(err)
}

// UserFilter is the admin user list query.
type UserFilter struct {
	Role, Status, Keyword string
	SiteID                int64
	TenantID              int64  // 0 = every tenant
	OrderBy, OrderDir     string // whitelisted by the caller
	Limit, Offset         int
}

// ListUsers returns a page of users and the total.
func (d *DB) ListUsers(ctx context.Context, f UserFilter) ([]models.User, int, error) {
	var users []models.User
	q := d.NewSelect().Model(&users)
	if f.Role != "" {
		q = q.Where("role = ?", f.Role)
	}
	if f.Status != "" {
		q = q.Where("status = ?", f.Status)
	}
	if f.Keyword != "" {
		q = q.WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where("name "+d.LikeOp()+" ? ESCAPE '\\'", Like(f.Keyword)).
				WhereOr("email "+d.LikeOp()+" ? ESCAPE '\\'", Like(f.Keyword))
		})
	}
	if f.SiteID > 0 {
		q = q.Where("id IN (SELECT user_id FROM user_sites WHERE site_id = ?)", f.SiteID)
	}
	if f.TenantID > 0 {
		q = q.Where("tenant_id = ?", f.TenantID)
	}
	q = q.OrderExpr("? "+f.OrderDir+", id "+f.OrderDir, bun.Ident(f.OrderBy)).Limit(int64(f.Limit)).Offset(int64(f.Offset))
	n, err := q.ScanAndCount(ctx)
	return users, int(n), Classify(err)
}

// CreateUser inserts a user with its site assignment.
func (d *DB) CreateUser(ctx context.Context, u *models.User, siteIDs []int64) error {
	return d.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		return insertUser(ctx, tx, u, siteIDs)
	})
}

// insertUser inserts a user (email lowercased) with its site assignment in tx.
func insertUser(ctx context.Context, tx bun.Tx, u *models.User, siteIDs []int64) error {
	now := time.Now().UTC()
	u.Email = strings.ToLower(strings.TrimSpace(u.Email))
	u.CreatedAt, u.UpdatedAt = now, now
	if _, err := tx.NewInsert().Model(u).Exec(ctx); err != nil {
		return err
	}
	return setUserSites(ctx, tx, u.ID, siteIDs)
}

// UpdateUser writes the user's columns and, when siteIDs is non-nil, replaces
// its site assignment.
func (d *DB) UpdateUser(ctx context.Context, u *models.User, siteIDs *[]int64) error {
	u.UpdatedAt = time.Now().UTC()
	u.Email = strings.ToLower(strings.TrimSpace(u.Email))
	return d.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewUpdate().Model(u).WherePK().Exec(ctx); err != nil {
			return err
		}
		if siteIDs != nil {
			return setUserSites(ctx, tx, u.ID, *siteIDs)
		}
		return nil
	})
}

func setUserSites(ctx context.Context, tx bun.Tx, userID int64, siteIDs []int64) error {
	if _, err := tx.NewDelete().Model((*models.UserSite)(nil)).Where("user_id = ?", userID).Exec(ctx); err != nil {
		return err
	}
	seen := map[int64]bool{}
	rows := make([]models.UserSite, 0, len(siteIDs))
	for _, sid := range siteIDs {
		if !seen[sid] {
			seen[sid] = true
			rows = append(rows, models.UserSite{UserID: userID, SiteID: sid})
		}
	}
	if len(rows) == 0 {
		return nil
	}
	_, err := tx.NewInsert().Model(&rows).Exec(ctx)
	return err
}

// DeleteUser removes a user and its site assignment.
func (d *DB) DeleteUser(ctx context.Context, id int64) error {
	return d.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := deleteByID(ctx, tx, (*models.User)(nil), id); err != nil {
			return err
		}
		_, err := tx.NewDelete().Model((*models.UserSite)(nil)).Where("user_id = ?", id).Exec(ctx)
		return err
	})
}

// UserSiteIDs lists the sites assigned to a user.
func (d *DB) UserSiteIDs(ctx context.Context, userID int64) ([]int64, error) {
	var ids []int64
	err := d.NewSelect().Model((*models.UserSite)(nil)).Column("site_id").
		Where("user_id = ?", userID).Order("site_id").Scan(ctx, &ids)
	return ids, Classify(err)
}

// TenantSiteIDs returns the ids of a tenant's sites (a tenant admin's
// scope), those being deleted included.
func (d *DB) TenantSiteIDs(ctx context.Context, tenantID int64) ([]int64, error) {
	var ids []int64
	err := d.NewSelect().Model((*models.Site)(nil)).Column("id").Where("tenant_id = ?", tenantID).Order("id").Scan(ctx, &ids)
	return ids, Classify(err)
}

// UsersSiteIDs maps each user id to its assigned sites (one query for a page).
func (d *DB) UsersSiteIDs(ctx context.Context, userIDs []int64) (map[int64][]int64, error) {
	out := map[int64][]int64{}
	if len(userIDs) == 0 {
		return out, nil
	}
	var rows []models.UserSite
	err := d.NewSelect().Model(&rows).Where("user_id IN (?)", bun.List(userIDs)).Order("site_id").Scan(ctx)
	for _, r := range rows {
		out[r.UserID] = append(out[r.UserID], r.SiteID)
	}
	return out, Classify(err)
}

// RecordLogin stores the login time and IP and, for a pending (invited) user,
// activates it.
func (d *DB) RecordLogin(ctx context.Context, u *models.User, ip string) error {
	now := time.Now().UTC()
	u.LastLoginAt, u.LastLoginIP = &now, ip
	if u.Status == models.UserPending {
		u.Status = models.UserActive
	}
	_, err := d.NewUpdate().Model(u).Column("last_login_at", "last_login_ip", "status").WherePK().Exec(ctx)
	return Classify(err)
}

// ExistingSiteIDs reports which of ids name existing sites.
func (d *DB) ExistingSiteIDs(ctx context.Context, ids []int64) (map[int64]bool, error) {
	var found []int64
	err := d.NewSelect().Model((*models.Site)(nil)).Column("id").Where("id IN (?)", bun.List(ids)).Scan(ctx, &found)
	out := make(map[int64]bool, len(found))
	for _, id := range found {
		out[id] = true
	}
	return out, Classify(err)
}
