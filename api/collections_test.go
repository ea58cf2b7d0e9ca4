package api

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/lorekb/lore/models"
)

const (
	adminPath  = "/admin/api/v1"
	clientPath = "/v1"
)

// kbSite inserts an active public site directly (the sites API is another
// file's concern) and returns it.
func kbSite(h *harness, name string) *models.Site {
	h.t.Helper()
	return h.insertSite(name, strings.ToLower(name), false)
}

// kbSetSite is h.setSite, by the name the web UI tests use.
func kbSetSite(h *harness, siteID int64, set string, arg any) {
	h.t.Helper()
	h.setSite(siteID, set, arg)
}

// kbRoles sets up a role test: sites Alpha and Beta, and the tokens of an
// editor and of a site admin of Alpha.
func kbRoles(h *harness) (site, other *models.Site, editor, siteAdmin string) {
	h.t.Helper()
	site, other = kbSite(h, "Alpha"), kbSite(h, "Beta")
	return site, other, h.userToken(models.RoleEditor, site.ID), h.userToken(models.RoleSiteAdmin, site.ID)
}

// kbCollection creates a collection through the API.
func kbCollection(h *harness, siteID int64, parent *int64, title string) CollectionResponse {
	h.t.Helper()
	body := map[string]any{"title": title, "site_id": siteID}
	if parent != nil {
		body["parent_id"] = *parent
	}
	var c CollectionResponse
	h.must(201, "POST", adminPath+"/collections", body, h.admin).into(h.t, &c)
	return c
}

// kbCount counts the rows of a table.
func kbCount(h *harness, model any) int {
	h.t.Helper()
	n, err := h.d.DB.NewSelect().Model(model).Count(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	return int(n)
}

// kbOrders lists "title:order" of the site's collections under parent.
func kbOrders(h *harness, siteID int64, parent *int64) string {
	h.t.Helper()
	path := fmt.Sprintf("%s/collections?site_id=%d", adminPath, siteID)
	if parent != nil {
		path += fmt.Sprintf("&parent_id=%d", *parent)
	}
	var pg Page[CollectionResponse]
	h.must(200, "GET", path, nil, h.admin).into(h.t, &pg)
	var parts []string
	for _, c := range pg.List {
		parts = append(parts, fmt.Sprintf("%s:%d", c.Title, c.Order))
	}
	return strings.Join(parts, " ")
}

func TestCollectionCRUD(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		site := kbSite(h, "Alpha")
		other := kbSite(h, "Beta")
		a := kbCollection(h, site.ID, nil, "A")
		b := kbCollection(h, site.ID, nil, "B")
		a1 := kbCollection(h, site.ID, &a.ID, "A1")
		foreign := kbCollection(h, other.ID, nil, "F")
		if a.Order != 0 || b.Order != 1 || a1.Order != 0 || *a1.ParentID != a.ID || a1.SiteID != site.ID ||
			a.TenantID != site.TenantID {
			t.Fatalf("created: %+v %+v %+v", a, b, a1)
		}
		// Explicit order is stored as given.
		var x CollectionResponse
		h.must(201, "POST", adminPath+"/collections", map[string]any{"title": "X", "site_id": site.ID, "order": 7}, h.admin).into(t, &x)
		if x.Order != 7 {
			t.Fatalf("explicit order: %+v", x)
		}
		// Every key of the wire shape is present.
		r := h.must(200, "GET", adminPath+"/collections/"+itoa(a1.ID), nil, h.admin)
		var keys map[string]any
		r.into(t, &keys)
		for _, k := range []string{"id", "created_at", "updated_at", "title", "tenant_id", "site_id", "parent_id", "order"} {
			if _, ok := keys[k]; !ok {
				t.Fatalf("key %s missing: %s", k, r.Data)
			}
		}
		if got := kbOrders(h, site.ID, nil); got != "A:0 B:1 X:7" {
			t.Fatalf("roots: %s", got)
		}
		if got := kbOrders(h, site.ID, &a.ID); got != "A1:0" {
			t.Fatalf("children: %s", got)
		}
		// A parent that does not exist, or is another site's, is 404.
		h.must(404, "GET", fmt.Sprintf("%s/collections?site_id=%d&parent_id=999999", adminPath, site.ID), nil, h.admin)
		h.must(404, "GET", fmt.Sprintf("%s/collections?site_id=%d&parent_id=%d", adminPath, site.ID, foreign.ID), nil, h.admin)
		// Paging: size 2 of 3 roots.
		var pg Page[CollectionResponse]
		h.must(200, "GET", fmt.Sprintf("%s/collections?site_id=%d&size=2&page=2", adminPath, site.ID), nil, h.admin).into(t, &pg)
		if pg.Pagination.Total != 3 || len(pg.List) != 1 || pg.List[0].Title != "X" {
			t.Fatalf("page 2: %+v", pg)
		}

		// Update title, then order, then the parent (null: to the root).
		var up CollectionResponse
		h.must(200, "PUT", adminPath+"/collections/"+itoa(a1.ID), map[string]any{"title": "A-one"}, h.admin).into(t, &up)
		if up.Title != "A-one" || up.ParentID == nil || *up.ParentID != a.ID {
			t.Fatalf("title update: %+v", up)
		}
		h.must(200, "PUT", adminPath+"/collections/"+itoa(a1.ID), map[string]any{"parent_id": nil}, h.admin).into(t, &up)
		if up.ParentID != nil || up.Order != 3 {
			t.Fatalf("to root: %+v", up)
		}
		if got := kbOrders(h, site.ID, nil); got != "A:0 B:1 X:2 A-one:3" {
			t.Fatalf("roots after reparent: %s", got)
		}
		h.must(200, "PUT", adminPath+"/collections/"+itoa(a1.ID), map[string]any{"parent_id": b.ID, "order": 0}, h.admin).into(t, &up)
		if *up.ParentID != b.ID || up.Order != 0 {
			t.Fatalf("to B: %+v", up)
		}

		// Bad input changes nothing.
		before := kbCount(h, (*models.Collection)(nil))
		for _, tc := range []struct {
			status       int
			method, path string
			body         any
			want         string
		}{
			{422, "GET", "/collections", nil, "site_id"},
			{422, "GET", "/collections?site_id=abc", nil, "site_id"},
			{404, "GET", "/collections?site_id=999999", nil, "site"},
			{422, "GET", "/collections/abc", nil, "id"},
			{404, "GET", "/collections/999999", nil, "collection"},
			{422, "POST", "/collections", map[string]any{"site_id": site.ID}, "title"},
			{422, "POST", "/collections", map[string]any{"title": "T"}, "site_id"},
			{422, "POST", "/collections", map[string]any{"title": "   ", "site_id": site.ID}, "title"},
			{422, "POST", "/collections", map[string]any{"title": "T", "site_id": "one"}, "site_id"},
			{422, "POST", "/collections", map[string]any{"title": strings.Repeat("t", 201), "site_id": site.ID}, "title"},
			{400, "POST", "/collections", map[string]any{"title": "T", "site_id": 999999}, "site"},
			{422, "POST", "/collections", map[string]any{"title": "a\x00", "site_id": site.ID}, "title"},
			{400, "POST", "/collections", map[string]any{"title": "T", "site_id": site.ID, "parent_id": foreign.ID}, "another site"},
			{400, "POST", "/collections", map[string]any{"title": "T", "site_id": site.ID, "parent_id": 999999}, "parent"},
			{400, "PUT", "/collections/" + itoa(a.ID), map[string]any{"parent_id": foreign.ID}, "another site"},
			{404, "PUT", "/collections/999999", map[string]any{"title": "x"}, "collection"},
			{404, "DELETE", "/collections/999999", nil, "collection"},
		} {
			r := h.do(tc.method, adminPath+tc.path, tc.body, h.admin)
			if r.Status != tc.status || !strings.Contains(r.Msg, tc.want) {
				t.Fatalf("%s %s: %d %s, want %d naming %q", tc.method, tc.path, r.Status, r.Raw, tc.status, tc.want)
			}
		}
		if n := kbCount(h, (*models.Collection)(nil)); n != before {
			t.Fatalf("bad input changed the collection count: %d → %d", before, n)
		}
		if got := kbOrders(h, site.ID, nil); got != "A:0 B:1 X:2" {
			t.Fatalf("bad input changed the roots: %s", got)
		}
	})
}

func TestCollectionMoveRenumbering(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		site := kbSite(h, "Alpha")
		other := kbSite(h, "Beta")
		a := kbCollection(h, site.ID, nil, "A")
		b := kbCollection(h, site.ID, nil, "B")
		c := kbCollection(h, site.ID, nil, "C")
		d := kbCollection(h, site.ID, nil, "D")
		b1 := kbCollection(h, site.ID, &b.ID, "B1")
		b2 := kbCollection(h, site.ID, &b.ID, "B2")
		b21 := kbCollection(h, site.ID, &b2.ID, "B21")
		foreign := kbCollection(h, other.ID, nil, "F")
		move := func(id int64, body any) CollectionResponse {
			var out CollectionResponse
			h.must(200, "POST", adminPath+"/collections/"+itoa(id)+":move", body, h.admin).into(t, &out)
			return out
		}
		// Within the roots: D to the front.
		if m := move(d.ID, map[string]any{"new_parent_id": nil, "new_order": 0}); m.Order != 0 || m.ParentID != nil {
			t.Fatalf("move D: %+v", m)
		}
		if got := kbOrders(h, site.ID, nil); got != "D:0 A:1 B:2 C:3" {
			t.Fatalf("roots: %s", got)
		}
		// A root into B between B1 and B2: both sibling lists renumbered.
		if m := move(a.ID, map[string]any{"new_parent_id": b.ID, "new_order": 1}); m.Order != 1 || *m.ParentID != b.ID {
			t.Fatalf("move A: %+v", m)
		}
		if got := kbOrders(h, site.ID, nil); got != "D:0 B:1 C:2" {
			t.Fatalf("roots: %s", got)
		}
		if got := kbOrders(h, site.ID, &b.ID); got != "B1:0 A:1 B2:2" {
			t.Fatalf("children of B: %s", got)
		}
		// WIRE's names, and a position past the end clamped to the count.
		if m := move(c.ID, map[string]any{"target_parent_id": b.ID, "target_position": 50}); m.Order != 3 {
			t.Fatalf("move C: %+v", m)
		}
		if got := kbOrders(h, site.ID, &b.ID); got != "B1:0 A:1 B2:2 C:3" {
			t.Fatalf("children of B: %s", got)
		}
		if got := kbOrders(h, site.ID, nil); got != "D:0 B:1" {
			t.Fatalf("roots: %s", got)
		}
		// Back to the root, absent position: appended.
		if m := move(b1.ID, map[string]any{"new_parent_id": nil}); m.Order != 2 || m.ParentID != nil {
			t.Fatalf("move B1: %+v", m)
		}
		if got := kbOrders(h, site.ID, &b.ID); got != "A:0 B2:1 C:2" {
			t.Fatalf("children of B: %s", got)
		}
		// Refusals: self, descendant, another site's collection, missing
		// parent; bad types and negative positions are 422.
		for _, tc := range []struct {
			status int
			id     int64
			body   any
		}{
			{400, b.ID, map[string]any{"new_parent_id": b.ID, "new_order": 0}},
			{400, b.ID, map[string]any{"new_parent_id": b21.ID, "new_order": 0}},
			{400, b.ID, map[string]any{"target_parent_id": b2.ID}},
			{400, b.ID, map[string]any{"new_parent_id": foreign.ID, "new_order": 0}},
			{400, b.ID, map[string]any{"new_parent_id": 999999, "new_order": 0}},
			{422, b.ID, map[string]any{"new_parent_id": nil, "new_order": -1}},
			{422, b.ID, map[string]any{"new_parent_id": "x"}},
			{422, b.ID, ""},
			{404, 999999, map[string]any{"new_parent_id": nil}},
		} {
			r := h.do("POST", adminPath+"/collections/"+itoa(tc.id)+":move", tc.body, h.admin)
			if r.Status != tc.status {
				t.Fatalf("move %d %v: %d %s, want %d", tc.id, tc.body, r.Status, r.Raw, tc.status)
			}
		}
		if got := kbOrders(h, site.ID, nil); got != "D:0 B:1 B1:2" {
			t.Fatalf("refused moves changed the roots: %s", got)
		}
		if got := kbOrders(h, site.ID, &b.ID); got != "A:0 B2:1 C:2" {
			t.Fatalf("refused moves changed B: %s", got)
		}
	})
}

func TestCollectionDeleteAndRoles(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		site, other, editor, siteAdmin := kbRoles(h)
		a := kbCollection(h, site.ID, nil, "A")
		a1 := kbCollection(h, site.ID, &a.ID, "A1")
		b := kbCollection(h, site.ID, nil, "B")
		o := kbCollection(h, other.ID, nil, "O")
		h.must(201, "POST", adminPath+"/documents", map[string]any{"title": "D", "site_id": site.ID, "collection_id": b.ID}, h.admin)

		// Editor of Alpha: reads and writes Alpha, not Beta.
		h.must(200, "GET", fmt.Sprintf("%s/collections?site_id=%d", adminPath, site.ID), nil, editor)
		h.must(200, "GET", fmt.Sprintf("%s/collections:tree?site_id=%d", adminPath, site.ID), nil, editor)
		h.must(201, "POST", adminPath+"/collections", map[string]any{"title": "E", "site_id": site.ID}, editor)
		// Another site's collections are answered as missing ones.
		h.must(404, "GET", fmt.Sprintf("%s/collections?site_id=%d", adminPath, other.ID), nil, editor)
		h.must(404, "GET", fmt.Sprintf("%s/collections:tree?site_id=%d", adminPath, other.ID), nil, editor)
		h.must(404, "GET", adminPath+"/collections/"+itoa(o.ID), nil, editor)
		h.must(400, "POST", adminPath+"/collections", map[string]any{"title": "E", "site_id": other.ID}, editor)
		h.must(404, "PUT", adminPath+"/collections/"+itoa(o.ID), map[string]any{"title": "E"}, editor)
		h.must(404, "POST", adminPath+"/collections/"+itoa(o.ID)+":move", map[string]any{"new_parent_id": nil}, editor)
		h.must(401, "GET", fmt.Sprintf("%s/collections?site_id=%d", adminPath, site.ID), nil, "")
		// Delete needs site_admin; refused while children or documents remain.
		before := kbCount(h, (*models.Collection)(nil))
		h.must(403, "DELETE", adminPath+"/collections/"+itoa(a1.ID), nil, editor)
		h.must(404, "DELETE", adminPath+"/collections/"+itoa(o.ID), nil, siteAdmin)
		r := h.must(400, "DELETE", adminPath+"/collections/"+itoa(a.ID), nil, siteAdmin)
		if !strings.Contains(r.Msg, "child") {
			t.Fatalf("msg: %s", r.Msg)
		}
		h.must(400, "DELETE", adminPath+"/collections/"+itoa(b.ID), nil, h.admin)
		if n := kbCount(h, (*models.Collection)(nil)); n != before {
			t.Fatalf("refused deletes changed the count: %d → %d", before, n)
		}
		h.must(200, "DELETE", adminPath+"/collections/"+itoa(a1.ID), nil, siteAdmin)
		h.must(200, "DELETE", adminPath+"/collections/"+itoa(a.ID), nil, siteAdmin)
		h.must(404, "GET", adminPath+"/collections/"+itoa(a.ID), nil, h.admin)
		// Siblings were renumbered after the delete.
		if got := kbOrders(h, site.ID, nil); got != "B:0 E:1" {
			t.Fatalf("roots after delete: %s", got)
		}
	})
}

func TestCollectionTree(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		site := kbSite(h, "Alpha")
		a := kbCollection(h, site.ID, nil, "A")
		b := kbCollection(h, site.ID, nil, "B")
		a1 := kbCollection(h, site.ID, &a.ID, "A1")
		a2 := kbCollection(h, site.ID, &a.ID, "A2")
		doc := func(title, status string, col int64) int64 {
			var d DocumentResponse
			h.must(201, "POST", adminPath+"/documents", map[string]any{"title": title, "site_id": site.ID,
				"collection_id": col, "status": status, "tags": []string{"t-" + title}}, h.admin).into(t, &d)
			return d.ID
		}
		d1 := doc("d1", "published", a.ID)
		d2 := doc("d2", "draft", a.ID)
		d3 := doc("d3", "published", a.ID)
		d4 := doc("d4", "published", a1.ID)
		h.must(201, "POST", adminPath+"/documents", map[string]any{"title": "loose", "site_id": site.ID, "status": "published"}, h.admin)

		shape := func(nodes []TreeNode) string {
			var b strings.Builder
			var walk func(ns []TreeNode)
			walk = func(ns []TreeNode) {
				for i, n := range ns {
					if i > 0 {
						b.WriteString(",")
					}
					b.WriteString(n.Title)
					if n.Children != nil {
						b.WriteString("(")
						walk(n.Children)
						b.WriteString(")")
					}
				}
			}
			walk(nodes)
			return b.String()
		}
		var tree []TreeNode
		r := h.must(200, "GET", fmt.Sprintf("%s/collections:tree?site_id=%d", adminPath, site.ID), nil, h.admin)
		r.into(t, &tree)
		if got := shape(tree); got != "A(A1(d4),A2,d3,d2,d1),B" {
			t.Fatalf("admin tree: %s", got)
		}
		// Exact node shape: every key, children null when empty, document
		// fields null on collection nodes.
		var raw []map[string]json.RawMessage
		r.into(t, &raw)
		for _, k := range []string{"id", "title", "type", "children", "status", "views", "tags", "collection_id"} {
			if _, ok := raw[1][k]; !ok {
				t.Fatalf("key %s missing from %s", k, r.Data)
			}
		}
		for _, k := range []string{"children", "status", "views", "tags", "collection_id"} {
			if string(raw[1][k]) != "null" {
				t.Fatalf("collection B %s = %s, want null", k, raw[1][k])
			}
		}
		a2node := tree[0].Children[1]
		if a2node.ID != a2.ID || a2node.Type != "collection" || a2node.Children != nil {
			t.Fatalf("A2: %+v", a2node)
		}
		d3node := tree[0].Children[2]
		if d3node.ID != d3 || d3node.Type != "document" || *d3node.Status != "published" || *d3node.Views != 0 ||
			*d3node.CollectionID != a.ID || len(d3node.Tags) != 1 || d3node.Tags[0] != "t-d3" || d3node.Children != nil {
			t.Fatalf("d3: %+v", d3node)
		}
		if tree[1].ID != b.ID || tree[0].Children[3].ID != d2 || tree[0].Children[4].ID != d1 {
			t.Fatalf("ids: %+v", tree)
		}
		if tree[0].Children[0].Children[0].ID != d4 {
			t.Fatalf("d4: %+v", tree[0].Children[0])
		}
		h.must(200, "GET", fmt.Sprintf("%s/collections:tree?site_id=%d&type=collection", adminPath, site.ID), nil, h.admin).into(t, &tree)
		if got := shape(tree); got != "A(A1,A2),B" {
			t.Fatalf("collections only: %s", got)
		}
		h.must(422, "GET", adminPath+"/collections:tree", nil, h.admin)
		h.must(404, "GET", adminPath+"/collections:tree?site_id=999999", nil, h.admin)

		// Client: collections only by default; published documents on request.
		h.must(200, "GET", fmt.Sprintf("%s/collections:tree?site_id=%d", clientPath, site.ID), nil, "").into(t, &tree)
		if got := shape(tree); got != "A(A1,A2),B" {
			t.Fatalf("client tree: %s", got)
		}
		h.must(200, "GET", fmt.Sprintf("/api/v1/collections:tree?site_id=%d&include_documents=true", site.ID), nil, "").into(t, &tree)
		if got := shape(tree); got != "A(A1(d4),A2,d3,d1),B" {
			t.Fatalf("client tree with documents: %s", got)
		}
		if tree[0].Children[3].ID != d1 {
			t.Fatalf("d1: %+v", tree[0].Children[3])
		}
		r = h.must(422, "GET", clientPath+"/collections:tree", nil, "")
		if !strings.Contains(r.Msg, "site_id") {
			t.Fatalf("msg: %s", r.Msg)
		}
		h.must(422, "GET", fmt.Sprintf("%s/collections:tree?site_id=%d&include_documents=maybe", clientPath, site.ID), nil, "")
		h.must(404, "GET", clientPath+"/collections:tree?site_id=999999", nil, "")
		h.setSite(site.ID, "status = ?", models.SiteInactive)
		h.must(404, "GET", fmt.Sprintf("%s/collections:tree?site_id=%d", clientPath, site.ID), nil, "")
	})
}
