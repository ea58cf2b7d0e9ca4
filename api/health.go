package api

import (
	"context"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"
)

// Health is the data of GET /health.
type Health struct {
	Status      string            `json:"status"`
	Version     string            `json:"version"`
	Environment string            `json:"environment"`
	Edition     string            `json:"edition" doc:"community: the reference's open-source admin then shows only panels Lore serves"`
	IsLicensed  bool              `json:"is_licensed"`
	Timestamp   string            `json:"timestamp"`
	Checks      map[string]string `json:"checks"`
}

func (s *Server) healthRoutes() []Route {
	var rs []Route
	for _, sf := range []Surface{Client, Admin, Root} {
		rs = append(rs, Route{Surface: sf, Method: http.MethodGet, Path: "/health", Tag: "health",
			Summary: "Health check including database (and Temporal when configured) status",
			Perm:    Public, Response: Health{}, Handler: s.health})
	}
	return append(rs, s.systemInfoRoute())
}

func (s *Server) health(c *fiber.Ctx) error {
	ctx, cancel := context.WithTimeout(c.UserContext(), 3*time.Second)
	defer cancel()
	h := Health{Status: "healthy", Version: BuildVersion(), Environment: s.d.Cfg.Environment,
		Edition: edition, IsLicensed: isLicensed, Timestamp: time.Now().UTC().Format(time.RFC3339),
		Checks: map[string]string{}}
	if err := s.d.DB.Health(ctx); err != nil {
		h.Status = "unhealthy"
		h.Checks["database"] = "error: " + err.Error()
	} else {
		h.Checks["database"] = "ok"
	}
	if st, err := s.d.Cache.Stats(ctx); err != nil {
		h.Checks["cache"] = "error: " + err.Error()
	} else {
		h.Checks["cache"] = st.Backend
	}
	if s.d.Temporal != nil {
		if _, err := s.d.Temporal.CheckHealth(ctx, nil); err != nil {
			h.Status = "degraded"
			h.Checks["temporal"] = "error: " + err.Error()
		} else {
			h.Checks["temporal"] = "ok"
		}
	}
	if h.Status == "unhealthy" {
		return &Error{Status: http.StatusServiceUnavailable, Msg: "database unavailable", Data: h}
	}
	return ok(c, h)
}
