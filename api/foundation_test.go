package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/lorekb/lore/internal/db/dbtest"
	"github.com/lorekb/lore/models"
)

func TestHealthEnvelopeAndRequestID(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		for _, p := range []string{"/v1/health", "/api/v1/health", "/admin/api/v1/health", "/admin/v1/health", "/health"} {
			r := h.must(200, "GET", p, nil, "")
			if r.Code != 0 || r.Header.Get("X-Request-ID") == "" {
				t.Fatalf("%s: code %d request id %q", p, r.Code, r.Header.Get("X-Request-ID"))
			}
			var hl Health
			r.into(t, &hl)
			if hl.Checks["database"] != "ok" || hl.Status != "healthy" {
				t.Fatalf("%s: %+v", p, hl)
			}
		}
		r := h.do("GET", "/v1/health", nil, "", "X-Request-ID", "abc-123")
		if r.Header.Get("X-Request-ID") != "abc-123" {
			t.Fatalf("request id not echoed: %q", r.Header.Get("X-Request-ID"))
		}
	})
}

func TestUnknownRouteAndMethodAreEnveloped(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	r := h.must(404, "GET", "/v1/nope", nil, "")
	if r.Code != 404 || r.Msg != "Not Found" {
		t.Fatalf("got %s", r.Raw)
	}
	// The slash form of a colon action is not a route.
	h.must(404, "POST", "/admin/api/v1/users/login", map[string]string{"email": "a@b.c", "password": "x"}, "")
}

func TestFiberPathEscapesColonActions(t *testing.T) {
	cases := map[string]string{
		"/sites:bySlug/{slug}":           `/sites\:bySlug/:slug`,
		"/documents/{id}:vectorize":      `/documents/:id\:vectorize`,
		"/files/{object_name+}:download": `/files/+\:download`,
		"/users/{id}/password":           `/users/:id/password`,
	}
	for in, want := range cases {
		if got := fiberPath(in); got != want {
			t.Errorf("fiberPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestBodyValidation(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	// malformed JSON → 422, as the reference answers
	r := h.must(422, "POST", "/admin/api/v1/users:login", `{"email":`, "")
	if r.Code != 422 || !strings.Contains(r.Msg, "malformed JSON") {
		t.Fatalf("got %s", r.Raw)
	}
	// wrong type → 422 naming the field
	r = h.must(422, "POST", "/admin/api/v1/users:login", `{"email":5,"password":"x"}`, "")
	if !strings.Contains(r.Msg, "email") {
		t.Fatalf("got %s", r.Raw)
	}
	// missing field → 422 naming it
	r = h.must(422, "POST", "/admin/api/v1/users:login", `{"email":"a@b.c"}`, "")
	if !strings.Contains(r.Msg, "password") {
		t.Fatalf("got %s", r.Raw)
	}
	// empty body → 422
	h.must(422, "POST", "/admin/api/v1/users:login", "", "")
	// out-of-range page → 422 naming it
	r = h.must(422, "GET", "/admin/api/v1/users?page=0", nil, h.admin)
	if !strings.Contains(r.Msg, "page") {
		t.Fatalf("got %s", r.Raw)
	}
	r = h.must(422, "GET", "/admin/api/v1/users?size=abc", nil, h.admin)
	if !strings.Contains(r.Msg, "size") {
		t.Fatalf("got %s", r.Raw)
	}
	h.must(422, "GET", "/admin/api/v1/users?order_by=id;drop%20table%20users", nil, h.admin)
}

func TestBodyLimit(t *testing.T) {
	h := newHarness(t, "sqlite", map[string]string{"LORE_BODY_LIMIT_BYTES": "1024"})
	big := `{"email":"` + strings.Repeat("a", 4096) + `","password":"x"}`
	r := h.do("POST", "/admin/api/v1/users:login", big, "")
	if r.Status != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d: %s", r.Status, r.Raw)
	}
}

func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	for surface, path := range map[Surface]string{Client: "/openapi-client.json", Admin: "/openapi-admin.json"} {
		r := h.must(200, "GET", path, nil, "")
		var doc struct {
			OpenAPI string                               `json:"openapi"`
			Paths   map[string]map[string]map[string]any `json:"paths"`
		}
		if err := json.Unmarshal(r.Raw, &doc); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, rt := range h.s.Routes() {
			if rt.Surface != surface {
				continue
			}
			n++
			p := strings.ReplaceAll(rt.Path, "+}", "}")
			if _, ok := doc.Paths[p][strings.ToLower(rt.Method)]; !ok {
				t.Errorf("%s: %s %s missing from the OpenAPI document", path, rt.Method, p)
			}
		}
		if n == 0 {
			t.Fatalf("%s: no routes", path)
		}
	}
	r := h.must(200, "GET", "/docs", nil, "")
	if !strings.Contains(string(r.Raw), "/docs/assets/swagger-ui-bundle.js") {
		t.Fatal("docs page does not reference the embedded bundle")
	}
	r = h.must(200, "GET", "/docs/assets/swagger-ui-bundle.js", nil, "")
	if len(r.Raw) < 100000 {
		t.Fatalf("bundle too small: %d", len(r.Raw))
	}
}

func TestLoginAndUsers(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		// invite → active with a temporary password.
		r := h.must(201, "POST", "/admin/api/v1/users:invite", map[string]any{"email": "New@Example.com", "role": "editor"}, h.admin)
		var inv UserWithPassword
		r.into(t, &inv)
		if inv.User.Status != "active" || len(inv.Password) < 12 || inv.User.Email != "new@example.com" || inv.User.Name != "New" {
			t.Fatalf("invite: %+v", inv)
		}
		h.must(400, "POST", "/admin/api/v1/users:login", map[string]string{"email": "new@example.com", "password": "wrong-password"}, "")
		r = h.must(200, "POST", "/admin/api/v1/users:login", map[string]string{"email": "new@example.com", "password": inv.Password}, "")
		var lr LoginResult
		r.into(t, &lr)
		if lr.Token == "" || lr.User.Status != "active" || lr.User.Role != "editor" {
			t.Fatalf("login: %+v", lr)
		}
		if strings.Contains(string(r.Raw), "password_hash") {
			t.Fatal("hash leaked")
		}
		// editor cannot list users; admin can, with filters.
		h.must(403, "GET", "/admin/api/v1/users", nil, lr.Token)
		r = h.must(200, "GET", "/admin/api/v1/users?role=editor&keyword=new@&order_by=email&order_dir=asc", nil, h.admin)
		var pg Page[UserResponse]
		r.into(t, &pg)
		if pg.Pagination.Total != 1 || pg.List[0].ID != inv.User.ID {
			t.Fatalf("list: %+v", pg)
		}
		// change own password: old one checked; old tokens stop working.
		path := "/admin/api/v1/users/" + itoa(inv.User.ID) + "/password"
		h.must(400, "PUT", path, map[string]string{"old_password": "nope", "new_password": "brand-new-pass"}, lr.Token)
		h.must(200, "PUT", path, map[string]string{"old_password": inv.Password, "new_password": "brand-new-pass"}, lr.Token)
		h.must(401, "GET", "/admin/api/v1/users/"+itoa(inv.User.ID), nil, lr.Token)
		// duplicate email → 409
		h.must(409, "POST", "/admin/api/v1/users", map[string]any{"name": "x", "email": "new@example.com", "password": "12345678"}, h.admin)
		// deactivate → login refused
		h.must(200, "PUT", "/admin/api/v1/users/"+itoa(inv.User.ID), map[string]any{"status": "inactive"}, h.admin)
		h.must(400, "POST", "/admin/api/v1/users:login", map[string]string{"email": "new@example.com", "password": "brand-new-pass"}, "")
		// reset gives a new temporary password
		r = h.must(200, "POST", "/admin/api/v1/users/"+itoa(inv.User.ID)+":resetPassword", nil, h.admin)
		var rp UserWithPassword
		r.into(t, &rp)
		if rp.Password == "" || rp.Password == inv.Password {
			t.Fatalf("reset: %+v", rp)
		}
		// delete: later requests with its token are 401, the row is gone
		h.must(200, "DELETE", "/admin/api/v1/users/"+itoa(inv.User.ID), nil, h.admin)
		h.must(404, "GET", "/admin/api/v1/users/"+itoa(inv.User.ID), nil, h.admin)
		h.must(422, "GET", "/admin/api/v1/users/abc", nil, h.admin)
	})
}

func TestJWTRejections(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	none := "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiIxIiwiZXhwIjo0MTAyNDQ0ODAwLCJpc3MiOiJsb3JlIiwidmVyIjowfQ."
	for _, tok := range []string{"", "garbage", none, h.admin + "x"} {
		r := h.do("GET", "/admin/api/v1/users", nil, tok)
		if r.Status != 401 || r.Code != 401 {
			t.Fatalf("token %q: status %d %s", tok, r.Status, r.Raw)
		}
	}
}

var _ = dbtest.Dialects

func TestForwardedForOnlyFromTrustedProxies(t *testing.T) {
	for proxies, want := range map[string]string{"10.9.9.9": "0.0.0.0", "0.0.0.0": "1.2.3.4"} {
		h := newHarness(t, "sqlite", map[string]string{"LORE_TRUSTED_PROXIES": proxies})
		var site, doc struct {
			ID int64 `json:"id"`
		}
		h.must(201, "POST", "/admin/api/v1/sites", map[string]any{"name": "IP"}, h.admin).into(t, &site)
		h.must(201, "POST", "/admin/api/v1/documents", map[string]any{"site_id": site.ID, "title": "d", "status": "published"}, h.admin).into(t, &doc)
		h.must(200, "GET", "/v1/documents/"+itoa(doc.ID), nil, "", "X-Forwarded-For", "1.2.3.4")
		if err := h.s.FlushViews(context.Background()); err != nil {
			t.Fatal(err)
		}
		var ev models.ViewEvent
		if err := h.d.DB.NewSelect().Model(&ev).Limit(1).Scan(context.Background()); err != nil {
			t.Fatal(err)
		}
		if ev.IP != want {
			t.Fatalf("trusted proxies %s: recorded IP %q, want %q", proxies, ev.IP, want)
		}
	}
}

// The first start creates the default tenant and one admin; a restart
// creates nothing more. A password from LORE_ADMIN_PASSWORD is used as given,
// otherwise one is generated and printed once.
func TestBootstrapCreatesTheDefaultTenantAndFirstAdminOnce(t *testing.T) {
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			for _, env := range []map[string]string{{"LORE_ADMIN_EMAIL": "root@example.com"},
				{"LORE_ADMIN_EMAIL": "root@example.com", "LORE_ADMIN_PASSWORD": "given-password-1"}} {
				h := newBareHarness(t, dialect, env)
				var out bytes.Buffer
				if err := Bootstrap(ctx, h.d, &out); err != nil {
					t.Fatal(err)
				}
				pw := env["LORE_ADMIN_PASSWORD"]
				if pw == "" {
					_, rest, ok := strings.Cut(out.String(), "root@example.com / ")
					if !ok {
						t.Fatalf("no generated password printed: %q", out.String())
					}
					pw = strings.Fields(rest)[0]
				} else if strings.Contains(out.String(), pw) {
					t.Fatalf("the configured password was printed: %q", out.String())
				}
				var login LoginResult
				h.must(200, "POST", adminPath+"/users:login", map[string]any{"email": "root@example.com", "password": pw}, "").into(t, &login)
				if login.Token == "" || login.User.Role != models.RoleAdmin || login.User.Status != models.UserActive {
					t.Fatalf("login: %+v", login)
				}
				tenant, err := h.d.DB.TenantBySlug(ctx, "default")
				if err != nil || login.User.TenantID != tenant.ID {
					t.Fatalf("default tenant %+v %v, admin's tenant %d", tenant, err, login.User.TenantID)
				}
				out.Reset()
				if err := Bootstrap(ctx, h.d, &out); err != nil || out.Len() != 0 {
					t.Fatalf("second start: %v %q", err, out.String())
				}
				if n, _ := h.d.DB.CountUsers(ctx); n != 1 {
					t.Fatalf("%d users after a restart", n)
				}
			}
		})
	}
}
