package api

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lorekb/lore/internal/blob"
	"github.com/lorekb/lore/models"
)

const matrixStart, matrixEnd = "<!-- role-matrix:start -->\n", "<!-- role-matrix:end -->"

// TestReadmeRoleMatrixIsCurrent keeps README's role matrix equal to the one
// generated from the routes. UPDATE_README=1 rewrites it.
func TestReadmeRoleMatrixIsCurrent(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	want := RoleMatrix(h.s.Routes())
	path := filepath.Join("..", "README.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	i, j := strings.Index(readme, matrixStart), strings.Index(readme, matrixEnd)
	if i < 0 || j < i {
		t.Fatal("README.md has no role-matrix markers")
	}
	got := readme[i+len(matrixStart) : j]
	if got != want {
		if os.Getenv("UPDATE_README") == "1" {
			if err := os.WriteFile(path, []byte(readme[:i+len(matrixStart)]+want+readme[j:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Fatalf("README role matrix is stale; run UPDATE_README=1 go test ./api -run TestReadmeRoleMatrix\nwant:\n%s", want)
	}
}

var pathParam = regexp.MustCompile(`\{[a-z_]+\+?\}`)

// matrixSite is a site of the role matrix fixture with one resource of each
// kind the admin routes address.
type matrixSite struct {
	id           int64
	slug, domain string
	doc, col     int64
	key          int64
	file         string
	ds           int64 // an internal data source of the site
}

// matrixCaller is a user the role matrix calls the routes as.
type matrixCaller struct {
	role  string
	level Perm
	token string
	id    int64
	job   string // a job this user started on its site
}

// matrix builds the requests of the role matrix: every route addressed at a
// resource of a given site, for a given caller.
type matrix struct {
	h      *harness
	store  blob.Store
	victim int64 // a user whose token the matrix does not use
	n      int   // makes fresh names unique
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

func (m *matrix) site(name string) matrixSite {
	h := m.h
	st := kbSite(h, name)
	kbSetSite(h, st.ID, "domain = ?", st.Slug+".example.com")
	col := kbCollection(h, st.ID, nil, "C")
	doc := kbDocument(h, map[string]any{"title": "D", "site_id": st.ID, "collection_id": col.ID})
	return matrixSite{id: st.ID, slug: st.Slug, domain: st.Slug + ".example.com", doc: doc.ID, col: col.ID,
		key: m.apiKey(st.ID), file: m.file(st.ID), ds: m.dataSource(st.ID)}
}

// dataSource creates an internal data source of the site with one file.
func (m *matrix) dataSource(siteID int64) int64 {
	ds := &models.DataSource{TenantID: 1, SiteID: &siteID, Name: m.fresh("ds"), Type: models.DataSourceInternal, Config: "{}"}
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
func (m *matrix) job(by, siteID int64) string {
	id := m.fresh("matrix-job-")
	if err := m.h.d.DB.SaveJob(context.Background(), &models.Job{ID: id, Kind: JobVectorizeDocument, WorkflowID: id,
		Subject: "{}", CreatedBy: by, SiteID: siteID}); err != nil {
		m.h.t.Fatal(err)
	}
	return id
}

func (m *matrix) caller(role string, level Perm, sites ...int64) matrixCaller {
	tok := m.h.userToken(role, sites...)
	u := tokenUser(m.h, tok)
	return matrixCaller{role: role, level: level, token: tok, id: u.ID, job: m.job(u.ID, sites[0])}
}

// matrixCall is one request of the matrix. list, when set, checks a list
// route's answer: such routes limit non-admins by leaving out what they may
// not see, not by refusing.
type matrixCall struct {
	method, path string
	body         any
	headers      []string
	list         func(t *testing.T, r *resp, want bool)
}

// call addresses route r at site s for caller who. Own-account routes
// address the caller itself (own) or the victim; job routes a job the caller
// started (own) or one the bootstrap admin started; admin-only user routes
// the victim. A DELETE gets a fresh resource, so that the fixture stays
// whole.
func (m *matrix) call(r Route, who matrixCaller, s matrixSite, own bool, adminJob string) matrixCall {
	h := m.h
	key := r.Method + " " + r.Path
	del := r.Method == http.MethodDelete
	id := s.id
	switch {
	case strings.HasPrefix(r.Path, "/users/"):
		id = m.victim
		switch {
		case own && r.Perm != AdminOnly:
			id = who.id
		case del:
			id = tokenUser(h, h.userToken(models.RoleEditor)).ID
		}
	case strings.HasPrefix(r.Path, "/jobs/") || strings.HasPrefix(r.Path, "/tasks/"):
		c := matrixCall{method: r.Method, path: adminPath + pathParam.ReplaceAllString(r.Path, adminJob)}
		if own {
			c.path = adminPath + pathParam.ReplaceAllString(r.Path, who.job)
		}
		return c
	case strings.HasPrefix(r.Path, "/documents/"):
		id = s.doc
		if del {
			id = kbDocument(h, map[string]any{"title": "gone", "site_id": s.id}).ID
		}
	case strings.HasPrefix(r.Path, "/data-sources/"):
		id = s.ds
		if key == "DELETE /data-sources/{id}" {
			id = m.dataSource(s.id)
		}
	case strings.HasPrefix(r.Path, "/collections/"):
		id = s.col
		if del {
			id = kbCollection(h, s.id, nil, "gone").ID
		}
	case key == "DELETE /sites/{id}":
		id = kbSite(h, m.fresh("gone")).ID
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
		"{domain}", s.domain, "{slug}", s.slug, "{config_key}", "matrix-none", "{thread_id}", "matrix-none").Replace(r.Path)
	c := matrixCall{method: r.Method, path: adminPath + path}
	siteQuery := fmt.Sprintf("?site_id=%d", s.id)
	switch key {
	case "GET /documents", "GET /collections", "GET /collections:tree", "GET /stats:siteStats", "GET /feedback/list", "GET /feedback/stats", "GET /jobs", "GET /tasks":
		c.path += siteQuery
	case "GET /tenants/current":
		// A non-admin's choice of tenant is ignored: always its own.
		c.headers = []string{selectedTenantHeader, "999"}
		c.list = func(t *testing.T, r *resp, _ bool) {
			t.Helper()
			var tn TenantResponse
			r.into(t, &tn)
			if want := tokenUser(h, who.token).TenantID; who.level != AdminOnly && tn.ID != want {
				t.Errorf("GET /tenants/current as %s: tenant %d, want its own %d", who.role, tn.ID, want)
			}
		}
	case "POST /tenants":
		slug := m.fresh("tenant-")
		c.body = map[string]any{"name": slug, "slug": slug, "admin_email": slug + "@example.com", "admin_password": "12345678"}
	case "PATCH /sites/{id}/ee-config":
		c.body = map[string]any{"access": map[string]any{"is_public": true}, "api_bot": map[string]any{"timeout": 40}}
	case "GET /sites":
		c.list = func(t *testing.T, r *resp, want bool) {
			t.Helper()
			var pg Page[SiteResponse]
			r.into(t, &pg)
			found := false
			for _, st := range pg.List {
				found = found || st.ID == s.id
			}
			if found != want {
				t.Errorf("GET /sites as %s: site %d listed %v, want %v", who.role, s.id, found, want)
			}
		}
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
		c.list = func(t *testing.T, r *resp, want bool) {
			t.Helper()
			var list []DataSource
			r.into(t, &list)
			found := false
			for _, d := range list {
				found = found || d.ID == s.ds
			}
			if found != want {
				t.Errorf("GET /data-sources as %s: data source %d listed %v, want %v", who.role, s.ds, found, want)
			}
		}
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

func (m *matrix) do(c matrixCall, token string) *resp {
	m.h.t.Helper()
	return m.h.do(c.method, c.path, c.body, token, c.headers...)
}

// allowed reports a call the caller may make: neither 401 nor 403, and no
// server error (the workflow engine is the fake, which knows no job).
func allowed(r *resp) bool { return r.Status != 401 && r.Status != 403 && r.Status < 500 }

// TestEveryAdminRouteEnforcesRoles calls every admin route, on both dialects,
// as nobody (401) and as every role:
//   - a role below the route's least role gets 403;
//   - admin, and a site_admin or editor the route admits, may make the call
//     (neither 401 nor 403, nor a 5xx) on a resource of a site assigned to
//     them (admins: of any site), with a body that passes the site check;
//   - a site_admin or editor gets 403 for the same call on a site not
//     assigned to them, another user's account or a job someone else
//     started. No handler hides such a resource as 404: the site-path routes
//     check the assignment before reading the site, so a missing and a
//     foreign site look the same (403). The lists (GET /sites, GET
//     /files:list) answer 200 and leave the foreign site's rows out.
func TestEveryAdminRouteEnforcesRoles(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		h.d.Temporal = &fakeTemporal{}
		store, err := h.s.blobStore()
		if err != nil {
			t.Fatal(err)
		}
		m := &matrix{h: h, store: store, victim: tokenUser(h, h.userToken(models.RoleEditor)).ID}
		mine, other := m.site("Mine"), m.site("Other")
		adminID := tokenUser(h, h.admin).ID
		adminJob := m.job(adminID, other.id)
		admin := matrixCaller{role: models.RoleAdmin, level: AdminOnly, token: h.admin, id: adminID, job: adminJob}
		callers := []matrixCaller{
			m.caller(models.RoleEditor, EditorUp, mine.id),
			m.caller(models.RoleSiteAdmin, SiteAdminUp, mine.id),
			admin,
		}
		n := 0
		for _, r := range h.s.Routes() {
			if r.Surface != Admin || r.Perm == Public {
				continue
			}
			n++
			scope := RouteScope(r)
			if res := m.do(m.call(r, admin, mine, true, adminJob), ""); res.Status != http.StatusUnauthorized || res.Code != 401 {
				t.Errorf("%s %s as nobody: %d %s", r.Method, r.Path, res.Status, res.Raw)
			}
			for _, who := range callers {
				c := m.call(r, who, mine, true, adminJob)
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
				if scope == ScopeNone || (who.level == AdminOnly && scope != ScopeAssignedSites) {
					continue
				}
				c = m.call(r, who, other, false, adminJob)
				res = m.do(c, who.token)
				switch {
				case who.level == AdminOnly:
					if !allowed(res) {
						t.Errorf("%s %s as admin on another site: %d %s", r.Method, r.Path, res.Status, res.Raw)
					}
				case c.list != nil:
					if res.Status != http.StatusOK {
						t.Errorf("%s %s as %s on another site: %d, want 200 without it: %s", r.Method, r.Path, who.role, res.Status, res.Raw)
					} else {
						c.list(t, res, false)
					}
				case res.Status != http.StatusForbidden || res.Code != 403:
					t.Errorf("%s %s as %s on another %s: %d, want 403: %s", r.Method, r.Path, who.role,
						map[string]string{ScopeAssignedSites: "site", ScopeOwnAccount: "user", ScopeOwnJobs: "user's job"}[scope],
						res.Status, res.Raw)
				}
			}
		}
		if n < 30 {
			t.Fatalf("only %d admin routes", n)
		}
	})
}
