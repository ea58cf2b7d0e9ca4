package api

import (
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/models"
)

// TestChatWithoutASiteSearchesTheTenantsReadableSites: a turn without
// filter.site_id (the reference's widget on a page of no site) belongs to the
// tenant named by filter.tenant_id, X-Tenant-Slug or the default tenant, and
// searches its active sites the caller can read: public ones, and a password
// site only with its access token; an unknown tenant is 404 "Tenant not
// found". With filter.site_id the turn is that site's, and a tenant_id that
// is not the site's is 404.
func TestChatWithoutASiteSearchesTheTenantsReadableSites(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	a, b := saSite(h, "alpha"), saSite(h, "beta")
	off := saSite(h, "off")
	h.must(200, "PUT", adminPath+"/sites/"+itoa(off.ID), map[string]any{"status": "inactive"}, h.admin)
	locked := saSite(h, "locked")
	h.must(200, "PUT", adminPath+"/sites/"+itoa(locked.ID)+"/password", map[string]any{"password": "lock-pass"}, h.admin)
	token := saToken(h, "locked", "lock-pass")
	now := time.Now().UTC()
	other := &models.Tenant{Slug: "other", Name: "Other", CreatedAt: now, UpdatedAt: now}
	if _, err := h.d.DB.NewInsert().Model(other).Exec(context.Background()); err != nil {
		t.Fatal(err)
	}

	type scope struct {
		Tenant int64   `json:"tenant"`
		Site   int64   `json:"site"`
		Sites  []int64 `json:"sites"`
		Status int     `json:"status"`
		Msg    string  `json:"msg"`
	}
	app := fiber.New()
	app.Post("/", func(c *fiber.Ctx) error {
		var f *ChatFilter
		if len(c.Body()) > 0 {
			f = &ChatFilter{}
			_ = json.Unmarshal(c.Body(), f)
		}
		site, ids, err := h.s.chatScope(c, f)
		if err != nil {
			st, msg := classify(err)
			return c.JSON(scope{Status: st, Msg: msg})
		}
		return c.JSON(scope{Tenant: site.TenantID, Site: site.ID, Sites: ids, Status: 200})
	})
	ask := func(filter string, headers ...string) scope {
		t.Helper()
		req := httptest.NewRequest("POST", "/", nil)
		if filter != "" {
			req = httptest.NewRequest("POST", "/", strings.NewReader(filter))
		}
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		res, err := app.Test(req, -1)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(res.Body)
		var out scope
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		return out
	}
	sorted := func(ids ...int64) []int64 { slices.Sort(ids); return ids }
	got := func(s scope) []int64 { return sorted(s.Sites...) }

	// No filter: the default tenant's public active sites.
	if s := ask(""); s.Status != 200 || s.Site != 0 || s.Tenant != a.TenantID || !slices.Equal(got(s), sorted(a.ID, b.ID)) {
		t.Fatalf("no filter: %+v", s)
	}
	// The password site joins with its access token.
	if s := ask("", SiteAccessHeader, token); !slices.Equal(got(s), sorted(a.ID, b.ID, locked.ID)) {
		t.Fatalf("with token: %+v", s)
	}
	// filter.tenant_id and X-Tenant-Slug name the tenant.
	if s := ask(`{"site_id":null,"tenant_id":` + itoa(a.TenantID) + `}`); !slices.Equal(got(s), sorted(a.ID, b.ID)) {
		t.Fatalf("tenant_id: %+v", s)
	}
	if s := ask("", TenantSlugHeader, "other"); s.Status != 404 || s.Tenant != 0 {
		t.Fatalf("a tenant with no site: %+v", s)
	}
	for _, s := range []scope{ask(`{"tenant_id":424242}`), ask("", TenantSlugHeader, "nope")} {
		if s.Status != 404 || s.Msg != "Tenant not found" {
			t.Fatalf("unknown tenant: %+v", s)
		}
	}
	// A site: that site alone; another tenant's id as the second check: 404.
	if s := ask(`{"site_id":` + itoa(a.ID) + `}`); s.Status != 200 || s.Site != a.ID || s.Sites != nil {
		t.Fatalf("site: %+v", s)
	}
	if s := ask(`{"site_id":` + itoa(a.ID) + `,"tenant_id":` + itoa(other.ID) + `}`); s.Status != 404 {
		t.Fatalf("site of another tenant: %+v", s)
	}
	if s := ask(`{"site_id":` + itoa(off.ID) + `}`); s.Status != 404 {
		t.Fatalf("inactive site: %+v", s)
	}
	// Through the route: the siteless turn gets past its scope (no workflow
	// engine here), where it used to be 422.
	r := h.do("POST", clientPath+"/chat/responses", map[string]any{"input": "hello", "user": "m"}, "")
	if r.Status != 503 {
		t.Fatalf("siteless turn: %d %s", r.Status, r.Raw)
	}
}
