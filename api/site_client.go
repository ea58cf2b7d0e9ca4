package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/readcache"
	"github.com/lorekb/lore/models"
)

func (s *Server) clientListSites(c *fiber.Ctx) error {
	var q ClientSiteListQuery
	tenant, listed, err := clientPage[ClientSite](s, c, &q, &q.ClientTenantQuery)
	if !listed {
		return err
	}
	// Private sites and sites behind a password are not listed: their
	// readers get their address from the site's staff.
	sites, total, err := s.d.DB.ListSites(c.UserContext(), db.SiteFilter{Status: models.SiteActive, PublicOnly: true,
		TenantID: tenant.id, Keyword: strings.TrimSpace(q.Keyword), Limit: q.Limit(), Offset: q.Offset()})
	if err != nil {
		return err
	}
	x, err := s.loadSiteExtras(c.UserContext(), sites, true)
	if err != nil {
		return err
	}
	out := make([]ClientSite, len(sites))
	for i := range sites {
		out[i] = clientSiteResponse(&sites[i], x)
	}
	return paged(c, out, total, q.PageQuery)
}

// Client site detail cache. A detail read is the landing request of every
// site page, so the whole encoded response body is cached per lookup key and
// per envelope language (readcache.SiteKey) and sent as is on a hit: no
// query, no encoding. Requests whose message is not cached
// (readcache.CacheableMsg) bypass the cache, so that invalidation, which the
// database's site writes trigger (readcache.Cache.Changed), knows every key
// of a site.

// clientSiteDetail serves one cached client lookup: kind and value name the
// cache key, load reads the site on a miss. The tenant filter of the query
// (tenant_id, tenant_slug) is checked on hits and misses alike; the cached
// body is the site's, whatever the filter.
func (s *Server) clientSiteDetail(c *fiber.Ctx, kind, value string, load func(ctx context.Context) (*models.Site, error)) error {
	ctx := c.UserContext()
	var q ClientTenantQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	tenant, err := s.clientTenant(ctx, q)
	if err != nil {
		return err
	}
	if tenant.none {
		return NotFound("site")
	}
	msg := msgSuccess(c)
	useCache := readcache.CacheableMsg(msg)
	key := readcache.SiteKey(kind, value, msg)
	if useCache {
		if b, hit := s.cache.SiteBody(ctx, key); hit {
			// Only a tenant filter needs the body's tenant (parsing it is
			// most of what a hit would cost).
			if tenant.id != 0 && envelopedTenant(b) != tenant.id {
				return NotFound("site")
			}
			if err := s.privateDetail(c, b); err != nil {
				return err
			}
			c.Type("json")
			return c.Send(b)
		}
	}
	epoch := s.cache.SiteEpoch()
	st, err := load(ctx)
	if errors.Is(err, db.ErrNotFound) || (err == nil && (st.Deleting || st.Status != models.SiteActive)) {
		return NotFound("site")
	}
	if err != nil {
		return err
	}
	x, err := s.loadSiteExtras(ctx, []models.Site{*st}, true)
	if err != nil {
		return err
	}
	b, err := json.Marshal(Envelope{Code: 0, Msg: msg, Data: clientSiteResponse(st, x)})
	if err != nil {
		return err
	}
	if useCache {
		s.cache.PutSiteBody(ctx, key, b, s.d.Cfg.ClientSiteCacheTTL, epoch)
	}
	if !tenant.admits(st.TenantID) {
		return NotFound("site")
	}
	if err := s.privateDetail(c, b); err != nil {
		return err
	}
	c.Type("json")
	return c.Send(b)
}

// privateDetail guards the client detail (an encoded envelope) of a private
// site without a password: only its staff may read it (requireSiteAccess).
// A site behind a password keeps a public detail, which its sign-in page
// shows; public sites cost one byte search.
func (s *Server) privateDetail(c *fiber.Ctx, body []byte) error {
	if !bytes.Contains(body, []byte(`"is_public":false`)) {
		return nil
	}
	var env struct {
		Data struct {
			ID               int64 `json:"id"`
			IsPublic         bool  `json:"is_public"`
			RequiresPassword bool  `json:"requires_password"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil || env.Data.IsPublic || env.Data.RequiresPassword {
		return nil
	}
	return s.requireSiteAccess(c, &models.Site{ID: env.Data.ID})
}

func (s *Server) clientSiteByID(c *fiber.Ctx) error {
	id, err := pathInt(c, "id")
	if err != nil {
		return err
	}
	return s.clientSiteDetail(c, "id", strconv.FormatInt(id, 10), func(ctx context.Context) (*models.Site, error) {
		return s.d.DB.GetSite(ctx, id)
	})
}

func (s *Server) clientSiteBySlug(c *fiber.Ctx) error {
	// Fiber's parameters point into the request buffer; the key outlives it.
	slug := strings.Clone(param(c, "slug"))
	return s.clientSiteDetail(c, "slug", slug, func(ctx context.Context) (*models.Site, error) {
		return s.d.DB.SiteBySlug(ctx, slug)
	})
}

func (s *Server) clientSiteByDomain(c *fiber.Ctx) error {
	domain := strings.Clone(strings.ToLower(strings.TrimSpace(param(c, "domain"))))
	return s.clientSiteDetail(c, "domain", domain, func(ctx context.Context) (*models.Site, error) {
		return s.d.DB.SiteByDomain(ctx, domain)
	})
}
