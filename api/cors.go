package api

import (
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// corsMethods are the methods a preflight may ask for: every method a route
// of either surface uses.
const corsMethods = "GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS"

// corsExposed are the response headers a cross-origin script may read: the
// request id and timing every answer carries, the file name of a download,
// the status behind a chat stream's setup error, Retry-After, and the owner
// secret of a new chat session.
const corsExposed = "X-Request-ID, X-Process-Time, Content-Disposition, X-Lore-Error-Status, Retry-After, " + chatSecretHeader

// corsMaxAge lets a browser keep a preflight answer for ten minutes, so the
// reference's front-ends (whose SDKs send custom headers, so every call is
// preflighted) do not pay a round trip per request.
const corsMaxAge = "600"

// maxRequestedHeaders bounds the Access-Control-Request-Headers value echoed
// back in a preflight answer.
const maxRequestedHeaders = 2048

// corsPolicy decides which browser origins may call the API cross-origin
// (LORE_CORS_ORIGINS). An exact origin is answered with itself and
// credentials allowed, as the reference does; "https://*.example.com" admits
// every subdomain the same way; "*" admits any other origin, answered "*"
// without credentials.
type corsPolicy struct {
	exact     map[string]bool
	wildcards []corsWildcard
	any       bool
}

// corsWildcard is a "https://*.example.com" entry: scheme "https://",
// suffix ".example.com".
type corsWildcard struct{ scheme, suffix string }

func newCORSPolicy(origins []string) *corsPolicy {
	p := &corsPolicy{exact: map[string]bool{}}
	for _, o := range origins {
		o = strings.TrimRight(strings.ToLower(strings.TrimSpace(o)), "/")
		switch {
		case o == "" || o == "none":
		case o == "*":
			p.any = true
		case strings.Contains(o, "://*."):
			i := strings.Index(o, "://*.")
			p.wildcards = append(p.wildcards, corsWildcard{scheme: o[:i+3], suffix: o[i+4:]})
		default:
			p.exact[o] = true
		}
	}
	if !p.any && len(p.exact) == 0 && len(p.wildcards) == 0 {
		return nil
	}
	return p
}

// allow returns the Access-Control-Allow-Origin value for origin and whether
// credentials may be sent; "" refuses the origin.
func (p *corsPolicy) allow(origin string) (string, bool) {
	o := strings.ToLower(origin)
	if p.exact[o] {
		return origin, true
	}
	for _, w := range p.wildcards {
		host, ok := strings.CutPrefix(o, w.scheme)
		sub, ok2 := strings.CutSuffix(host, w.suffix)
		if ok && ok2 && sub != "" && !strings.ContainsAny(sub, "/@:") {
			return origin, true
		}
	}
	if p.any {
		return "*", false
	}
	return "", false
}

// cors answers preflights for every path (before routing, so custom headers
// never meet a 404) and adds the Access-Control headers to every answer to an
// admitted origin, errors included, so a browser app can read a 401 or 422.
func (s *Server) cors(c *fiber.Ctx) error {
	origin := c.Get(fiber.HeaderOrigin)
	if s.corsPolicy == nil || origin == "" {
		return c.Next()
	}
	c.Vary(fiber.HeaderOrigin)
	allowed, creds := s.corsPolicy.allow(origin)
	preflight := c.Method() == http.MethodOptions && c.Get(fiber.HeaderAccessControlRequestMethod) != ""
	if allowed == "" {
		if preflight {
			return Errf(http.StatusBadRequest, "Disallowed CORS origin")
		}
		return c.Next()
	}
	c.Set(fiber.HeaderAccessControlAllowOrigin, allowed)
	if creds {
		c.Set(fiber.HeaderAccessControlAllowCredentials, "true")
	}
	if !preflight {
		c.Set(fiber.HeaderAccessControlExposeHeaders, corsExposed)
		return c.Next()
	}
	c.Vary(fiber.HeaderAccessControlRequestMethod, fiber.HeaderAccessControlRequestHeaders)
	c.Set(fiber.HeaderAccessControlAllowMethods, corsMethods)
	if h := c.Get(fiber.HeaderAccessControlRequestHeaders); h != "" && len(h) <= maxRequestedHeaders {
		c.Set(fiber.HeaderAccessControlAllowHeaders, h)
	}
	c.Set(fiber.HeaderAccessControlMaxAge, corsMaxAge)
	return c.SendStatus(http.StatusNoContent)
}
