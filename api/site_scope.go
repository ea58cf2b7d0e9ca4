package api

import (
	"context"
	"errors"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/readcache"
	"github.com/lorekb/lore/models"
)

// The site-scope checks every handler goes through: whether the caller sees
// a site and may act on it, and how a site it may not see is answered (as
// missing: 404 for a path, 400 for a body).

// requireSite refuses a site outside the principal's scope as missing
// (errHidden, 404) and a site it sees but may not act on at level need (its
// role is too low) with 403.
func requireSite(c *fiber.Ctx, siteID int64, need Perm) error {
	p := principal(c)
	if !p.SeesSite(siteID) {
		return errHidden
	}
	if !p.CanSite(siteID, need) {
		return ErrForbidden
	}
	return nil
}

// clientSite loads a site for a Client API read of its content: it must exist,
// be active and not being deleted (404 otherwise), and when it requires an
// access password the request must carry a valid X-Site-Access-Token.
func (s *Server) clientSite(c *fiber.Ctx, siteID int64) (*models.Site, error) {
	site, err := s.siteRow(c.UserContext(), siteID)
	if errors.Is(err, db.ErrNotFound) || (err == nil && (site.Status != models.SiteActive || site.Deleting)) {
		return nil, NotFound("site")
	}
	if err != nil {
		return nil, err
	}
	if err := s.requireSiteAccess(c, site); err != nil {
		return nil, err
	}
	return site, nil
}

// bodySite loads the site a request body names (400 when it does not exist,
// is being deleted or is outside the caller's scope) and checks the caller
// may act on it at level need (403).
func (s *Server) bodySite(c *fiber.Ctx, siteID int64, need Perm) (*models.Site, error) {
	site, err := s.d.DB.GetSite(c.UserContext(), siteID)
	if errors.Is(err, db.ErrNotFound) || err == nil && site.Deleting {
		return nil, BadRequest("site_id: site %d does not exist", siteID)
	}
	if err != nil {
		return nil, err
	}
	if err := requireSite(c, site.ID, need); err != nil {
		return nil, hiddenAs(err, BadRequest("site_id: site %d does not exist", siteID))
	}
	return site, nil
}

// NewItem is what the create bodies of collections and documents share:
// the new item's title and the site it goes in.
type NewItem struct {
	Title    string `json:"title" validate:"required,max=200"`
	SiteID   int64  `json:"site_id" validate:"required,min=1"`
	TenantID int64  `json:"tenant_id" doc:"optional; must be the site's tenant (400 otherwise)" validate:"min=0"`
}

func (n *NewItem) newItem() NewItem { return *n }

// bindNewItem binds a create body that embeds NewItem (in, a pointer to it)
// and checks its title and site with newItemSite.
func (s *Server) bindNewItem(c *fiber.Ctx, in interface{ newItem() NewItem }) (string, *models.Site, error) {
	if err := bindJSON(c, in); err != nil {
		return "", nil, err
	}
	return s.newItemSite(c, in.newItem())
}

// newItemSite checks the title of a new collection or document and loads the
// site its body names (bodySite, at editor level), which must be in the
// body's optional tenant_id: absent (0) or the site's tenant is accepted,
// any other tenant is 400.
func (s *Server) newItemSite(c *fiber.Ctx, in NewItem) (string, *models.Site, error) {
	title, err := requiredTitle(in.Title)
	if err != nil {
		return "", nil, err
	}
	site, err := s.bodySite(c, in.SiteID, EditorUp)
	if err != nil {
		return "", nil, err
	}
	if in.TenantID != 0 && in.TenantID != site.TenantID {
		return "", nil, BadRequest("tenant_id: site %d belongs to tenant %d, not %d", site.ID, site.TenantID, in.TenantID)
	}
	return title, site, nil
}

// loadScoped reads the {id} resource with get (404 naming what when it does
// not exist or its site is outside the caller's scope) and checks the caller
// may act on its site at level need (403).
func loadScoped[T any](c *fiber.Ctx, need Perm, what string, get func(context.Context, int64) (*T, error), siteOf func(*T) int64) (*T, error) {
	id, err := pathInt(c, "id")
	if err != nil {
		return nil, err
	}
	v, err := get(c.UserContext(), id)
	if errors.Is(err, db.ErrNotFound) {
		return nil, NotFound(what)
	}
	if err != nil {
		return nil, err
	}
	if err := requireSite(c, siteOf(v), need); err != nil {
		return nil, hiddenAs(err, NotFound(what))
	}
	return v, nil
}

// siteRowTTL bounds how old a site row the client visibility and access
// check may use (readcache.SiteRowTTL): a change made through another API
// process shows within this long.
const siteRowTTL = readcache.SiteRowTTL

// siteRow reads a site for the client check through s.cache.SiteRows (a missing
// site is kept as nil) and returns a copy the caller may change.
func (s *Server) siteRow(ctx context.Context, id int64) (*models.Site, error) {
	site, err := s.cache.SiteRows.Get(id, func() (*models.Site, error) {
		site, err := s.d.DB.GetSite(ctx, id)
		if errors.Is(err, db.ErrNotFound) {
			return nil, nil
		}
		return site, err
	})
	if err != nil {
		return nil, err
	}
	if site == nil {
		return nil, db.ErrNotFound
	}
	cp := *site
	return &cp, nil
}

// visibleSite maps a site lookup to 404 when the site is missing or being
// deleted: such sites do not exist for the API.
func visibleSite(st *models.Site, err error) (*models.Site, error) {
	if errors.Is(err, db.ErrNotFound) || (err == nil && st.Deleting) {
		return nil, NotFound("site")
	}
	return st, err
}

// checkSites checks the managed_site_ids of a user body: every site must
// exist and be in the caller's scope (a tenant admin's tenant); a site
// outside it is answered as missing.
func (s *Server) checkSites(c *fiber.Ctx, ids []int64) error {
	if len(ids) == 0 {
		return nil
	}
	found, err := s.d.DB.ExistingSiteIDs(c.UserContext(), ids)
	if err != nil {
		return err
	}
	p := principal(c)
	for _, id := range ids {
		if !found[id] || !p.SeesSite(id) {
			return BadRequest("managed_site_ids: site %d does not exist", id)
		}
	}
	return nil
}
