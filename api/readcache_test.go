package api

import (
	"context"
	"strings"
	"testing"

	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/models"
)

// siteWritten tells the server's caches that the sites' rows were changed
// behind its back (tests that write rows directly), as the database does
// after a write through it.
func (h *harness) siteWritten(ids ...int64) {
	sites := make([]*models.Site, len(ids))
	for i, id := range ids {
		sites[i] = &models.Site{ID: id}
	}
	h.s.cache.Changed(context.Background(), db.Change{Sites: sites})
}

// Every write route that changes what a cached client read shows drops it
// at once (the database reports the write, internal/readcache drops the
// entries): the client site detail (by id, slug and domain, cached in the
// shared cache for ClientSiteCacheTTL), the document detail and the document
// list (cached for seconds). No handler invalidates anything itself.
func TestWritesThroughEachRouteDropTheCaches(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		var site struct {
			ID   int64  `json:"id"`
			Slug string `json:"slug"`
		}
		h.must(201, "POST", adminPath+"/sites", map[string]any{"name": "Cached", "slug": "cached", "domain": "cached.example.com"}, h.admin).into(t, &site)
		sid := itoa(site.ID)
		reads := []string{clientPath + "/sites/" + sid, clientPath + "/sites:bySlug/cached", clientPath + "/sites:byDomain/cached.example.com"}
		warm := func() {
			for _, p := range reads {
				h.must(200, "GET", p, nil, "")
				h.must(200, "GET", p, nil, "")
			}
		}
		shows := func(what string, want ...string) {
			t.Helper()
			for _, p := range reads {
				r := h.must(200, "GET", p, nil, "")
				for _, w := range want {
					if !strings.Contains(string(r.Raw), w) {
						t.Fatalf("after %s, GET %s still shows the old site: %s (want %s)", what, p, r.Raw, w)
					}
				}
			}
		}

		// PUT /sites/{id}: the old slug and domain go too.
		warm()
		h.must(200, "PUT", adminPath+"/sites/"+sid, map[string]any{"name": "Renamed"}, h.admin)
		shows("PUT /sites/{id}", `"name":"Renamed"`)
		warm()
		h.must(200, "PUT", adminPath+"/sites/"+sid, map[string]any{"slug": "moved", "domain": "moved.example.com"}, h.admin)
		h.must(404, "GET", clientPath+"/sites:bySlug/cached", nil, "")
		h.must(404, "GET", clientPath+"/sites:byDomain/cached.example.com", nil, "")
		reads = []string{clientPath + "/sites/" + sid, clientPath + "/sites:bySlug/moved", clientPath + "/sites:byDomain/moved.example.com"}

		// PUT and DELETE /sites/{id}/password.
		warm()
		h.must(200, "PUT", adminPath+"/sites/"+sid+"/password", map[string]string{"password": "open-sesame"}, h.admin)
		shows("PUT /sites/{id}/password", `"requires_password":true`)
		warm()
		h.must(200, "DELETE", adminPath+"/sites/"+sid+"/password", nil, h.admin)
		shows("DELETE /sites/{id}/password", `"requires_password":false`)

		// PATCH /sites/{id}/ee-config: the access block and the API bot.
		warm()
		h.must(200, "PATCH", adminPath+"/sites/"+sid+"/ee-config", map[string]any{"access": map[string]any{"is_public": false}}, h.admin)
		shows("PATCH ee-config access", `"requires_password":true`)
		h.must(200, "PATCH", adminPath+"/sites/"+sid+"/ee-config", map[string]any{"access": map[string]any{"is_public": true}}, h.admin)
		shows("PATCH ee-config access", `"requires_password":false`)

		// Documents: POST, PUT, DELETE /documents; the collection routes
		// change the path a document detail shows.
		var col, doc struct {
			ID int64 `json:"id"`
		}
		h.must(201, "POST", adminPath+"/collections", map[string]any{"site_id": site.ID, "title": "Guides"}, h.admin).into(t, &col)
		list := clientPath + "/documents?site_id=" + sid + "&keyword=guide"
		h.must(200, "GET", list, nil, "")
		h.must(201, "POST", adminPath+"/documents", map[string]any{"site_id": site.ID, "collection_id": col.ID, "title": "Alpha guide", "content": "x", "status": "published"}, h.admin).into(t, &doc)
		if r := h.must(200, "GET", list, nil, ""); !strings.Contains(string(r.Raw), "Alpha guide") {
			t.Fatalf("after POST /documents the list misses it: %s", r.Raw)
		}
		detail := clientPath + "/documents/" + itoa(doc.ID)
		h.must(200, "GET", detail, nil, "")
		h.must(200, "PUT", adminPath+"/documents/"+itoa(doc.ID), map[string]any{"title": "Beta guide"}, h.admin)
		for _, p := range []string{detail, list} {
			if r := h.must(200, "GET", p, nil, ""); !strings.Contains(string(r.Raw), "Beta guide") {
				t.Fatalf("after PUT /documents/{id}, GET %s shows the old title: %s", p, r.Raw)
			}
		}
		h.must(200, "PUT", adminPath+"/collections/"+itoa(col.ID), map[string]any{"title": "Manuals"}, h.admin)
		if r := h.must(200, "GET", detail, nil, ""); !strings.Contains(string(r.Raw), "Manuals") {
			t.Fatalf("after PUT /collections/{id} the detail shows the old path: %s", r.Raw)
		}
		var top struct {
			ID int64 `json:"id"`
		}
		h.must(201, "POST", adminPath+"/collections", map[string]any{"site_id": site.ID, "title": "Top"}, h.admin).into(t, &top)
		h.must(200, "GET", detail, nil, "")
		h.must(200, "POST", adminPath+"/collections/"+itoa(col.ID)+":move", map[string]any{"new_parent_id": top.ID}, h.admin)
		if r := h.must(200, "GET", detail, nil, ""); !strings.Contains(string(r.Raw), `"ancestors":[{"id":`+itoa(top.ID)+`,"title":"Top"}]`) {
			t.Fatalf("after POST /collections/{id}:move the detail shows the old path: %s", r.Raw)
		}
		h.must(200, "DELETE", adminPath+"/documents/"+itoa(doc.ID), nil, h.admin)
		h.must(404, "GET", detail, nil, "")
		if r := h.must(200, "GET", list, nil, ""); strings.Contains(string(r.Raw), "Beta guide") {
			t.Fatalf("after DELETE /documents/{id} the list still shows it: %s", r.Raw)
		}

		// PUT /sites/{id} to inactive, then DELETE /sites/{id}.
		warm()
		h.must(200, "GET", list, nil, "")
		h.must(200, "PUT", adminPath+"/sites/"+sid, map[string]any{"status": "inactive"}, h.admin)
		for _, p := range append(reads, list) {
			h.must(404, "GET", p, nil, "")
		}
		h.must(200, "PUT", adminPath+"/sites/"+sid, map[string]any{"status": "active"}, h.admin)
		warm()
		h.must(200, "DELETE", adminPath+"/sites/"+sid, nil, h.admin)
		for _, p := range reads {
			h.must(404, "GET", p, nil, "")
		}
	})
}
