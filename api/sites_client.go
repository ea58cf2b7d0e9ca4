package api

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/models"
)

func (s *Server) clientListSites(c *fiber.Ctx) error {
	var q ClientSiteListQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	if err := q.Defaults(10, 1000); err != nil {
		return err
	}
	tenant, err := s.clientTenant(c.UserContext(), q.ClientTenantQuery)
	if err != nil {
		return err
	}
	if tenant.none {
		return paged[ClientSite](c, nil, 0, q.PageQuery)
	}
	sites, total, err := s.d.DB.ListSites(c.UserContext(), db.SiteFilter{Status: models.SiteActive,
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
// per envelope language and sent as is on a hit: no query, no encoding.
//
// Keys are "site|<kind>|<value>|<msg>", kind being id, slug or domain and msg
// the envelope's success message (the body differs by Accept-Language);
// requests whose message is not in siteCacheMsgs bypass the cache so that
// invalidation always knows every key of a site.
var siteCacheMsgs = []string{"Success", "成功"}

// siteWriteEpoch is bumped after every committed site write. A reader that
// loaded the site before a concurrent write finished sees the epoch move and
// does not store its (possibly stale) body.
var siteWriteEpoch atomic.Int64

func siteCacheKey(kind, value, msg string) string {
	return "site|" + kind + "|" + value + "|" + msg
}

func cacheableMsg(msg string) bool {
	for _, m := range siteCacheMsgs {
		if m == msg {
			return true
		}
	}
	return false
}

// siteCacheKeys lists every client cache key that may hold a site.
func siteCacheKeys(sites ...*models.Site) []string {
	var keys []string
	for _, st := range sites {
		if st == nil {
			continue
		}
		for _, m := range siteCacheMsgs {
			keys = append(keys, siteCacheKey("id", strconv.FormatInt(st.ID, 10), m), siteCacheKey("slug", st.Slug, m))
			if st.Domain != nil {
				keys = append(keys, siteCacheKey("domain", *st.Domain, m))
			}
		}
	}
	return keys
}

// invalidateSiteCache drops the cached client details of the given site
// versions (pass the old and the new version after an update, so the old slug
// and domain are dropped too). Any handler that changes what the client
// detail shows (site fields, the access password) must call it after its
// write commits. The keys are deleted again a little later to catch a reader
// of another instance that loaded the old row just before the commit.
func (s *Server) invalidateSiteCache(ctx context.Context, sites ...*models.Site) {
	siteWriteEpoch.Add(1)
	s.siteRows.Clear()
	s.docs.lists.clear() // lists embed site names and hide inactive sites
	keys := siteCacheKeys(sites...)
	if err := s.d.Cache.Delete(ctx, keys...); err != nil {
		s.log.Warn("site cache invalidation failed", "err", err, "keys", keys)
	}
	time.AfterFunc(2*time.Second, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.d.Cache.Delete(ctx, keys...)
	})
}

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
	useCache := cacheableMsg(msg)
	key := siteCacheKey(kind, value, msg)
	if useCache {
		b, hit, err := s.d.Cache.Get(ctx, key)
		if err != nil {
			s.log.Warn("site cache read failed", "err", err, "key", key)
		}
		if hit {
			// Only a tenant filter needs the body's tenant (parsing it is
			// most of what a hit would cost).
			if tenant.id != 0 && envelopedTenant(b) != tenant.id {
				return NotFound("site")
			}
			c.Type("json")
			return c.Send(b)
		}
	}
	epoch := siteWriteEpoch.Load()
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
	if useCache && siteWriteEpoch.Load() == epoch {
		if err := s.d.Cache.Set(ctx, key, b, s.d.Cfg.ClientSiteCacheTTL); err != nil {
			s.log.Warn("site cache write failed", "err", err, "key", key)
		}
	}
	if !tenant.admits(st.TenantID) {
		return NotFound("site")
	}
	c.Type("json")
	return c.Send(b)
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
