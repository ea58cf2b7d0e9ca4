package api

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/lorekb/lore/internal/blob"
	"github.com/lorekb/lore/models"
)

const matrixStart, matrixEnd = "<!-- role-matrix:start -->\n", "<!-- role-matrix:end -->"

// TestRoleMatrixIsCurrent keeps docs/roles.md's role matrix equal to the
// one generated from the routes. UPDATE_ROLE_MATRIX=1 rewrites it.
func TestRoleMatrixIsCurrent(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	want := RoleMatrix(h.s.Routes())
	path := filepath.Join("..", "docs", "roles.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	i, j := strings.Index(readme, matrixStart), strings.Index(readme, matrixEnd)
	if i < 0 || j < i {
		t.Fatal("docs/roles.md has no role-matrix markers")
	}
	got := readme[i+len(matrixStart) : j]
	if got != want {
		if os.Getenv("UPDATE_ROLE_MATRIX") == "1" {
			if err := os.WriteFile(path, []byte(readme[:i+len(matrixStart)]+want+readme[j:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Fatalf("docs/roles.md role matrix is stale; run UPDATE_ROLE_MATRIX=1 go test ./api -run TestRoleMatrix\nwant:\n%s", want)
	}
}

var pathParam = regexp.MustCompile(`\{[a-z_]+\+?\}`)

// matrixSite is a site of the role matrix fixture with one resource of each
// kind the admin routes address. A missing site names ids that do not exist
// (nothing is created for it): what a caller gets for it is what a resource
// outside its scope must look like.
type matrixSite struct {
	id, tenant   int64
	slug, domain string
	doc, col     int64
	key          int64
	file         string
	ds           int64 // an internal data source of the site
	user         int64 // a user of the site's tenant no caller is
	missing      bool
}

// matrixCaller is a user the role matrix calls the routes as.
type matrixCaller struct {
	role     string
	level    Perm
	token    string
	id       int64
	job      string     // a job this user started on its site
	own      matrixSite // the site it manages
	platform bool
}

// matrix builds the requests of the role matrix: every route addressed at a
// resource of a given site, for a given caller.
type matrix struct {
	h     *harness
	store blob.Store
	n     int // makes fresh names unique
}

func (m *matrix) fresh(prefix string) string {
	m.n++
	return fmt.Sprintf("%s%d", prefix, m.n)
}

func (m *matrix) apiKey(siteID int64) int64 {
	var k APIKeyCreated
	m.h.must(201, "POST", fmt.Sprintf("%s/sites/%d/api-keys", adminPath, siteID), map[string]any{"name": "k"}, m.h.admin).into(m.h.t, &k)
	return k.ID
}

func (m *matrix) file(siteID int64) string {
	name := fmt.Sprintf("sites/%d/%s.txt", siteID, m.fresh("f"))
	if _, err := m.store.Put(context.Background(), name, strings.NewReader("matrix"), 6, "text/plain", nil); err != nil {
		m.h.t.Fatal(err)
	}
	return name
}

// newSite creates a site of the tenant.
func (m *matrix) newSite(name string, tenant int64) *models.Site {
	st := kbSite(m.h, name)
	if st.TenantID != tenant {
		m.h.setSite(st.ID, "tenant_id = ?", tenant)
		st.TenantID = tenant
	}
	return st
}

func (m *matrix) site(name string, tenant int64) matrixSite {
	h := m.h
	st := m.newSite(name, tenant)
	h.setSite(st.ID, "domain = ?", st.Slug+".example.com")
	col := kbCollection(h, st.ID, nil, "C")
	doc := kbDocument(h, map[string]any{"title": "D", "site_id": st.ID, "collection_id": col.ID})
	_, user := m.user(models.RoleEditor, tenant)
	return matrixSite{id: st.ID, tenant: tenant, slug: st.Slug, domain: st.Slug + ".example.com", doc: doc.ID, col: col.ID,
		key: m.apiKey(st.ID), file: m.file(st.ID), ds: m.dataSource(st.ID, tenant), user: user}
}

// missingSite names a site, and resources of it, that do not exist.
func missingSite() matrixSite {
	const id = 987654
	return matrixSite{id: id, tenant: 987, slug: "no-such-site", domain: "no-such-site.example.com", doc: id + 1, col: id + 2,
		key: id + 3, file: fmt.Sprintf("sites/%d/missing.txt", id), ds: id + 4, user: id + 5, missing: true}
}

// dataSource creates an internal data source of the site with one file.
func (m *matrix) dataSource(siteID, tenant int64) int64 {
	ds := &models.DataSource{TenantID: tenant, SiteID: &siteID, Name: m.fresh("ds"), Type: models.DataSourceInternal, Config: "{}"}
	if err := m.h.d.DB.SaveDataSource(context.Background(), ds); err != nil {
		m.h.t.Fatal(err)
	}
	name := fmt.Sprintf("sites/%d/datasources/%d/a.md", siteID, ds.ID)
	if _, err := m.store.Put(context.Background(), name, strings.NewReader("# a"), 3, "text/markdown", nil); err != nil {
		m.h.t.Fatal(err)
	}
	return ds.ID
}

// job records a job of the site, started by user by.
func (m *matrix) job(by int64, s matrixSite) string {
	id := m.fresh("matrix-job-")
	if err := m.h.d.DB.SaveJob(context.Background(), &models.Job{ID: id, Kind: JobVectorizeDocument, WorkflowID: id,
		Subject: "{}", CreatedBy: by, SiteID: s.id, TenantID: s.tenant}); err != nil {
		m.h.t.Fatal(err)
	}
	return id
}

// user creates an active user of the tenant (see harness.tenantUser).
func (m *matrix) user(role string, tenant int64, sites ...int64) (string, int64) {
	return m.h.tenantUser(role, tenant, sites...)
}

func (m *matrix) caller(role string, level Perm, own matrixSite) matrixCaller {
	var sites []int64
	if role != models.RoleAdmin {
		sites = []int64{own.id}
	}
	tok, id := m.user(role, own.tenant, sites...)
	return matrixCaller{role: role, level: level, token: tok, id: id, job: m.job(id, own), own: own}
}

// matrixCall is one request of the matrix. list, when set, checks a list
// route's answer: such routes limit callers by leaving out what they may
// not see, not by refusing.
type matrixCall struct {
	method, path string
	body         any
	headers      []string
	list         func(t *testing.T, r *resp, want bool)
}

// call addresses route r at site s for caller who. User routes address a
// user of the site's tenant (the caller itself for own-account routes when
// own); job routes the caller's job (own), the job given, or a missing one
// on a missing site. A DELETE of an existing site's resource gets a fresh
// one, so that the fixture stays whole.
func (m *matrix) call(r Route, who matrixCaller, s matrixSite, own bool, job string) matrixCall {
	h := m.h
	key := r.Method + " " + r.Path
	del := r.Method == http.MethodDelete && !s.missing
	id := s.id
	switch {
	case strings.HasPrefix(r.Path, "/users/"):
		id = s.user
		switch {
		case own && r.Perm < AdminOnly:
			id = who.id
		case del:
			_, id = m.user(models.RoleEditor, s.tenant)
		}
	case strings.HasPrefix(r.Path, "/jobs/") || strings.HasPrefix(r.Path, "/tasks/"):
		switch {
		case own:
			job = who.job
		case s.missing:
			job = "matrix-no-such-job"
		}
		return matrixCall{method: r.Method, path: adminPath + pathParam.ReplaceAllString(r.Path, job)}
	case strings.HasPrefix(r.Path, "/documents/"):
		id = s.doc
		if del {
			id = kbDocument(h, map[string]any{"title": "gone", "site_id": s.id}).ID
		}
	case strings.HasPrefix(r.Path, "/data-sources/"):
		id = s.ds
		if key == "DELETE /data-sources/{id}" && del {
			id = m.dataSource(s.id, s.tenant)
		}
	case strings.HasPrefix(r.Path, "/collections/"):
		id = s.col
		if del {
			id = kbCollection(h, s.id, nil, "gone").ID
		}
	case key == "DELETE /sites/{id}" && del:
		id = m.newSite(m.fresh("gone"), s.tenant).ID
	case key == "DELETE /tenants/{id}":
		t := &models.Tenant{Name: "gone", Slug: m.fresh("gone-"), Plan: "{}", Status: "active"}
		if err := h.d.DB.CreateTenant(context.Background(), t); err != nil {
			h.t.Fatal(err)
		}
		id = t.ID
	}
	keyID, file := s.key, s.file
	if del {
		if strings.Contains(r.Path, "{key_id}") {
			keyID = m.apiKey(s.id)
		}
		if strings.Contains(r.Path, "{object_name+}") {
			file = m.file(s.id)
		}
	}
	path := strings.NewReplacer("{id}", itoa(id), "{key_id}", itoa(keyID), "{object_name+}", file,
		"{domain}", s.domain, "{slug}", s.slug, "{config_key}", "matrix-none", "{thread_id}", "matrix-none", "{rev}", "1").Replace(r.Path)
	c := matrixCall{method: r.Method, path: adminPath + path}
	siteQuery := fmt.Sprintf("?site_id=%d", s.id)
	switch key {
	case "GET /documents", "GET /collections", "GET /collections:tree", "GET /stats:siteStats", "GET /feedback/list", "GET /feedback/stats", "GET /jobs", "GET /tasks":
		c.path += siteQuery
	case "GET /tenants/current":
		// A tenant admin's, site_admin's or editor's choice of tenant is
		// ignored: always its own.
		c.headers = []string{selectedTenantHeader, "999"}
		c.list = func(t *testing.T, r *resp, _ bool) {
			t.Helper()
			var tn TenantResponse
			r.into(t, &tn)
			if want := tokenUser(h, who.token).TenantID; !who.platform && tn.ID != want {
				t.Errorf("GET /tenants/current as %s: tenant %d, want its own %d", who.role, tn.ID, want)
			}
		}
	case "POST /tenants":
		slug := m.fresh("tenant-")
		c.body = map[string]any{"name": slug, "slug": slug, "admin_email": slug + "@example.com", "admin_password": "12345678"}
	case "PATCH /sites/{id}/ee-config":
		c.body = map[string]any{"access": map[string]any{"is_public": true}, "api_bot": map[string]any{"timeout": 40}}
	case "GET /sites":
		c.path += "?size=1000"
		c.list = listCheck(key, who, s.id, func(t *testing.T, r *resp) []int64 {
			var pg Page[SiteResponse]
			r.into(t, &pg)
			return ids(pg.List, func(x SiteResponse) int64 { return x.ID })
		})
	case "GET /users":
		c.path += "?size=100"
		c.list = listCheck(key, who, s.user, func(t *testing.T, r *resp) []int64 {
			var pg Page[UserResponse]
			r.into(t, &pg)
			return ids(pg.List, func(x UserResponse) int64 { return x.ID })
		})
	case "GET /files:list", "GET /files":
		c.path += fmt.Sprintf("?prefix=sites/%d/", s.id)
		c.list = func(t *testing.T, r *resp, want bool) {
			t.Helper()
			if found := strings.Contains(string(r.Data), s.file); found != want {
				t.Errorf("%s as %s: %s listed %v, want %v", key, who.role, s.file, found, want)
			}
		}
	case "POST /files:upload", "POST /files:batchUpload":
		field := "file"
		if strings.Contains(key, "batch") {
			field = "files"
		}
		b, ct := multipartBody(h.t, []upPart{{field: field, filename: "m.txt", content: []byte("matrix")}}, nil)
		c.path += fmt.Sprintf("?folder=sites/%d", s.id)
		c.body, c.headers = b, []string{"Content-Type", ct}
	case "GET /data-sources":
		c.list = listCheck(key, who, s.ds, func(t *testing.T, r *resp) []int64 {
			var list []DataSource
			r.into(t, &list)
			return ids(list, func(x DataSource) int64 { return x.ID })
		})
	case "POST /data-sources":
		c.body = map[string]any{"name": "m", "type": "internal", "site_id": s.id}
	case "PUT /data-sources/{id}":
		c.body = map[string]any{"name": "m"}
	case "DELETE /data-sources/{id}/files":
		c.path += "?key=" + m.fresh("missing") + ".md" // 404 when allowed
	case "POST /data-sources/{id}/import":
		c.body = map[string]any{"keys": []string{"a.md"}, "site_id": s.id}
	case "POST /data-sources/{id}/upload":
		b, ct := multipartBody(h.t, []upPart{{field: "file", filename: m.fresh("u") + ".md", content: []byte("# u")}}, nil)
		c.body, c.headers = b, []string{"Content-Type", ct}
	case "POST /documents:import":
		b, ct := multipartBody(h.t, []upPart{{field: "files", filename: "m.md", content: []byte("# m\n")}},
			map[string]string{"site_id": itoa(s.id)})
		c.body, c.headers = b, []string{"Content-Type", ct}
	case "POST /documents", "POST /collections":
		c.body = map[string]any{"title": "m", "site_id": s.id}
	case "POST /documents:reindex":
		c.body = map[string]any{"site_id": s.id}
	case "POST /documents:batchVectorize":
		c.body = map[string]any{"document_ids": []int64{s.doc}}
	case "POST /documents:retrieve":
		c.body = map[string]any{"site_id": s.id, "query": "matrix", "collection_id": s.col}
	case "POST /documents:aiGenerate":
		c.body = map[string]any{"content": "# Matrix\n\nA matrix test.", "fields": []string{"summary", "tags"}}
	case "POST /system-configs/ai-config/test-connection":
		c.body = map[string]any{}
	case "PUT /documents/{id}":
		c.body = map[string]any{"summary": "m"}
	case "PUT /collections/{id}":
		c.body = map[string]any{"title": "m"}
	case "POST /collections/{id}:move":
		c.body = map[string]any{"target_position": 0}
	case "PUT /sites/{id}":
		c.body = map[string]any{"description": "m"}
	case "PUT /sites/{id}/password":
		c.body = map[string]any{"password": "matrix-pw"}
	case "POST /sites/{id}/api-keys":
		c.body = map[string]any{"name": "m"}
	case "POST /sites":
		c.body = map[string]any{"name": m.fresh("New ")}
	case "POST /users":
		c.body = map[string]any{"name": "u", "email": m.fresh("new") + "@example.com", "password": "12345678"}
	case "POST /users:invite":
		c.body = map[string]any{"email": m.fresh("invited") + "@example.com"}
	case "PUT /users/{id}":
		c.body = map[string]any{"name": "renamed"}
	case "PUT /users/{id}/password":
		// A wrong old password: the call gets past the ownership check (400)
		// without revoking the caller's token.
		c.body = map[string]any{"old_password": "not-the-password", "new_password": "12345678"}
	}
	return c
}

// ids lists the ids of a page's items.
func ids[T any](items []T, id func(T) int64) []int64 {
	out := make([]int64, len(items))
	for i, x := range items {
		out[i] = id(x)
	}
	return out
}

// listCheck checks that a list answer holds the id (or leaves it out).
func listCheck(route string, who matrixCaller, id int64, listed func(*testing.T, *resp) []int64) func(*testing.T, *resp, bool) {
	return func(t *testing.T, r *resp, want bool) {
		t.Helper()
		if found := slices.Contains(listed(t, r), id); found != want {
			t.Errorf("%s as %s: %d listed %v, want %v", route, who.role, id, found, want)
		}
	}
}

func (m *matrix) do(c matrixCall, token string) *resp {
	m.h.t.Helper()
	return m.h.do(c.method, c.path, c.body, token, c.headers...)
}

// allowed reports a call the caller may make: neither 401 nor 403, and no
// server error (the workflow engine is the fake, which knows no job).
func allowed(r *resp) bool { return r.Status != 401 && r.Status != 403 && r.Status < 500 }

var digits = regexp.MustCompile(`[0-9]+`)

// sameAnswer reports whether two refusals are the same but for the ids in
// their messages.
func sameAnswer(a, b *resp) bool {
	return a.Status == b.Status && a.Code == b.Code && digits.ReplaceAllString(a.Msg, "#") == digits.ReplaceAllString(b.Msg, "#")
}

// TestEveryAdminRouteEnforcesRoles calls every admin route, on both dialects,
// as nobody (401) and as every role: editor, site_admin (both of tenant 1),
// a tenant admin (an admin of a second tenant) and the platform admin (an
// admin of the platform tenant):
//   - a role below the route's least role gets 403 (tenant admins on the
//     platform-only routes: tenants, system-info, cache);
//   - every role the route admits may make the call (neither 401 nor 403,
//     nor a 5xx) on a resource of a site it manages, with a body that passes
//     the site check; the platform admin on any tenant's site too;
//   - a resource outside the caller's scope (a site_admin's or editor's
//     unassigned site, a tenant admin's other tenant, another user's job,
//     another tenant's user) is answered exactly as the same call about a
//     resource that does not exist (same status, code and message but for
//     ids): no 403 that would tell a foreign id from a missing one. The
//     lists (GET /sites, /users, /files, /data-sources) answer 200 and leave
//     the foreign rows out. Own-account routes stay 403 for other users'
//     ids of a site_admin or editor, existing or not.
func TestEveryAdminRouteEnforcesRoles(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		h.d.Temporal = &fakeTemporal{}
		store, err := h.s.blobStore()
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		t1, _ := h.d.DB.EnsureDefaultTenant(ctx)
		t2 := kbTenant(h, "second-tenant").ID
		m := &matrix{h: h, store: store}
		mine, other, theirs, missing := m.site("Mine", t1), m.site("Other", t1), m.site("Theirs", t2), missingSite()
		adminID := tokenUser(h, h.admin).ID
		adminJob := m.job(adminID, other)
		platform := matrixCaller{role: "platform admin", level: PlatformOnly, token: h.admin, id: adminID, job: adminJob, own: mine, platform: true}
		tenantAdmin := m.caller(models.RoleAdmin, AdminOnly, theirs)
		tenantAdmin.role = "tenant admin"
		callers := []matrixCaller{
			m.caller(models.RoleEditor, EditorUp, mine),
			m.caller(models.RoleSiteAdmin, SiteAdminUp, mine),
			tenantAdmin,
			platform,
		}
		n := 0
		for _, r := range h.s.Routes() {
			if r.Surface != Admin || r.Perm == Public {
				continue
			}
			n++
			scope := RouteScope(r)
			if res := m.do(m.call(r, platform, mine, true, adminJob), ""); res.Status != http.StatusUnauthorized || res.Code != 401 {
				t.Errorf("%s %s as nobody: %d %s", r.Method, r.Path, res.Status, res.Raw)
			}
			for _, who := range callers {
				c := m.call(r, who, who.own, true, adminJob)
				res := m.do(c, who.token)
				if who.level < r.Perm {
					if res.Status != http.StatusForbidden || res.Code != 403 {
						t.Errorf("%s %s as %s: %d, want 403: %s", r.Method, r.Path, who.role, res.Status, res.Raw)
					}
					continue
				}
				if !allowed(res) {
					t.Errorf("%s %s as %s on its own: %d %s", r.Method, r.Path, who.role, res.Status, res.Raw)
				} else if c.list != nil {
					c.list(t, res, true)
				}
				if scope == ScopeNone || scope == ScopeOwnTenant && c.list == nil {
					continue
				}
				if who.platform {
					if scope != ScopeAssignedSites {
						continue
					}
					// Every tenant's sites are the platform admin's.
					c = m.call(r, who, theirs, false, adminJob)
					if res := m.do(c, who.token); !allowed(res) {
						t.Errorf("%s %s as platform admin on another tenant's site: %d %s", r.Method, r.Path, res.Status, res.Raw)
					} else if c.list != nil {
						c.list(t, res, true)
					}
					continue
				}
				c = m.call(r, who, other, false, adminJob)
				res = m.do(c, who.token)
				if c.list != nil {
					if res.Status != http.StatusOK {
						t.Errorf("%s %s as %s on another site: %d, want 200 without it: %s", r.Method, r.Path, who.role, res.Status, res.Raw)
					} else {
						c.list(t, res, false)
					}
					continue
				}
				none := m.do(m.call(r, who, missing, false, adminJob), who.token)
				if !sameAnswer(res, none) || (res.Status == http.StatusForbidden && scope != ScopeOwnAccount) || res.Status < 400 {
					t.Errorf("%s %s as %s outside its scope: %d %s; a missing one: %d %s", r.Method, r.Path, who.role,
						res.Status, res.Raw, none.Status, none.Raw)
				}
			}
		}
		if n < 30 {
			t.Fatalf("only %d admin routes", n)
		}
	})
}

// TestTenantAdminsStayInTheirTenant: the first admin of a tenant created
// with POST /tenants is a tenant admin: it cannot manage tenants, create a
// user or a site in the platform tenant (answered as a missing tenant or
// site), list its users, nor read its ai-config; the platform admin can.
func TestTenantAdminsStayInTheirTenant(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	ctx := context.Background()
	t1, _ := h.d.DB.EnsureDefaultTenant(ctx)
	site := kbSite(h, "Platform")
	h.must(200, "PUT", adminPath+"/system-configs/ai-config", map[string]any{"chat": map[string]any{"provider": "openai",
		"model": "m", "base_url": "https://platform.example.com/v1", "api_key": "sk-tenant-one-key-123"}}, h.admin)
	var tn TenantResponse
	h.must(201, "POST", adminPath+"/tenants", map[string]any{"name": "Acme", "slug": "acme", "admin_email": "boss@acme.example.com",
		"admin_password": "acme-password-1"}, h.admin).into(t, &tn)
	var lr LoginResult
	h.must(200, "POST", adminPath+"/users:login", map[string]any{"email": "boss@acme.example.com", "password": "acme-password-1"}, "").into(t, &lr)
	boss := lr.Token

	for _, path := range []string{"/tenants", fmt.Sprintf("/tenants/%d", t1), "/system-info", "/cache:stats"} {
		if r := h.do("GET", adminPath+path, nil, boss); r.Status != 403 {
			t.Errorf("GET %s as a tenant admin: %d %s", path, r.Status, r.Raw)
		}
	}
	users := kbCount(h, (*models.User)(nil))
	for _, body := range []map[string]any{
		{"name": "x", "email": "x1@acme.example.com", "password": "12345678", "role": "admin", "tenant_id": t1},
		{"name": "x", "email": "x2@acme.example.com", "password": "12345678", "role": "site_admin", "managed_site_ids": []int64{site.ID}},
	} {
		r := h.do("POST", adminPath+"/users", body, boss)
		body["tenant_id"], body["managed_site_ids"] = 987654, []int64{987654}
		if body["role"] == "admin" {
			delete(body, "managed_site_ids")
		} else {
			delete(body, "tenant_id")
		}
		none := h.do("POST", adminPath+"/users", body, boss)
		if r.Status != 400 || !sameAnswer(r, none) {
			t.Errorf("user in tenant %d: %d %s; missing: %d %s", t1, r.Status, r.Raw, none.Status, none.Raw)
		}
	}
	if n := kbCount(h, (*models.User)(nil)); n != users {
		t.Fatalf("users created: %d → %d", users, n)
	}
	if r := h.do("POST", adminPath+"/sites", map[string]any{"name": "Sneaky", "tenant_id": t1}, boss); r.Status != 400 {
		t.Errorf("site in the platform tenant: %d %s", r.Status, r.Raw)
	}
	var pg Page[UserResponse]
	h.must(200, "GET", adminPath+"/users?size=100", nil, boss).into(t, &pg)
	if len(pg.List) != 1 || pg.List[0].Email != "boss@acme.example.com" {
		t.Errorf("tenant admin lists users %+v", pg.List)
	}
	if r := h.do("GET", adminPath+"/system-configs/ai-config", nil, boss); r.Status != 200 || strings.Contains(string(r.Raw), "sk-") {
		t.Errorf("tenant admin's ai-config: %d %s", r.Status, r.Raw)
	}
	// Its own site is its to manage.
	var st SiteResponse
	h.must(201, "POST", adminPath+"/sites", map[string]any{"name": "Acme docs"}, boss).into(t, &st)
	if st.TenantID != tn.ID {
		t.Fatalf("site of tenant %d, want %d", st.TenantID, tn.ID)
	}
	h.must(200, "GET", fmt.Sprintf("%s/sites/%d", adminPath, st.ID), nil, boss)
	if r := h.do("GET", fmt.Sprintf("%s/sites/%d", adminPath, site.ID), nil, boss); r.Status != 404 {
		t.Errorf("platform site as a tenant admin: %d %s", r.Status, r.Raw)
	}
	h.must(200, "GET", fmt.Sprintf("%s/sites/%d", adminPath, st.ID), nil, h.admin)
	h.must(200, "GET", adminPath+"/tenants", nil, h.admin)
}
