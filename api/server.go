// Package api is the HTTP layer (Fiber v2): routing, authentication, the
// response envelope and errors, SSE, OpenAPI and /docs. Handlers authorise,
// validate, write rows and start or signal workflows; they never do the work a
// workflow owns.
package api

import (
	"context"
	"embed"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/gofiber/fiber/v2/middleware/filesystem"
	"github.com/google/uuid"
	"github.com/lorekb/lore/internal/blob"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/internal/memo"
	"github.com/lorekb/lore/internal/readcache"
	"github.com/lorekb/lore/internal/streamhub"
	"github.com/lorekb/lore/internal/telemetry"
	"github.com/lorekb/lore/web"
	"github.com/lorekb/lore/workflows"
)

const requestIDKey = "request_id"

//go:embed docsui
var docsFS embed.FS

// Server is the HTTP server of both surfaces.
type Server struct {
	app    *fiber.App
	d      *deps.Deps
	log    *slog.Logger
	routes []Route
	docs   *docState // view recorder of the client document details
	// cache holds the read caches (document details and lists, site rows
	// and bodies); the database's writes invalidate them.
	cache *readcache.Cache[docEntry]
	hub   *streamhub.Hub // chat events from a worker in this process (nil: log only)
	// starter starts every workflow of this server with its metadata.
	starter *workflows.Starter
	// tenantSlugs maps the tenant_slug of client reads to tenant ids (0:
	// none), see tenantSlugTTL.
	tenantSlugs memo.TTL[string, int64]
	corsPolicy  *corsPolicy // nil: CORS off (LORE_CORS_ORIGINS empty)
	// platformID caches the platform tenant's id (see platformTenant).
	platformID atomic.Int64
	// proxies are LORE_TRUSTED_PROXIES, whose X-Forwarded-For clientIP reads.
	proxies []netip.Prefix

	specOnce sync.Once
	specs    map[Surface][]byte
	specErr  error

	// fallback holds what a server opens itself when its dependencies came
	// without it (deps built by hand in tools and tests; deps.Open sets
	// both).
	fallback struct {
		counterOnce sync.Once
		counter     limitStore // a process-local counter when the cache cannot count
		blobOnce    sync.Once
		blob        blob.Store // the store deps.OpenBlob picks for the configuration
		blobErr     error
	}
}

// New builds the server and mounts every route.
func New(d *deps.Deps) *Server {
	s := &Server{d: d, log: d.Log, starter: workflows.NewStarter(d.Log), docs: newDocState(), corsPolicy: newCORSPolicy(d.Cfg.CORSOrigins)}
	s.cache = readcache.New(d.DB, d.Cache, d.Log, docEntrySize)
	s.tenantSlugs = memo.TTL[string, int64]{Keep: tenantSlugTTL, Max: 10000}
	d.DB.OnChange(func(_ context.Context, c db.Change) {
		if c.Tenants {
			s.tenantSlugs.Clear()
		}
	})
	if d.Cfg.RunWorker {
		s.hub = d.Hub
	}
	cfg := fiber.Config{
		ErrorHandler: s.errorHandler,
		// Values from the request (method, path, params, headers) outlive the
		// handler in metrics labels, job ids and logs: never share buffers.
		Immutable: true,
		// Bodies are streamed and never pre-parsed: each route reads its own
		// through limitBody or multipartForm, up to its limit (bodylimit.go).
		// BodyLimit only decides how much fasthttp prefetches.
		BodyLimit:                    d.Cfg.BodyLimit,
		StreamRequestBody:            true,
		DisablePreParseMultipartForm: true,
		DisableStartupMessage:        true,
		ReadTimeout:                  60 * time.Second,
		IdleTimeout:                  120 * time.Second,
	}
	if len(d.Cfg.TrustedProxies) > 0 {
		// X-Forwarded-Proto and -Host are believed only from the configured
		// proxies. The client IP is clientIP's (no ProxyHeader: c.IP() is
		// the peer, Fiber's would be the raw header text).
		cfg.EnableTrustedProxyCheck = true
		cfg.TrustedProxies = d.Cfg.TrustedProxies
		s.proxies = trustedProxies(d.Cfg.TrustedProxies, d.Log)
	}
	s.app = fiber.New(cfg)
	// Fiber's handler of unreadable requests puts fasthttp's error, which
	// quotes the request's headers, in the answer.
	s.app.Server().ErrorHandler = malformedRequest
	s.app.Use(rejectAmbiguousLength, s.cors, s.requestID, s.observe, s.recoverPanic)
	s.mount()
	s.app.Use(func(c *fiber.Ctx) error { return ErrNotFound })
	return s
}

// App exposes the Fiber app (tests use App().Test).
func (s *Server) App() *fiber.App { return s.app }

// Listen serves until Shutdown.
func (s *Server) Listen(addr string) error { return s.app.Listen(addr) }

// Shutdown stops accepting connections, waits for in-flight requests and
// writes the buffered view counts.
func (s *Server) Shutdown() error {
	err := s.app.ShutdownWithTimeout(10 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if cerr := s.CloseViews(ctx); cerr != nil && err == nil {
		err = cerr
	}
	return err
}

// Routes returns the route table (used by the role-matrix and bad-input tests).
func (s *Server) Routes() []Route { return s.routes }

func (s *Server) mount() {
	s.register(s.healthRoutes())
	s.register(s.userRoutes())
	for _, group := range s.extraRoutes() {
		s.register(group)
	}
	if metricsOnAPI(s.d.Cfg) { // LORE_METRICS_PUBLIC, and no LORE_METRICS_ADDR
		s.app.Get("/metrics", adaptor.HTTPHandler(s.d.Metrics.Handler()))
	}
	s.app.Get("/openapi-client.json", s.serveSpec(Client))
	s.app.Get("/openapi-admin.json", s.serveSpec(Admin))
	sub, _ := fs.Sub(docsFS, "docsui")
	s.app.Get("/docs", func(c *fiber.Ctx) error {
		b, _ := fs.ReadFile(sub, "index.html")
		c.Type("html")
		return c.Send(b)
	})
	s.app.Use("/docs/assets", filesystem.New(filesystem.Config{Root: http.FS(sub), MaxAge: 3600}))
	web.Mount(s.app, s.log, s.d.DB) // the reader and chat pages (/, /s/..., /ui/assets), clients of the API above
}

func (s *Server) serveSpec(surface Surface) fiber.Handler {
	return func(c *fiber.Ctx) error {
		s.specOnce.Do(func() {
			s.specs = map[Surface][]byte{}
			for _, sf := range []Surface{Client, Admin} {
				b, err := s.buildOpenAPI(sf)
				if err != nil {
					s.specErr = err
					return
				}
				s.specs[sf] = b
			}
		})
		if s.specErr != nil {
			return s.specErr
		}
		c.Type("json")
		return c.Send(s.specs[surface])
	}
}

func (s *Server) requestID(c *fiber.Ctx) error {
	id := c.Get("X-Request-ID")
	if id == "" || len(id) > 128 {
		id = uuid.NewString()
	}
	c.Locals(requestIDKey, id)
	c.Set("X-Request-ID", id)
	start := time.Now()
	err := c.Next()
	c.Set("X-Process-Time", strconv.FormatFloat(time.Since(start).Seconds(), 'f', 6, 64))
	return err
}

// observe records the request in the metrics (by route template, so label
// cardinality stays bounded), traces it (continuing a caller's traceparent)
// and logs it as JSON with the request and trace ids.
func (s *Server) observe(c *fiber.Ctx) error {
	headers := map[string]string{}
	if tp := c.Get("traceparent"); tp != "" {
		headers["traceparent"] = tp
		headers["tracestate"] = c.Get("tracestate")
	}
	ctx := telemetry.Extract(c.UserContext(), headers)
	rid, _ := c.Locals(requestIDKey).(string)
	ctx = telemetry.WithRequestID(ctx, rid)
	ctx, end := telemetry.HTTPMiddlewareSpan(ctx, c.Method(), c.Path())
	c.SetUserContext(ctx)
	start := time.Now()
	err := c.Next()
	status := c.Response().StatusCode()
	if err != nil {
		status, _ = classify(err)
	}
	route := c.Route().Path
	end(status)
	d := time.Since(start)
	s.d.Metrics.ObserveHTTP(c.Method(), route, status, d)
	level := levelFor(status, route)
	if s.log.Enabled(ctx, level) {
		attrs := []any{"method", c.Method(), "route", route, "status", status, "ms", d.Milliseconds(), "request_id", rid}
		if p := principal(c); p != nil {
			attrs = append(attrs, "tenant", p.User.TenantID, "user_id", p.User.ID)
		}
		if job, ok := c.Locals(jobIDKey).(string); ok {
			attrs = append(attrs, "job_id", job)
		}
		s.log.Log(ctx, level, "request", append(attrs, telemetry.LogAttrs(ctx)...)...)
	}
	return err
}

// levelFor is the level of a request's log line: info, error for server
// errors, debug for probes and scrapes (which would drown the rest).
func levelFor(status int, route string) slog.Level {
	switch {
	case status >= 500:
		return slog.LevelError
	case route == "/health" || route == "/metrics" || route == "/v1/health" || route == "/admin/api/v1/health":
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

func (s *Server) recoverPanic(c *fiber.Ctx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("panic", "panic", r, "path", c.Path(), "request_id", c.Locals(requestIDKey),
				"stack", string(debug.Stack()))
			err = Errf(http.StatusInternalServerError, "Internal server error")
		}
	}()
	return c.Next()
}
