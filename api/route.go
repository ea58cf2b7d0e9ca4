package api

import (
	"net/http"
	"regexp"
	"sort"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// Surface is one of the two API surfaces.
type Surface int

// The two surfaces and the root (unprefixed) routes.
const (
	Client Surface = iota
	Admin
	Root
)

// Prefixes under which each surface is served; the first is canonical.
var surfacePrefixes = map[Surface][]string{
	Client: {"/v1", "/api/v1"},
	Admin:  {"/admin/api/v1", "/admin/v1"},
	Root:   {""},
}

// Perm is the least role an admin route needs; site assignment is checked by
// the handler once it knows the site.
type Perm int

// Permission levels, from open to strict.
const (
	Public       Perm = iota // no authentication (client surface, login, health)
	AnyUser                  // any authenticated active user
	EditorUp                 // admin, site_admin, editor
	SiteAdminUp              // admin, site_admin
	AdminOnly                // admin (platform or tenant admin)
	PlatformOnly             // platform admin: role admin in the platform tenant
)

// Route is one endpoint: the single source for Fiber routing and OpenAPI.
type Route struct {
	Surface Surface
	Method  string
	// Path in SPEC.md form: "{id}" parameters, a literal ":" for colon actions
	// ("/documents/{id}:vectorize"), and "{name+}" for a parameter that may
	// contain slashes (object names).
	Path     string
	Summary  string
	Tag      string
	Perm     Perm
	Query    any // zero value of the query struct (query-tagged fields)
	Body     any // zero value of the JSON body type
	Response any // zero value of the envelope data type; nil → no schema
	// Raw marks responses that are not enveloped (SSE, file bytes, plain text).
	Raw       string // content type of a raw response, e.g. "text/event-stream"
	Multipart bool
	// MaxBody overrides the body limit of the route (bytes on the wire);
	// zero means LORE_BODY_LIMIT_BYTES, or the upload limit when Multipart.
	MaxBody     int64
	Created     bool // success status is 201
	Handler     fiber.Handler
	Description string
}

var paramRe = regexp.MustCompile(`\{([a-zA-Z_]+)(\+?)\}`)

// fiberPath converts a SPEC.md path to a Fiber route path: literal colons are
// escaped so Fiber does not read them as parameter markers, "{x}" becomes ":x"
// and "{x+}" the greedy "+" parameter.
func fiberPath(p string) string {
	var b strings.Builder
	last := 0
	for _, m := range paramRe.FindAllStringSubmatchIndex(p, -1) {
		b.WriteString(strings.ReplaceAll(p[last:m[0]], ":", `\:`))
		name := p[m[2]:m[3]]
		if m[5] > m[4] {
			b.WriteString("+")
		} else {
			b.WriteString(":" + name)
		}
		last = m[1]
	}
	b.WriteString(strings.ReplaceAll(p[last:], ":", `\:`))
	return b.String()
}

// param reads a path parameter declared as "{name}" or "{name+}".
func param(c *fiber.Ctx, name string) string {
	if v := c.Params(name); v != "" {
		return v
	}
	return c.Params("+")
}

// register mounts routes on the app under every prefix of their surface.
// Routes with colon actions go first so that a generic "{id}" route never
// shadows them.
func (s *Server) register(routes []Route) {
	sorted := append([]Route(nil), routes...)
	sort.SliceStable(sorted, func(i, j int) bool {
		return strings.Count(sorted[i].Path, ":") > strings.Count(sorted[j].Path, ":")
	})
	for _, r := range sorted {
		handlers := []fiber.Handler{}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			// Before authentication: a refused caller's body is not read
			// either, and the declared length is checked first of all.
			handlers = append(handlers, s.limitBody(s.bodyMax(r), r.Multipart))
		}
		if r.Surface == Admin && r.Perm != Public {
			handlers = append(handlers, s.requireAuth(r.Perm))
		}
		handlers = append(handlers, r.Handler)
		for _, prefix := range surfacePrefixes[r.Surface] {
			s.app.Add(r.Method, prefix+fiberPath(r.Path), handlers...)
		}
	}
	s.routes = append(s.routes, routes...)
}
