package db

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lorekb/lore/models"
	"github.com/uptrace/bun"
)

// GetSite returns a site by id, including one being deleted.
func (d *DB) GetSite(ctx context.Context, id int64) (*models.Site, error) {
	return d.siteWhere(ctx, "id = ?", id)
}

// siteWhere reads the site the condition selects, its secrets opened.
func (d *DB) siteWhere(ctx context.Context, where string, args ...any) (*models.Site, error) {
	s, err := selectOne[models.Site](ctx, d, where, args...)
	if err == nil {
		err = d.openSite(s)
	}
	return s, Classify(err)
}

// SiteBySlug returns a site by slug, including one being deleted (callers
// decide visibility).
func (d *DB) SiteBySlug(ctx context.Context, slug string) (*models.Site, error) {
	return d.siteWhere(ctx, "slug = ?", slug)
}

// SiteByDomain returns a site by domain. Domains are stored lowercased, so the
// lookup lowercases too.
func (d *DB) SiteByDomain(ctx context.Context, domain string) (*models.Site, error) {
	return d.siteWhere(ctx, "domain = ?", strings.ToLower(strings.TrimSpace(domain)))
}

// SiteFilter is the query of the admin and client site lists. Sites being
// deleted are never listed.
type SiteFilter struct {
	Status   string  // "" = any
	TenantID int64   // 0 = any
	Keyword  string  // matches name, slug, description (and domain)
	SiteIDs  []int64 // nil = every site; non-nil restricts (non-admin users)
	// PublicOnly keeps the sites anyone may read: is_public and no access
	// password (the Client API's list).
	PublicOnly bool
	Limit      int
	Offset     int
}

// ListSites returns a page of sites, newest (highest id) first, and the total.
func (d *DB) ListSites(ctx context.Context, f SiteFilter) ([]models.Site, int, error) {
	var sites []models.Site
	q := d.NewSelect().Model(&sites).Where("deleting = ?", false)
	if f.Status != "" {
		q = q.Where("status = ?", f.Status)
	}
	if f.TenantID > 0 {
		q = q.Where("tenant_id = ?", f.TenantID)
	}
	if f.SiteIDs != nil {
		q = q.Where("id IN (?)", bun.List(f.SiteIDs))
	}
	if f.PublicOnly {
		q = q.Where("is_public = ?", true).Where("requires_password = ?", false)
	}
	if f.Keyword != "" {
		like, op := Like(f.Keyword), d.LikeOp()
		q = q.WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			return q.Where("name "+op+" ? ESCAPE '\\'", like).
				WhereOr("slug "+op+" ? ESCAPE '\\'", like).
				WhereOr("description "+op+" ? ESCAPE '\\'", like).
				WhereOr("domain "+op+" ? ESCAPE '\\'", like)
		})
	}
	n, err := q.OrderExpr("id DESC").Limit(int64(f.Limit)).Offset(int64(f.Offset)).ScanAndCount(ctx)
	if err == nil {
		err = d.openSites(sites)
	}
	return sites, int(n), Classify(err)
}

type siteCount struct {
	SiteID int64 `bun:"site_id"`
	N      int64 `bun:"n"`
}

func countsBySite(rows []siteCount) map[int64]int64 {
	out := make(map[int64]int64, len(rows))
	for _, r := range rows {
		out[r.SiteID] = r.N
	}
	return out
}

// SiteDocumentCounts maps site ids to their number of documents; a non-empty
// status counts only documents of that status (the Client API counts
// published ones). One grouped query for a whole page of sites.
func (d *DB) SiteDocumentCounts(ctx context.Context, siteIDs []int64, status string) (map[int64]int64, error) {
	if len(siteIDs) == 0 {
		return map[int64]int64{}, nil
	}
	var rows []siteCount
	q := d.NewSelect().Model((*models.Document)(nil)).ColumnExpr("site_id, COUNT(*) AS n").
		Where("site_id IN (?)", bun.List(siteIDs)).Group("site_id")
	if status != "" {
		q = q.Where("status = ?", status)
	}
	err := q.Scan(ctx, &rows)
	return countsBySite(rows), Classify(err)
}

// SiteViewCounts maps site ids to their number of document view events:
// the sum of their documents' view counters, which the view flush raises in
// the transaction that records the events (and which leave with their
// documents, as the events do). Summing a site's documents, not counting
// its events, keeps the cost of a site list from growing with every view.
func (d *DB) SiteViewCounts(ctx context.Context, siteIDs []int64) (map[int64]int64, error) {
	if len(siteIDs) == 0 {
		return map[int64]int64{}, nil
	}
	var rows []siteCount
	err := d.NewSelect().Model((*models.Document)(nil)).ColumnExpr("site_id, COALESCE(SUM(views), 0) AS n").
		Where("site_id IN (?)", bun.List(siteIDs)).Group("site_id").Scan(ctx, &rows)
	return countsBySite(rows), Classify(err)
}

// TenantSlugs maps tenant ids to their slugs (sites show tenant_slug).
func (d *DB) TenantSlugs(ctx context.Context, tenantIDs []int64) (map[int64]string, error) {
	return valuesByID(ctx, d, tenantIDs, "slug", func(t *models.Tenant) (int64, string) { return t.ID, t.Slug })
}

// SiteConflict reports which unique field of s ("name", "slug" or "domain")
// another site already uses, or "" when none does. Sites being deleted count:
// their row still holds the value until the delete finishes. The unique
// indexes remain the backstop against concurrent writers.
func (d *DB) SiteConflict(ctx context.Context, s *models.Site) (string, error) {
	var others []models.Site
	q := d.NewSelect().Model(&others).Column("name", "slug", "domain").Where("id <> ?", s.ID).
		WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			q = q.Where("name = ?", s.Name).WhereOr("slug = ?", s.Slug)
			if s.Domain != nil {
				q = q.WhereOr("domain = ?", *s.Domain)
			}
			return q
		}).Limit(3)
	if err := q.Scan(ctx); err != nil {
		return "", Classify(err)
	}
	for _, field := range []string{"name", "slug", "domain"} {
		for _, o := range others {
			switch {
			case field == "name" && o.Name == s.Name,
				field == "slug" && o.Slug == s.Slug,
				field == "domain" && s.Domain != nil && o.Domain != nil && *o.Domain == *s.Domain:
				return field, nil
			}
		}
	}
	return "", nil
}

// UniqueSiteSlug returns base, or base with a numeric suffix, such that no
// site uses it yet. An empty base becomes "site-<n>" with n one past the
// highest site id. Used when a site is created without a slug.
func (d *DB) UniqueSiteSlug(ctx context.Context, base string) (string, error) {
	if base == "" {
		var maxID int64
		err := d.NewSelect().Model((*models.Site)(nil)).ColumnExpr("COALESCE(MAX(id), 0)").Scan(ctx, &maxID)
		if err != nil {
			return "", Classify(err)
		}
		base = "site-" + strconv.FormatInt(maxID+1, 10)
	}
	for i := 1; i <= 50; i++ {
		cand := base
		if i > 1 {
			suffix := "-" + strconv.Itoa(i)
			cand = truncateSlug(base, 200-len(suffix)) + suffix
		}
		n, err := d.NewSelect().Model((*models.Site)(nil)).Where("slug = ?", cand).Count(ctx)
		if err != nil {
			return "", Classify(err)
		}
		if n == 0 {
			return cand, nil
		}
	}
	return fmt.Sprintf("%s-%d", truncateSlug(base, 180), time.Now().UnixNano()), nil
}

func truncateSlug(s string, n int) string {
	if len(s) > n {
		s = strings.TrimRight(s[:n], "-")
	}
	return s
}

// CreateSite inserts a site; a unique violation is ErrConflict.
func (d *DB) CreateSite(ctx context.Context, s *models.Site) error {
	if err := d.insertSite(ctx, d.DB, s); err != nil {
		return Classify(err)
	}
	d.sitesChanged(ctx, s) // the site lists show it
	return nil
}

// CreateSiteWithAdmin inserts a site and gives it its administrator in the
// same transaction, so that a failure leaves neither: newUser, when not nil,
// is inserted (as CreateUser does) with the site assigned; otherwise the
// existing user assignTo, when not 0, is assigned the site. A unique
// violation (site name, slug or domain, or the new user's email) is
// ErrConflict.
func (d *DB) CreateSiteWithAdmin(ctx context.Context, s *models.Site, newUser *models.User, assignTo int64) error {
	err := d.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := d.insertSite(ctx, tx, s); err != nil {
			return err
		}
		switch {
		case newUser != nil:
			return insertUser(ctx, tx, newUser, []int64{s.ID})
		case assignTo != 0:
			_, err := tx.NewInsert().Model(&models.UserSite{UserID: assignTo, SiteID: s.ID}).Exec(ctx)
			return err
		}
		return nil
	})
	if err == nil {
		d.sitesChanged(ctx, s) // the site lists show it
	}
	return err
}

func (d *DB) insertSite(ctx context.Context, db bun.IDB, s *models.Site) error {
	now := time.Now().UTC()
	s.CreatedAt, s.UpdatedAt = now, now
	if s.QuickQuestions == "" {
		s.QuickQuestions = "[]"
	}
	if s.BotConfig == "" {
		s.BotConfig = "{}"
	}
	// bun writes DEFAULT for zero values of columns with a default (or omits
	// them), which would turn is_public=false into true: list the columns and
	// force the value, then read the row back.
	return d.withSealed(&s.BotConfig, func() error {
		_, err := db.NewInsert().Model(s).ExcludeColumn("id").Value("is_public", "?", s.IsPublic).
			Returning("*").Exec(ctx)
		return err
	})
}

// siteEditable are the columns a site update writes. The access password and
// the deleting flag are owned by their own operations and never overwritten
// from a stale copy.
var siteEditable = []string{"tenant_id", "name", "slug", "domain", "description", "icon", "status",
	"theme_color", "layout_mode", "quick_questions", "show_pipeline_trace", "is_public", "bot_config", "updated_at"}

// UpdateSite writes the editable columns of s. A site that is gone or being
// deleted is ErrNotFound; a unique violation is ErrConflict.
func (d *DB) UpdateSite(ctx context.Context, s *models.Site) error {
	before := d.siteKeys(ctx, s.ID) // its old slug and domain leave the caches too
	s.UpdatedAt = time.Now().UTC()
	var res sql.Result
	err := d.withSealed(&s.BotConfig, func() (err error) {
		res, err = d.NewUpdate().Model(s).Column(siteEditable...).WherePK().Where("deleting = ?", false).Exec(ctx)
		return err
	})
	if err := oneRow(res, err); err != nil {
		return err
	}
	d.sitesChanged(ctx, before, s)
	return nil
}

// MarkSiteDeleting hides a site everywhere (admin and client reads treat it
// as absent) while its contents are removed. It is idempotent; a missing site
// is ErrNotFound.
func (d *DB) MarkSiteDeleting(ctx context.Context, siteID int64) error {
	keys := d.siteKeys(ctx, siteID)
	res, err := d.NewUpdate().Model((*models.Site)(nil)).Set("deleting = ?", true).
		Set("updated_at = ?", time.Now().UTC()).Where("id = ?", siteID).Exec(ctx)
	if err := oneRow(res, err); err != nil {
		return err
	}
	d.sitesChanged(ctx, keys)
	return nil
}

// DeleteSiteDocuments deletes up to batch documents of the site together with
// their view events, chunk rows and revisions, in one transaction, and returns how many documents it
// deleted; 0 means none are left. batch <= 0 deletes all of them. Calling it
// again after a failure is safe, so a workflow can loop on it.
func (d *DB) DeleteSiteDocuments(ctx context.Context, siteID int64, batch int) (int, error) {
	var n int
	err := d.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var err error
		n, err = deleteSiteDocuments(ctx, tx, siteID, batch)
		return err
	})
	return n, err
}

func deleteSiteDocuments(ctx context.Context, db bun.IDB, siteID int64, batch int) (int, error) {
	if batch <= 0 {
		return deleteWithDependents(ctx, db, documentDependents, "site_id = ?", siteID, (*models.Document)(nil), "site_id = ?", siteID)
	}
	// Any batch of the site's documents will do: no ORDER BY, so the site's
	// index gives the first rows at once (ordering by id sorted every
	// remaining document of the site for each batch).
	var ids []int64
	err := db.NewSelect().Model((*models.Document)(nil)).Column("id").Where("site_id = ?", siteID).
		Limit(int64(batch)).Scan(ctx, &ids)
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	return deleteWithDependents(ctx, db, documentDependents, "document_id IN (?)", bun.List(ids), (*models.Document)(nil), "id IN (?)", bun.List(ids))
}

// documentDependents are the tables whose rows belong to a document.
var documentDependents = []any{(*models.ViewEvent)(nil), (*models.Chunk)(nil), (*models.DocumentRevision)(nil)}

// deleteWithDependents deletes the rows of each of deps that depWhere (with
// depArg) selects, then the rows of owner that ownerWhere selects, and
// answers how many of owner's it removed.
func deleteWithDependents(ctx context.Context, db bun.IDB, deps []any, depWhere string, depArg any, owner any, ownerWhere string, ownerArg any) (int, error) {
	for _, m := range deps {
		if _, err := db.NewDelete().Model(m).Where(depWhere, depArg).Exec(ctx); err != nil {
			return 0, err
		}
	}
	res, err := db.NewDelete().Model(owner).Where(ownerWhere, ownerArg).Exec(ctx)
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// DeleteSiteChats deletes the site's chat sessions with the messages, tool
// results and feedback of their threads, in one transaction. Idempotent.
// It returns how many chat sessions it removed.
func (d *DB) DeleteSiteChats(ctx context.Context, siteID int64) (int, error) {
	var n int
	err := d.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var err error
		n, err = deleteSiteChats(ctx, tx, siteID)
		return err
	})
	return n, err
}

func deleteSiteChats(ctx context.Context, db bun.IDB, siteID int64) (int, error) {
	threads := db.NewSelect().Model((*models.ChatSession)(nil)).Column("thread_id").Where("site_id = ?", siteID)
	return deleteWithDependents(ctx, db, []any{(*models.ChatMessage)(nil), (*models.ToolResult)(nil), (*models.Feedback)(nil)},
		"thread_id IN (?)", threads, (*models.ChatSession)(nil), "site_id = ?", siteID)
}

// DeleteSiteCollections deletes every collection of the site. Idempotent; run
// it after the documents are gone. It returns how many it removed.
func (d *DB) DeleteSiteCollections(ctx context.Context, siteID int64) (int, error) {
	res, err := d.NewDelete().Model((*models.Collection)(nil)).Where("site_id = ?", siteID).Exec(ctx)
	if err != nil {
		return 0, Classify(err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// DeleteSiteRow deletes the site row with what hangs directly off it (API
// keys, user assignments, leftover view events), in one transaction. It is
// the last step of a site delete and idempotent: a missing site is not an
// error.
func (d *DB) DeleteSiteRow(ctx context.Context, siteID int64) error {
	return d.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		_, err := deleteSiteRow(ctx, tx, siteID)
		return err
	})
}

func deleteSiteRow(ctx context.Context, db bun.IDB, siteID int64) (bool, error) {
	for _, m := range []any{(*models.ViewEvent)(nil), (*models.SiteAPIKey)(nil), (*models.UserSite)(nil)} {
		if _, err := db.NewDelete().Model(m).Where("site_id = ?", siteID).Exec(ctx); err != nil {
			return false, err
		}
	}
	res, err := db.NewDelete().Model((*models.Site)(nil)).Where("id = ?", siteID).Exec(ctx)
	if err != nil {
		return false, err
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// DeleteSiteCascade removes a site and everything under it in one
// transaction: documents and their view events and chunk rows, collections, chat sessions
// with their messages, tool results and feedback, API keys, user assignments
// and the site row. A missing site is ErrNotFound. Vectors of the documents
// live outside the database and are not touched here.
func (d *DB) DeleteSiteCascade(ctx context.Context, siteID int64) error {
	keys := d.siteKeys(ctx, siteID)
	err := d.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := deleteSiteDocuments(ctx, tx, siteID, 0); err != nil {
			return err
		}
		if _, err := deleteSiteChats(ctx, tx, siteID); err != nil {
			return err
		}
		if _, err := tx.NewDelete().Model((*models.Collection)(nil)).Where("site_id = ?", siteID).Exec(ctx); err != nil {
			return err
		}
		found, err := deleteSiteRow(ctx, tx, siteID)
		if err != nil {
			return err
		}
		if !found {
			return ErrNotFound
		}
		return nil
	})
	if err == nil {
		d.sitesChanged(ctx, keys)
		d.changed(ctx, Change{AllDocuments: true}) // its documents are gone
	}
	return err
}
