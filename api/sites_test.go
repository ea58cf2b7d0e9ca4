package api

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/models"
)

const (
	adminSites  = "/admin/api/v1/sites"
	clientSites = "/v1/sites"
)

// sitesNew creates a site through the Admin API and returns it.
func (h *harness) sitesNew(body map[string]any) SiteResponse {
	h.t.Helper()
	var s SiteResponse
	h.must(201, "POST", adminSites, body, h.admin).into(h.t, &s)
	return s
}

// sitesRow reads the site row straight from the database.
func (h *harness) sitesRow(id int64) models.Site {
	h.t.Helper()
	s, err := h.d.DB.GetSite(context.Background(), id)
	if err != nil {
		h.t.Fatalf("site %d: %v", id, err)
	}
	return *s
}

func (h *harness) sitesCount() int {
	h.t.Helper()
	n, err := h.d.DB.NewSelect().Model((*models.Site)(nil)).Count(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	return int(n)
}

func TestSiteCRUD(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		s := h.sitesNew(map[string]any{
			"name": "  Product Docs ", "domain": "Docs.Example.COM", "description": "All about the product",
			"icon": "https://x/icon.png", "theme_color": "green", "layout_mode": "top", "show_pipeline_trace": true,
			"quick_questions": []map[string]string{{"text": "How do I start?", "category": "basics"}, {"text": "Pricing?"}},
		})
		if s.Name != "Product Docs" || s.Slug != "product-docs" || s.Domain == nil || *s.Domain != "docs.example.com" ||
			s.Status != "active" || s.LayoutMode != "top" || s.ThemeColor != "green" || !s.ShowPipelineTrace ||
			!s.IsPublic || s.RequiresPassword || s.HasPassword || s.TenantSlug != "default" || s.ArticleCount != 0 ||
			len(s.QuickQuestions) != 2 || s.QuickQuestions[0].Category != "basics" || s.WebWidget != nil {
			t.Fatalf("created: %+v", s)
		}
		// Defaults and generated slugs.
		d := h.sitesNew(map[string]any{"name": "文档中心"})
		if !strings.HasPrefix(d.Slug, "site-") || d.ThemeColor != "blue" || d.LayoutMode != "sidebar" ||
			d.Domain != nil || d.QuickQuestions != nil || d.Description != nil || d.Icon != nil || d.BotConfig != nil {
			t.Fatalf("defaults: %+v", d)
		}
		e := h.sitesNew(map[string]any{"name": "Product  Docs!", "status": "inactive", "slug": "Custom_Slug-1", "is_public": false})
		if e.Slug != "custom_slug-1" || e.Status != "inactive" || e.IsPublic {
			t.Fatalf("explicit: %+v", e)
		}
		g := h.sitesNew(map[string]any{"name": "product docs?"}) // generated slug taken → suffix
		if g.Slug != "product-docs-2" {
			t.Fatalf("generated slug clash: %q", g.Slug)
		}

		var got SiteResponse
		h.must(200, "GET", adminSites+"/"+itoa(s.ID), nil, h.admin).into(t, &got)
		if got.ID != s.ID || got.Name != s.Name {
			t.Fatalf("get: %+v", got)
		}
		h.must(200, "GET", adminSites+":byDomain/DOCS.example.com", nil, h.admin).into(t, &got)
		if got.ID != s.ID {
			t.Fatalf("by domain: %+v", got)
		}
		h.must(200, "GET", adminSites+":bySlug/product-docs", nil, h.admin).into(t, &got)
		if got.ID != s.ID {
			t.Fatalf("by slug: %+v", got)
		}
		h.must(404, "GET", adminSites+":bySlug/nope", nil, h.admin)
		h.must(404, "GET", adminSites+":byDomain/nope.example.com", nil, h.admin)
		h.must(404, "GET", adminSites+"/99999", nil, h.admin)
		h.must(422, "GET", adminSites+"/abc", nil, h.admin)

		// List: newest first, filters, pagination.
		var pg Page[SiteResponse]
		h.must(200, "GET", adminSites, nil, h.admin).into(t, &pg)
		if pg.Pagination.Total != 4 || len(pg.List) != 4 || pg.List[0].ID != g.ID || pg.List[3].ID != s.ID {
			t.Fatalf("list: %+v", pg)
		}
		h.must(200, "GET", adminSites+"?status=inactive", nil, h.admin).into(t, &pg)
		if pg.Pagination.Total != 1 || pg.List[0].ID != e.ID {
			t.Fatalf("status filter: %+v", pg)
		}
		h.must(200, "GET", adminSites+"?keyword=about%20the", nil, h.admin).into(t, &pg)
		if pg.Pagination.Total != 1 || pg.List[0].ID != s.ID {
			t.Fatalf("keyword: %+v", pg)
		}
		h.must(200, "GET", adminSites+"?page=2&size=3", nil, h.admin).into(t, &pg)
		if pg.Pagination.Total != 4 || len(pg.List) != 1 || pg.Pagination.Page != 2 || pg.Pagination.Size != 3 {
			t.Fatalf("page 2: %+v", pg)
		}
		h.must(200, "GET", adminSites+"?is_pager=0&size=1", nil, h.admin).into(t, &pg)
		if len(pg.List) != 4 || pg.Pagination.IsPager != 0 || pg.Pagination.Size != 4 {
			t.Fatalf("is_pager=0: %+v", pg)
		}
		h.must(422, "GET", adminSites+"?status=draft", nil, h.admin)
		h.must(422, "GET", adminSites+"?size=1001", nil, h.admin)
		h.must(422, "GET", adminSites+"?page=x", nil, h.admin)

		// Update: only the given fields change.
		h.must(200, "PUT", adminSites+"/"+itoa(s.ID), map[string]any{"description": "new", "status": "inactive",
			"quick_questions": []map[string]string{}, "domain": ""}, h.admin).into(t, &got)
		if got.Description == nil || *got.Description != "new" || got.Status != "inactive" || got.Name != "Product Docs" || got.Domain != nil ||
			len(got.QuickQuestions) != 0 || got.LayoutMode != "top" {
			t.Fatalf("update: %+v", got)
		}
		h.must(200, "PUT", adminSites+"/"+itoa(s.ID), map[string]any{"slug": "renamed", "domain": "new.example.com"}, h.admin).into(t, &got)
		if got.Slug != "renamed" || got.Domain == nil || *got.Domain != "new.example.com" {
			t.Fatalf("update slug/domain: %+v", got)
		}

		// Delete.
		h.must(200, "DELETE", adminSites+"/"+itoa(s.ID), nil, h.admin)
		h.must(404, "GET", adminSites+"/"+itoa(s.ID), nil, h.admin)
		h.must(404, "DELETE", adminSites+"/"+itoa(s.ID), nil, h.admin)
		h.must(404, "PUT", adminSites+"/"+itoa(s.ID), map[string]any{"name": "x"}, h.admin)
	})
}

func TestSiteUniquenessAndBadInput(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		a := h.sitesNew(map[string]any{"name": "Alpha", "slug": "alpha", "domain": "alpha.example.com"})
		b := h.sitesNew(map[string]any{"name": "Beta", "slug": "beta"})
		n := h.sitesCount()

		for field, body := range map[string]map[string]any{
			"name":   {"name": "Alpha", "slug": "other"},
			"slug":   {"name": "Other", "slug": "ALPHA"},
			"domain": {"name": "Other", "domain": "Alpha.Example.com"},
		} {
			r := h.must(409, "POST", adminSites, body, h.admin)
			if r.Code != 409 || !strings.HasPrefix(r.Msg, field+":") {
				t.Errorf("create duplicate %s: %s", field, r.Raw)
			}
		}
		before := h.sitesRow(b.ID)
		for field, body := range map[string]map[string]any{
			"name":   {"name": "Alpha", "description": "should not be written"},
			"slug":   {"slug": "alpha", "description": "should not be written"},
			"domain": {"domain": "ALPHA.example.com", "description": "should not be written"},
		} {
			r := h.must(409, "PUT", adminSites+"/"+itoa(b.ID), body, h.admin)
			if !strings.HasPrefix(r.Msg, field+":") {
				t.Errorf("update duplicate %s: %s", field, r.Raw)
			}
		}
		// A site keeps its own values without a conflict.
		h.must(200, "PUT", adminSites+"/"+itoa(a.ID), map[string]any{"name": "Alpha", "slug": "alpha", "domain": "alpha.example.com"}, h.admin)

		for _, tc := range []struct {
			body  any
			field string
		}{
			{map[string]any{"name": 5}, "name"},
			{map[string]any{"name": "   "}, "name"},
			{map[string]any{}, "name"},
			{map[string]any{"name": strings.Repeat("n", 101)}, "name"},
			{map[string]any{"name": "X", "status": "draft"}, "status"},
			{map[string]any{"name": "X", "layout_mode": "grid"}, "layout_mode"},
			{map[string]any{"name": "X", "slug": "has space"}, "slug"},
			{map[string]any{"name": "X", "slug": strings.Repeat("s", 201)}, "slug"},
			{map[string]any{"name": "X", "domain": "not a domain/"}, "domain"},
			{map[string]any{"name": "X", "tenant_id": "one"}, "tenant_id"},
			{map[string]any{"name": "X", "show_pipeline_trace": "yes"}, "show_pipeline_trace"},
			{map[string]any{"name": "X", "quick_questions": "q"}, "quick_questions"},
			{map[string]any{"name": "X", "quick_questions": []map[string]any{{"category": "c"}}}, "text"},
		} {
			r := h.must(422, "POST", adminSites, tc.body, h.admin)
			if !strings.Contains(r.Msg, tc.field) {
				t.Errorf("create %v: message %q does not name %s", tc.body, r.Msg, tc.field)
			}
		}
		r := h.must(400, "POST", adminSites, map[string]any{"name": "X", "tenant_id": 999}, h.admin)
		if !strings.Contains(r.Msg, "tenant_id") {
			t.Errorf("unknown tenant: %s", r.Raw)
		}
		h.must(422, "POST", adminSites, `{"name":`, h.admin)
		if got := h.sitesCount(); got != n {
			t.Fatalf("refused creates wrote rows: %d → %d", n, got)
		}

		for _, body := range []any{
			map[string]any{"name": 5}, map[string]any{"name": ""}, map[string]any{"status": "gone"},
			map[string]any{"slug": ""}, map[string]any{"slug": "Bad Slug"}, map[string]any{"domain": "a b"},
			map[string]any{"tenant_id": 999}, map[string]any{"is_public": "no"}, "",
		} {
			r := h.do("PUT", adminSites+"/"+itoa(b.ID), body, h.admin)
			if r.Status != 422 && r.Status != 400 {
				t.Errorf("update %v: status %d %s", body, r.Status, r.Raw)
			}
		}
		h.must(404, "PUT", adminSites+"/99999", map[string]any{"name": "Zed"}, h.admin)
		h.must(404, "DELETE", adminSites+"/99999", nil, h.admin)
		if after := h.sitesRow(b.ID); !reflect.DeepEqual(before, after) {
			t.Fatalf("refused updates changed the row:\n%+v\n%+v", before, after)
		}
	})
}

func TestSiteRoles(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		a := h.sitesNew(map[string]any{"name": "A", "domain": "a.example.com"})
		b := h.sitesNew(map[string]any{"name": "B", "domain": "b.example.com"})
		sa := h.userToken(models.RoleSiteAdmin, a.ID)
		ed := h.userToken(models.RoleEditor, a.ID)
		none := h.userToken(models.RoleSiteAdmin)

		for _, tok := range []string{sa, ed} {
			var pg Page[SiteResponse]
			h.must(200, "GET", adminSites, nil, tok).into(t, &pg)
			if pg.Pagination.Total != 1 || pg.List[0].ID != a.ID {
				t.Fatalf("assigned list: %+v", pg)
			}
			h.must(200, "GET", adminSites+"/"+itoa(a.ID), nil, tok)
			h.must(200, "GET", adminSites+":bySlug/"+a.Slug, nil, tok)
			h.must(200, "GET", adminSites+":byDomain/a.example.com", nil, tok)
			// Another site is answered as a missing one.
			h.must(404, "GET", adminSites+"/"+itoa(b.ID), nil, tok)
			h.must(404, "GET", adminSites+":bySlug/"+b.Slug, nil, tok)
			h.must(404, "GET", adminSites+":byDomain/b.example.com", nil, tok)
			h.must(403, "POST", adminSites, map[string]any{"name": "C"}, tok)
			h.must(403, "DELETE", adminSites+"/"+itoa(a.ID), nil, tok)
			// An editor is below the route's role (403); a site admin
			// gets another site answered as missing (404).
			want := 403
			if tok == sa {
				want = 404
			}
			h.must(want, "PUT", adminSites+"/"+itoa(b.ID), map[string]any{"description": "x"}, tok)
		}
		var pg Page[SiteResponse]
		h.must(200, "GET", adminSites, nil, none).into(t, &pg)
		if pg.Pagination.Total != 0 || len(pg.List) != 0 {
			t.Fatalf("unassigned list: %+v", pg)
		}

		before := h.sitesRow(a.ID)
		h.must(403, "PUT", adminSites+"/"+itoa(a.ID), map[string]any{"description": "by editor"}, ed)
		h.must(403, "PUT", adminSites+"/"+itoa(a.ID), map[string]any{"tenant_id": 2}, sa)
		if after := h.sitesRow(a.ID); !reflect.DeepEqual(before, after) {
			t.Fatal("refused update changed the row")
		}
		var got SiteResponse
		h.must(200, "PUT", adminSites+"/"+itoa(a.ID), map[string]any{"description": "by site admin"}, sa).into(t, &got)
		if got.Description == nil || *got.Description != "by site admin" {
			t.Fatalf("site admin update: %+v", got)
		}
		h.must(401, "GET", adminSites, nil, "")
	})
}

func TestSitesBeingDeletedAreInvisible(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		s := h.sitesNew(map[string]any{"name": "Going", "slug": "going", "domain": "going.example.com"})
		keep := h.sitesNew(map[string]any{"name": "Staying"})
		if err := h.d.DB.MarkSiteDeleting(context.Background(), s.ID); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"/" + itoa(s.ID), ":bySlug/going", ":byDomain/going.example.com"} {
			h.must(404, "GET", adminSites+p, nil, h.admin)
			h.must(404, "GET", clientSites+p, nil, "")
		}
		h.must(404, "PUT", adminSites+"/"+itoa(s.ID), map[string]any{"description": "x"}, h.admin)
		h.must(404, "GET", "/admin/api/v1/stats:siteStats?site_id="+itoa(s.ID), nil, h.admin)
		// Its collections and documents are out of reach too, and nothing
		// new lands in it.
		for _, p := range []string{"/admin/api/v1/collections?site_id=", "/admin/api/v1/collections:tree?site_id=", "/admin/api/v1/documents?site_id="} {
			h.must(404, "GET", p+itoa(s.ID), nil, h.admin)
		}
		h.must(400, "POST", "/admin/api/v1/documents", map[string]any{"site_id": s.ID, "title": "Late"}, h.admin)
		h.must(400, "POST", "/admin/api/v1/collections", map[string]any{"site_id": s.ID, "title": "Late"}, h.admin)
		for _, p := range []string{adminSites, clientSites} {
			var pg Page[SiteResponse]
			h.must(200, "GET", p, nil, h.admin).into(t, &pg)
			if pg.Pagination.Total != 1 || pg.List[0].ID != keep.ID {
				t.Fatalf("%s lists a deleting site: %+v", p, pg)
			}
		}
	})
}

func TestClientSites(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		a := h.sitesNew(map[string]any{"name": "Handbook", "description": "Company handbook", "domain": "hb.example.com"})
		b := h.sitesNew(map[string]any{"name": "API reference", "slug": "api-ref"})
		off := h.sitesNew(map[string]any{"name": "Hidden", "slug": "hidden", "domain": "hidden.example.com", "status": "inactive"})
		now := time.Now().UTC()
		tid := a.TenantID
		docs := []models.Document{
			// Three recorded views, as the view flush leaves them: the
			// documents' counters and their events.
			{TenantID: tid, SiteID: a.ID, Title: "p1", Status: models.DocPublished, CreatedAt: now, UpdatedAt: now, Views: 2},
			{TenantID: tid, SiteID: a.ID, Title: "p2", Status: models.DocPublished, CreatedAt: now, UpdatedAt: now, Views: 1},
			{TenantID: tid, SiteID: a.ID, Title: "d1", Status: models.DocDraft, CreatedAt: now, UpdatedAt: now},
		}
		if _, err := h.d.DB.NewInsert().Model(&docs).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		views := []models.ViewEvent{{SiteID: a.ID, DocumentID: docs[0].ID, CreatedAt: now},
			{SiteID: a.ID, DocumentID: docs[0].ID, CreatedAt: now}, {SiteID: a.ID, DocumentID: docs[1].ID, CreatedAt: now}}
		if _, err := h.d.DB.NewInsert().Model(&views).Exec(ctx); err != nil {
			t.Fatal(err)
		}

		var cs ClientSite
		h.must(200, "GET", clientSites+"/"+itoa(a.ID), nil, "").into(t, &cs)
		if cs.ID != a.ID || cs.ArticleCount != 2 || cs.ViewCount != 3 || cs.TenantSlug != "default" ||
			cs.Domain == nil || *cs.Domain != "hb.example.com" || !cs.IsPublic || cs.QuickQuestions != nil {
			t.Fatalf("client detail: %+v", cs)
		}
		if r := h.must(200, "GET", clientSites+"/"+itoa(a.ID), nil, ""); strings.Contains(string(r.Raw), `"status"`) {
			t.Fatalf("client detail shows admin fields: %s", r.Raw)
		}
		h.must(200, "GET", "/api/v1/sites:bySlug/"+a.Slug, nil, "").into(t, &cs)
		if cs.ID != a.ID {
			t.Fatalf("by slug: %+v", cs)
		}
		h.must(200, "GET", clientSites+":byDomain/HB.example.com", nil, "").into(t, &cs)
		if cs.ID != a.ID {
			t.Fatalf("by domain: %+v", cs)
		}
		var admin SiteResponse
		h.must(200, "GET", adminSites+"/"+itoa(a.ID), nil, h.admin).into(t, &admin)
		if admin.ArticleCount != 3 {
			t.Fatalf("admin article_count counts every document: %+v", admin)
		}

		// Inactive sites do not exist for the Client API.
		for _, p := range []string{"/" + itoa(off.ID), ":bySlug/hidden", ":byDomain/hidden.example.com"} {
			h.must(404, "GET", clientSites+p, nil, "")
		}
		h.must(404, "GET", clientSites+"/99999", nil, "")
		h.must(422, "GET", clientSites+"/x", nil, "")

		list := func(q string) Page[ClientSite] {
			t.Helper()
			var pg Page[ClientSite]
			h.must(200, "GET", clientSites+q, nil, "").into(t, &pg)
			return pg
		}
		if pg := list(""); pg.Pagination.Total != 2 || pg.List[0].ID != b.ID || pg.List[1].ID != a.ID || pg.List[1].ViewCount != 3 {
			t.Fatalf("client list: %+v", pg)
		}
		if pg := list("?tenant_slug=default"); pg.Pagination.Total != 2 {
			t.Fatalf("tenant_slug: %+v", pg)
		}
		if pg := list("?tenant_slug=nope"); pg.Pagination.Total != 0 || pg.List == nil {
			t.Fatalf("unknown tenant_slug: %+v", pg)
		}
		if pg := list("?tenant_id=" + itoa(tid)); pg.Pagination.Total != 2 {
			t.Fatalf("tenant_id: %+v", pg)
		}
		if pg := list("?tenant_id=" + itoa(tid+100)); pg.Pagination.Total != 0 {
			t.Fatalf("other tenant_id: %+v", pg)
		}
		for kw, want := range map[string]int64{"handbook": a.ID, "api-ref": b.ID, "REFERENCE": b.ID} {
			if pg := list("?keyword=" + kw); pg.Pagination.Total != 1 || pg.List[0].ID != want {
				t.Fatalf("keyword %s: %+v", kw, pg)
			}
		}
		if pg := list("?size=1&page=2"); pg.Pagination.Total != 2 || len(pg.List) != 1 || pg.List[0].ID != a.ID {
			t.Fatalf("paging: %+v", pg)
		}
		h.must(422, "GET", clientSites+"?tenant_id=abc", nil, "")
	})
}

func TestClientSiteCache(t *testing.T) {
	eachDialect(t, clientSiteCacheCase)
	// The same with the Redis backend (REDIS_URL), which cache:stats names.
	t.Run("postgres+redis", func(t *testing.T) {
		h := newHarness(t, "postgres", map[string]string{"REDIS_URL": redisURL()})
		var st map[string]any
		h.must(200, "GET", "/admin/api/v1/cache:stats", nil, h.admin).into(t, &st)
		if st["backend"] != "redis" {
			t.Fatalf("cache:stats %v", st)
		}
		clientSiteCacheCase(t, h)
	})
}

// redisURL is the Redis the tests use (REDIS_URL, or the local default).
func redisURL() string {
	if u := os.Getenv("REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

func clientSiteCacheCase(t *testing.T, h *harness) {
	{
		ctx := context.Background()
		s := h.sitesNew(map[string]any{"name": "Cached", "slug": "cached", "domain": "cached.example.com"})
		hits := func() int64 {
			st, err := h.d.Cache.Stats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return st.Hits
		}
		paths := []string{clientSites + "/" + itoa(s.ID), clientSites + ":bySlug/cached", clientSites + ":byDomain/cached.example.com"}
		for _, p := range paths {
			first := h.must(200, "GET", p, nil, "")
			h0 := hits()
			second := h.must(200, "GET", p, nil, "")
			if hits() != h0+1 {
				t.Fatalf("%s: second read was not a cache hit", p)
			}
			if string(first.Raw) != string(second.Raw) || !strings.HasPrefix(second.Header.Get("Content-Type"), "application/json") {
				t.Fatalf("%s: cached body differs: %s vs %s", p, first.Raw, second.Raw)
			}
		}
		// A hit makes no query: a row changed behind the API's back stays
		// invisible until the API invalidates the entry.
		if _, err := h.d.DB.NewUpdate().Model((*models.Site)(nil)).Set("name = ?", "Sneaky").Where("id = ?", s.ID).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		var cs ClientSite
		h.must(200, "GET", paths[0], nil, "").into(t, &cs)
		if cs.Name != "Cached" {
			t.Fatalf("hit read the database: %+v", cs)
		}
		// The language of the envelope is part of the key.
		zh := h.must(200, "GET", paths[0], nil, "", "Accept-Language", "zh-CN")
		if zh.Msg != "成功" {
			t.Fatalf("zh envelope: %s", zh.Raw)
		}

		// An admin update is visible on the very next read of every lookup,
		// and the old slug and domain stop resolving.
		h.must(200, "PUT", adminSites+"/"+itoa(s.ID), map[string]any{"name": "Renamed", "slug": "renamed", "domain": "renamed.example.com"}, h.admin)
		h.must(200, "GET", paths[0], nil, "").into(t, &cs)
		if cs.Name != "Renamed" || cs.Slug != "renamed" {
			t.Fatalf("stale after update: %+v", cs)
		}
		if r := h.must(200, "GET", paths[0], nil, "", "Accept-Language", "zh"); !strings.Contains(string(r.Raw), "Renamed") {
			t.Fatalf("stale zh variant: %s", r.Raw)
		}
		h.must(404, "GET", paths[1], nil, "")
		h.must(404, "GET", paths[2], nil, "")
		h.must(200, "GET", clientSites+":bySlug/renamed", nil, "").into(t, &cs)
		h.must(200, "GET", clientSites+":byDomain/renamed.example.com", nil, "").into(t, &cs)
		if cs.Name != "Renamed" {
			t.Fatalf("new domain: %+v", cs)
		}
		// Deactivation hides it at once; so does a delete.
		h.must(200, "PUT", adminSites+"/"+itoa(s.ID), map[string]any{"status": "inactive"}, h.admin)
		h.must(404, "GET", paths[0], nil, "")
		h.must(404, "GET", clientSites+":bySlug/renamed", nil, "")
		h.must(200, "PUT", adminSites+"/"+itoa(s.ID), map[string]any{"status": "active"}, h.admin)
		h.must(200, "GET", clientSites+":byDomain/renamed.example.com", nil, "")
		h.must(200, "DELETE", adminSites+"/"+itoa(s.ID), nil, h.admin)
		h.must(404, "GET", clientSites+":byDomain/renamed.example.com", nil, "")
		h.must(404, "GET", paths[0], nil, "")
	}
}

func TestSiteDeleteCascade(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		a := h.sitesNew(map[string]any{"name": "Doomed"})
		b := h.sitesNew(map[string]any{"name": "Survivor"})
		h.userToken(models.RoleEditor, a.ID, b.ID) // user_sites rows on both sites
		now := time.Now().UTC()
		seed := func(siteID int64) string {
			col := &models.Collection{TenantID: a.TenantID, SiteID: siteID, Title: "c", CreatedAt: now, UpdatedAt: now}
			doc := &models.Document{TenantID: a.TenantID, SiteID: siteID, Title: "d", CreatedAt: now, UpdatedAt: now}
			thread := fmt.Sprintf("th-%d", siteID)
			sid := siteID
			for _, m := range []any{col, doc,
				&models.ChatSession{ThreadID: thread, TenantID: a.TenantID, SiteID: &sid, MemberID: "m", CreatedAt: now, UpdatedAt: now},
				&models.ChatMessage{ThreadID: thread, ChatMessageID: thread + "-m", Role: "user", Content: "q", CreatedAt: now},
				&models.ToolResult{ToolCallID: thread + "-call", ThreadID: thread, Content: "{}", CreatedAt: now},
				&models.SiteAPIKey{SiteID: siteID, Prefix: "p", KeyHash: thread + "-key", CreatedAt: now},
			} {
				if _, err := h.d.DB.NewInsert().Model(m).Exec(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := h.d.DB.NewInsert().Model(&models.ViewEvent{SiteID: siteID, DocumentID: doc.ID, CreatedAt: now}).Exec(ctx); err != nil {
				t.Fatal(err)
			}
			return thread
		}
		ta, tb := seed(a.ID), seed(b.ID)
		count := func(model any, where string, arg any) int {
			n, err := h.d.DB.NewSelect().Model(model).Where(where, arg).Count(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return int(n)
		}
		counts := func(siteID int64, thread string) []int {
			return []int{
				count((*models.Site)(nil), "id = ?", siteID),
				count((*models.Document)(nil), "site_id = ?", siteID),
				count((*models.Collection)(nil), "site_id = ?", siteID),
				count((*models.ViewEvent)(nil), "site_id = ?", siteID),
				count((*models.ChatSession)(nil), "site_id = ?", siteID),
				count((*models.ChatMessage)(nil), "thread_id = ?", thread),
				count((*models.ToolResult)(nil), "thread_id = ?", thread),
				count((*models.SiteAPIKey)(nil), "site_id = ?", siteID),
				count((*models.UserSite)(nil), "site_id = ?", siteID),
			}
		}
		if got := fmt.Sprint(counts(a.ID, ta)); got != "[1 1 1 1 1 1 1 1 1]" {
			t.Fatalf("seed: %s", got)
		}
		var msg Message
		h.must(200, "DELETE", adminSites+"/"+itoa(a.ID), nil, h.admin).into(t, &msg)
		if got := fmt.Sprint(counts(a.ID, ta)); got != "[0 0 0 0 0 0 0 0 0]" {
			t.Fatalf("after delete (site, documents, collections, view_events, sessions, messages, tool_results, api keys, user_sites): %s", got)
		}
		if got := fmt.Sprint(counts(b.ID, tb)); got != "[1 1 1 1 1 1 1 1 1]" {
			t.Fatalf("other site touched: %s", got)
		}
	})
}

func TestSlugify(t *testing.T) {
	for in, want := range map[string]string{
		"Hello World":        "hello-world",
		"  --Product  Docs!": "product-docs",
		"v2.0 API (beta)":    "v2-0-api-beta",
		"文档":                 "",
		"Café au lait":       "caf-au-lait",
	} {
		if got := slugify(in); got != want {
			t.Errorf("slugify(%q) = %q, want %q", in, got, want)
		}
	}
	if got := slugify(strings.Repeat("ab ", 200)); len(got) > 200 {
		t.Errorf("slug too long: %d", len(got))
	}
}

// TestClientTenantFilters sends every tenant filter (tenant_id, tenant_slug,
// both, in agreement or not, unknown) to every client read that takes one.
// Single reads of a site of the default tenant answer 200 when the filter
// admits that tenant and 404 otherwise; lists hold what the filter admits
// (an unknown slug or a disagreement gives an empty list). Site details are
// read twice, so the cached body is checked too.
func TestClientTenantFilters(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		alpha := kbSite(h, "Alpha")
		beta := kbSite(h, "Beta")
		acme := kbTenant(h, "acme")
		h.setSite(beta.ID, "tenant_id = ?", acme.ID)
		h.setSite(alpha.ID, "domain = ?", "alpha.example.com")
		def := alpha.TenantID
		docs := map[int64]DocumentResponse{}
		for _, site := range []int64{alpha.ID, beta.ID} {
			col := kbCollection(h, site, nil, "Guide")
			docs[site] = kbDocument(h, map[string]any{"title": fmt.Sprint("doc-", site), "site_id": site,
				"collection_id": col.ID, "status": "published"})
		}
		t.Cleanup(func() { _ = h.s.CloseViews(context.Background()) })
		a, b := fmt.Sprint("doc-", alpha.ID), fmt.Sprint("doc-", beta.ID)
		for _, tc := range []struct {
			query        string
			alphaVisible bool
			docs, sites  string
		}{
			{"", true, a + " " + b, "Alpha Beta"},
			{fmt.Sprintf("tenant_id=%d", def), true, a, "Alpha"},
			{"tenant_slug=default", true, a, "Alpha"},
			{fmt.Sprintf("tenant_id=%d&tenant_slug=default", def), true, a, "Alpha"},
			{"tenant_slug=%20default%20", true, a, "Alpha"},
			{"tenant_slug=acme", false, b, "Beta"},
			{fmt.Sprintf("tenant_id=%d", acme.ID), false, b, "Beta"},
			{fmt.Sprintf("tenant_id=%d&tenant_slug=acme", acme.ID), false, b, "Beta"},
			{fmt.Sprintf("tenant_id=%d&tenant_slug=acme", def), false, "", ""},
			{fmt.Sprintf("tenant_id=%d&tenant_slug=default", acme.ID), false, "", ""},
			{"tenant_slug=nope", false, "", ""},
			{"tenant_id=999999", false, "", ""},
		} {
			want := 404
			if tc.alphaVisible {
				want = 200
			}
			for _, path := range []string{
				fmt.Sprintf("/documents/%d", docs[alpha.ID].ID),
				fmt.Sprintf("/collections:tree?site_id=%d&include_documents=true", alpha.ID),
				"/sites:bySlug/alpha", "/sites:bySlug/alpha", fmt.Sprintf("/sites/%d", alpha.ID),
				"/sites:byDomain/alpha.example.com", "/client/sites/alpha/access-status",
			} {
				sep := "?"
				if strings.Contains(path, "?") {
					sep = "&"
				}
				if r := h.do("GET", clientPath+path+sep+tc.query, nil, ""); r.Status != want || r.Code != 0 && r.Code != r.Status {
					t.Errorf("%s%s%s: %d, want %d: %s", path, sep, tc.query, r.Status, want, r.Raw)
				}
			}
			docTitles, _ := kbList(h, clientPath+"/documents?"+tc.query, "")
			sort.Strings(docTitles)
			if got := strings.Join(docTitles, " "); got != tc.docs {
				t.Errorf("documents?%s: %q, want %q", tc.query, got, tc.docs)
			}
			var sites Page[ClientSite]
			h.must(200, "GET", clientPath+"/sites?"+tc.query, nil, "").into(t, &sites)
			var names []string
			for _, s := range sites.List {
				names = append(names, s.Name)
			}
			sort.Strings(names)
			if got := strings.Join(names, " "); got != tc.sites || sites.List == nil {
				t.Errorf("sites?%s: %q, want %q", tc.query, got, tc.sites)
			}
		}
		// The filter holds on the other tenant's site as well.
		h.must(200, "GET", fmt.Sprintf("%s/documents/%d?tenant_slug=acme", clientPath, docs[beta.ID].ID), nil, "")
		h.must(404, "GET", fmt.Sprintf("%s/documents/%d?tenant_slug=default", clientPath, docs[beta.ID].ID), nil, "")
		h.must(200, "GET", fmt.Sprintf("%s/collections:tree?site_id=%d&tenant_id=%d", clientPath, beta.ID, acme.ID), nil, "")
		h.must(404, "GET", fmt.Sprintf("%s/collections:tree?site_id=%d&tenant_id=%d", clientPath, beta.ID, def), nil, "")
		// Bad values are 422 everywhere.
		for _, path := range []string{"/documents?", "/documents/1?", "/collections:tree?site_id=1&", "/sites:bySlug/alpha?", "/sites?"} {
			for _, q := range []string{"tenant_id=abc", "tenant_id=-1", "tenant_slug=" + strings.Repeat("s", 201), "tenant_slug=a%00"} {
				if r := h.do("GET", clientPath+path+q, nil, ""); r.Status != 422 {
					t.Errorf("%s%s: %d, want 422", path, q, r.Status)
				}
			}
		}
		// A refused read counted no view.
		if err := h.s.FlushViews(context.Background()); err != nil {
			t.Fatal(err)
		}
		row, _ := h.d.DB.GetDocument(context.Background(), docs[beta.ID].ID)
		if row.Views != 1 {
			t.Fatalf("views of the other tenant's document: %d, want 1", row.Views)
		}
		// The site list counts that view (once the list cache has let go).
		h.s.cache.Lists.Purge()
		var acmeSites Page[ClientSite]
		h.must(200, "GET", clientPath+"/sites?tenant_slug=acme", nil, "").into(t, &acmeSites)
		found := false
		for _, st := range acmeSites.List {
			if st.ID == beta.ID {
				found = true
				if st.ViewCount != 1 {
					t.Errorf("view_count of %s: %d, want 1", st.Name, st.ViewCount)
				}
			}
		}
		if !found {
			t.Errorf("the acme site list lacks %s: %+v", beta.Name, acmeSites.List)
		}
	})
}
