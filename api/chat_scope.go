package api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/models"
)

// Which sites a chat turn searches. With filter.site_id the turn is that
// site's (hard isolation). Without it, the reference's widget on a page of no
// site (it sends no filter, or only filter.tenant_id) gets a search over the
// tenant's sites, as the reference searches with no site filter: every
// active site of the tenant the caller can read (public, or unlocked by a
// valid X-Site-Access-Token), at most maxChatSites of them, each retrieval
// still scoped to one site and every source naming its site_id. The turn's
// session has no site (site_id null).
//
// The tenant is filter.tenant_id; else the X-Tenant-Slug header (the
// reference's tenant dependency); else the default tenant (the reference's
// CE uses tenant 1 when a request names none). A tenant that does not exist
// is 404 "Tenant not found".

// TenantSlugHeader names the tenant of a client request that names no site.
const TenantSlugHeader = "X-Tenant-Slug"

// maxChatSites bounds the sites one siteless turn searches (the most
// recently created first): each is one retrieval per search call.
const maxChatSites = 20

// chatScope is the site a turn belongs to and, for a siteless turn, the
// sites it searches: site is then a stand-in with the tenant and ID 0 (no
// site, no pipeline trace).
func (s *Server) chatScope(c *fiber.Ctx, f *ChatFilter) (*models.Site, []int64, error) {
	if f != nil && f.SiteID != nil && *f.SiteID != 0 {
		site, err := s.clientSite(c, *f.SiteID)
		if err != nil {
			return nil, nil, err
		}
		if f.TenantID != nil && *f.TenantID != 0 && *f.TenantID != site.TenantID {
			return nil, nil, NotFound("site") // filter.tenant_id is a second check, as the reference's client means it
		}
		return site, nil, nil
	}
	ctx := c.UserContext()
	var tenant *models.Tenant
	var err error
	switch slug := strings.TrimSpace(c.Get(TenantSlugHeader)); {
	case f != nil && f.TenantID != nil && *f.TenantID != 0:
		tenant, err = s.d.DB.GetTenant(ctx, *f.TenantID)
	case slug != "":
		tenant, err = s.d.DB.TenantBySlug(ctx, slug)
	default:
		tenant, err = s.d.DB.TenantBySlug(ctx, db.DefaultTenantSlug)
	}
	if errors.Is(err, db.ErrNotFound) {
		return nil, nil, Errf(http.StatusNotFound, "Tenant not found")
	}
	if err != nil {
		return nil, nil, err
	}
	sites, _, err := s.d.DB.ListSites(ctx, db.SiteFilter{Status: models.SiteActive, TenantID: tenant.ID, Limit: 10 * maxChatSites})
	if err != nil {
		return nil, nil, err
	}
	var ids []int64
	for i := range sites {
		if len(ids) < maxChatSites && s.requireSiteAccess(c, &sites[i]) == nil {
			ids = append(ids, sites[i].ID)
		}
	}
	if len(ids) == 0 {
		return nil, nil, NotFound("site: the tenant has no site this chat can search (filter.site_id names one)")
	}
	return &models.Site{TenantID: tenant.ID}, ids, nil
}
