package api

import (
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/internal/cache"
	"github.com/lorekb/lore/internal/db"
)

// SiteStatsQuery is the query of GET /stats:siteStats.
type SiteStatsQuery struct {
	SiteID int64 `query:"site_id" doc:"site to report on" validate:"required,min=1"`
}

func (s *Server) statsRoutes() []Route {
	return []Route{
		{Surface: Admin, Method: http.MethodGet, Path: "/stats:siteStats", Tag: "stats", Perm: SiteAdminUp,
			Summary: "Statistics of one site: documents, views, chats, 7-day trend (UTC days)",
			Query:   SiteStatsQuery{}, Response: db.SiteStats{}, Handler: s.siteStats},
		{Surface: Admin, Method: http.MethodGet, Path: "/cache:stats", Tag: "cache", Perm: PlatformOnly,
			Summary: "Cache backend, size and hit rate", Response: cache.Stats{}, Handler: s.cacheStats},
		{Surface: Admin, Method: http.MethodPost, Path: "/cache:clear", Tag: "cache", Perm: PlatformOnly,
			Summary: "Clear the whole cache and its counters", Response: Message{}, Handler: s.cacheClear},
	}
}

func (s *Server) siteStats(c *fiber.Ctx) error {
	var q SiteStatsQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	if err := requireSite(c, q.SiteID, SiteAdminUp); err != nil {
		return err
	}
	if _, err := visibleSite(s.d.DB.GetSite(c.UserContext(), q.SiteID)); err != nil {
		return err
	}
	st, err := s.d.DB.GetSiteStats(c.UserContext(), q.SiteID, time.Now())
	if err != nil {
		return err
	}
	return ok(c, st)
}

func (s *Server) cacheStats(c *fiber.Ctx) error {
	st, err := s.d.Cache.Stats(c.UserContext())
	if err != nil {
		return Unavailable("cache unavailable: %v", err)
	}
	return ok(c, st)
}

func (s *Server) cacheClear(c *fiber.Ctx) error {
	s.tenantSlugs.Clear()
	if err := s.cache.Clear(c.UserContext()); err != nil {
		return Unavailable("cache unavailable: %v", err)
	}
	return ok(c, Message{Message: "Cache cleared"})
}
