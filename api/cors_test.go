package api

import (
	"net/http"
	"strings"
	"testing"
)

// TestCORSPreflightEveryRoute preflights every route of both surfaces, under
// every prefix, the way a browser does before the reference's SDK calls (it
// sends Authorization, Content-Type, X-App-State and X-Admin-Origin or
// X-Site-Access-Token, so every call is preflighted): an admitted origin gets
// 204 with the method and the requested headers allowed; a refused origin gets
// no Access-Control header.
func TestCORSPreflightEveryRoute(t *testing.T) {
	h := newHarness(t, "sqlite", map[string]string{"LORE_CORS_ORIGINS": "http://localhost:8002, https://*.docs.example.com"})
	const asked = "authorization,content-type,x-app-state,x-admin-origin,x-site-access-token,x-selected-tenant-id"
	for _, r := range h.s.Routes() {
		for _, prefix := range surfacePrefixes[r.Surface] {
			path := prefix + concretePath(r.Path)
			res := h.do(http.MethodOptions, path, nil, "", "Origin", "http://localhost:8002",
				"Access-Control-Request-Method", r.Method, "Access-Control-Request-Headers", asked)
			if res.Status != http.StatusNoContent {
				t.Fatalf("preflight %s %s: status %d %s", r.Method, path, res.Status, res.Raw)
			}
			hd := res.Header
			if hd.Get("Access-Control-Allow-Origin") != "http://localhost:8002" || hd.Get("Access-Control-Allow-Credentials") != "true" ||
				hd.Get("Access-Control-Allow-Headers") != asked || !containsToken(hd.Get("Access-Control-Allow-Methods"), r.Method) ||
				hd.Get("Access-Control-Max-Age") == "" {
				t.Fatalf("preflight %s %s: headers %v", r.Method, path, hd)
			}
		}
	}
	sub := h.do(http.MethodOptions, "/v1/chat/responses", nil, "", "Origin", "https://team.docs.example.com",
		"Access-Control-Request-Method", "POST")
	if sub.Status != http.StatusNoContent || sub.Header.Get("Access-Control-Allow-Origin") != "https://team.docs.example.com" {
		t.Fatalf("wildcard subdomain: %d %v", sub.Status, sub.Header)
	}
	for _, bad := range []string{"http://evil.example", "https://docs.example.com", "https://a.b@docs.example.com.evil", "http://team.docs.example.com"} {
		res := h.do(http.MethodOptions, "/admin/api/v1/sites", nil, "", "Origin", bad, "Access-Control-Request-Method", "GET")
		if res.Status < 400 || res.Header.Get("Access-Control-Allow-Origin") != "" {
			t.Fatalf("refused origin %s: %d %v", bad, res.Status, res.Header)
		}
	}
}

// TestCORSHeadersOnAnswers checks the headers of real cross-origin calls:
// successes and errors (a browser app can only read a 401 or 422 that carries
// them), the exposed headers, and "*" admitting any origin without
// credentials. Without an Origin header nothing is added.
func TestCORSHeadersOnAnswers(t *testing.T) {
	h := newHarness(t, "sqlite", map[string]string{"LORE_CORS_ORIGINS": "http://localhost:8001"})
	ok := h.must(200, "GET", "/v1/sites", nil, "", "Origin", "http://localhost:8001")
	if ok.Header.Get("Access-Control-Allow-Origin") != "http://localhost:8001" || !containsToken(ok.Header.Get("Access-Control-Expose-Headers"), "X-Request-ID") ||
		!containsToken(ok.Header.Get("Vary"), "Origin") {
		t.Fatalf("success headers: %v", ok.Header)
	}
	unauth := h.must(401, "GET", "/admin/v1/sites", nil, "", "Origin", "http://localhost:8001")
	if unauth.Header.Get("Access-Control-Allow-Origin") != "http://localhost:8001" || unauth.Code != 401 {
		t.Fatalf("401 headers: %v %s", unauth.Header, unauth.Raw)
	}
	other := h.must(200, "GET", "/v1/sites", nil, "", "Origin", "http://elsewhere.example")
	if other.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("unlisted origin admitted: %v", other.Header)
	}
	plain := h.must(200, "GET", "/v1/sites", nil, "")
	if plain.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("headers without Origin: %v", plain.Header)
	}

	star := newHarness(t, "sqlite", map[string]string{"LORE_CORS_ORIGINS": "*"})
	res := star.do(http.MethodOptions, "/admin/v1/documents/1:vectorize", nil, "", "Origin", "https://anywhere.example",
		"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization")
	if res.Status != http.StatusNoContent || res.Header.Get("Access-Control-Allow-Origin") != "*" || res.Header.Get("Access-Control-Allow-Credentials") != "" {
		t.Fatalf("star preflight: %d %v", res.Status, res.Header)
	}

	off := newHarness(t, "sqlite", map[string]string{"LORE_CORS_ORIGINS": "none"})
	if r := off.do(http.MethodOptions, "/v1/sites", nil, "", "Origin", "http://localhost:8001", "Access-Control-Request-Method", "GET"); r.Header.Get("Access-Control-Allow-Origin") != "" || r.Status == http.StatusNoContent {
		t.Fatalf("CORS off still answers: %d %v", r.Status, r.Header)
	}
}

// concretePath fills every path parameter of a route with a sample value.
func concretePath(p string) string {
	return paramRe.ReplaceAllStringFunc(p, func(m string) string {
		if m[len(m)-2] == '+' {
			return "uploads/a.png"
		}
		return "1"
	})
}

// containsToken reports whether a comma-separated header value lists tok.
func containsToken(list, tok string) bool {
	for _, p := range strings.Split(list, ",") {
		if strings.EqualFold(strings.TrimSpace(p), tok) {
			return true
		}
	}
	return false
}
