package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/lorekb/lore/models"
)

// kbDocument creates a document through the admin API.
func kbDocument(h *harness, body map[string]any) DocumentResponse {
	h.t.Helper()
	var d DocumentResponse
	h.must(201, "POST", adminPath+"/documents", body, h.admin).into(h.t, &d)
	return d
}

// kbSetDoc changes one column of a document directly.
func kbSetDoc(h *harness, id int64, set string, arg any) {
	h.t.Helper()
	if _, err := h.d.DB.NewUpdate().Model((*models.Document)(nil)).Set(set, arg).Where("id = ?", id).
		Exec(context.Background()); err != nil {
		h.t.Fatal(err)
	}
}

// kbList GETs a document list and returns the titles in order and the total.
func kbList(h *harness, path, token string) ([]string, int) {
	h.t.Helper()
	var pg Page[DocumentResponse]
	h.must(200, "GET", path, nil, token).into(h.t, &pg)
	titles := make([]string, len(pg.List))
	for i, d := range pg.List {
		titles[i] = d.Title
	}
	return titles, pg.Pagination.Total
}

func TestDocumentCRUD(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		site := kbSite(h, "Alpha")
		other := kbSite(h, "Beta")
		a := kbCollection(h, site.ID, nil, "Guide")
		a1 := kbCollection(h, site.ID, &a.ID, "Setup")
		foreign := kbCollection(h, other.ID, nil, "F")
		content := strings.Repeat("word ", 450) + strings.Repeat("数", 200)
		r := h.must(201, "POST", adminPath+"/documents", map[string]any{"title": " Install ", "site_id": site.ID,
			"collection_id": a1.ID, "author": "ann", "content": content, "summary": "s", "cover_image": "c.png",
			"category": "howto", "tags": []string{"go", " go ", "", "db"}}, h.admin)
		var d DocumentResponse
		r.into(t, &d)
		if d.Title != "Install" || d.Status != "draft" || d.VectorStatus != "none" || d.ReadingTime != 3 ||
			d.Author != "ann" || len(d.Tags) != 2 || d.Tags[1] != "db" || d.TenantID != site.TenantID ||
			d.Content == nil || *d.Content != content || d.Views != 0 {
			t.Fatalf("created: %+v", d)
		}
		if d.Collection == nil || d.Collection.Path != "Guide > Setup" || len(d.Collection.Ancestors) != 1 ||
			d.Collection.Ancestors[0].Title != "Guide" || *d.Collection.ParentID != a.ID {
			t.Fatalf("collection: %+v", d.Collection)
		}
		if d.SiteName == nil || *d.SiteName != "Alpha" || *d.SiteSlug != "alpha" || *d.TenantSlug != "default" {
			t.Fatalf("site info: %v %v %v", d.SiteName, d.SiteSlug, d.TenantSlug)
		}
		var keys map[string]json.RawMessage
		r.into(t, &keys)
		for _, k := range []string{"id", "created_at", "updated_at", "title", "tenant_id", "content", "summary",
			"cover_image", "site_id", "collection_id", "category", "author", "status", "vector_status", "tags",
			"views", "reading_time", "vector_error", "vectorized_at", "site_name", "site_slug", "tenant_slug",
			"collection", "parse_meta"} {
			if _, ok := keys[k]; !ok {
				t.Fatalf("key %s missing: %s", k, r.Data)
			}
		}
		h.must(200, "GET", adminPath+"/documents/"+itoa(d.ID), nil, h.admin).into(t, &d)
		if d.Title != "Install" || d.Collection.Path != "Guide > Setup" {
			t.Fatalf("get: %+v", d)
		}
		// Without a collection: collection null; tags default [].
		var loose DocumentResponse
		r = h.must(201, "POST", adminPath+"/documents", map[string]any{"title": "Loose", "site_id": site.ID}, h.admin)
		r.into(t, &loose)
		if loose.Collection != nil || loose.ReadingTime != 1 || !strings.Contains(string(r.Data), `"tags":[]`) {
			t.Fatalf("loose: %s", r.Data)
		}

		// Update: the outdated transition. A completed document whose content
		// changes becomes outdated and its content version is bumped; other
		// edits leave the vector state alone.
		kbSetDoc(h, d.ID, "vector_status = ?", models.VecCompleted)
		h.must(200, "PUT", adminPath+"/documents/"+itoa(d.ID), map[string]any{"summary": "new summary", "tags": []string{"x"}}, h.admin).into(t, &d)
		if d.VectorStatus != "completed" || textOf(d.Summary) != "new summary" || d.Tags[0] != "x" {
			t.Fatalf("summary edit: %+v", d)
		}
		h.must(200, "PUT", adminPath+"/documents/"+itoa(d.ID), map[string]any{"content": "short"}, h.admin).into(t, &d)
		if d.VectorStatus != "outdated" || d.ReadingTime != 1 || *d.Content != "short" || d.Title != "Install" {
			t.Fatalf("content edit: %+v", d)
		}
		row, err := h.d.DB.GetDocument(context.Background(), d.ID)
		if err != nil || row.ContentVersion != 2 {
			t.Fatalf("content version: %d %v", row.ContentVersion, err)
		}
		kbSetDoc(h, d.ID, "vector_status = ?", models.VecCompleted)
		h.must(200, "PUT", adminPath+"/documents/"+itoa(d.ID), map[string]any{"title": "Install Lore"}, h.admin).into(t, &d)
		if d.VectorStatus != "outdated" {
			t.Fatalf("title edit: %+v", d)
		}
		// Move to another collection, then detach with null.
		h.must(200, "PUT", adminPath+"/documents/"+itoa(d.ID), map[string]any{"collection_id": a.ID}, h.admin).into(t, &d)
		if *d.CollectionID != a.ID || d.Collection.Path != "Guide" || len(d.Collection.Ancestors) != 0 {
			t.Fatalf("moved: %+v", d.Collection)
		}
		h.must(200, "PUT", adminPath+"/documents/"+itoa(d.ID), map[string]any{"collection_id": nil}, h.admin).into(t, &d)
		if d.CollectionID != nil || d.Collection != nil {
			t.Fatalf("detached: %+v", d)
		}

		// Bad input changes nothing.
		before := kbCount(h, (*models.Document)(nil))
		row, _ = h.d.DB.GetDocument(context.Background(), d.ID)
		for _, tc := range []struct {
			status       int
			method, path string
			body         any
			want         string
		}{
			{422, "POST", "/documents", map[string]any{"site_id": site.ID}, "title"},
			{422, "POST", "/documents", map[string]any{"title": "T"}, "site_id"},
			{422, "POST", "/documents", map[string]any{"title": "T", "site_id": site.ID, "status": "archived"}, "status"},
			{422, "POST", "/documents", map[string]any{"title": strings.Repeat("é", 201), "site_id": site.ID}, "title"},
			{422, "POST", "/documents", map[string]any{"title": "T", "site_id": site.ID, "tags": "go"}, "tags"},
			{422, "POST", "/documents", map[string]any{"title": "T", "site_id": site.ID, "collection_id": "x"}, "collection_id"},
			{400, "POST", "/documents", map[string]any{"title": "T", "site_id": 999999}, "site"},
			{400, "POST", "/documents", map[string]any{"title": "T", "site_id": site.ID, "collection_id": foreign.ID}, "collection_id"},
			{400, "POST", "/documents", map[string]any{"title": "T", "site_id": site.ID, "collection_id": 999999}, "collection_id"},
			{422, "POST", "/documents", `{"title":`, "malformed"},
			{422, "POST", "/documents", `{"title":"a\u0000b","site_id":` + itoa(site.ID) + `}`, "title"},
			{422, "POST", "/documents", map[string]any{"title": "T", "site_id": site.ID, "tags": []string{"a\x00"}}, "tags"},
			{422, "GET", "/documents?keyword=%00", nil, "keyword"},
			{404, "GET", "/documents?site_id=999999", nil, "site"},
			{400, "PUT", "/documents/" + itoa(d.ID), map[string]any{"collection_id": foreign.ID}, "collection_id"},
			{422, "PUT", "/documents/" + itoa(d.ID), map[string]any{"title": ""}, "title"},
			{422, "PUT", "/documents/" + itoa(d.ID), map[string]any{"status": "gone"}, "status"},
			{422, "PUT", "/documents/" + itoa(d.ID), map[string]any{"content": 5}, "content"},
			{404, "PUT", "/documents/999999", map[string]any{"title": "x"}, "document"},
			{422, "GET", "/documents/abc", nil, "id"},
			{404, "GET", "/documents/999999", nil, "document"},
			{404, "DELETE", "/documents/999999", nil, "document"},
		} {
			r := h.do(tc.method, adminPath+tc.path, tc.body, h.admin)
			if r.Status != tc.status || !strings.Contains(r.Msg, tc.want) {
				t.Fatalf("%s %s %v: %d %s, want %d naming %q", tc.method, tc.path, tc.body, r.Status, r.Raw, tc.status, tc.want)
			}
		}
		if n := kbCount(h, (*models.Document)(nil)); n != before {
			t.Fatalf("bad input changed the document count: %d → %d", before, n)
		}
		after, _ := h.d.DB.GetDocument(context.Background(), d.ID)
		if after.Title != row.Title || after.Status != row.Status || after.ContentVersion != row.ContentVersion ||
			!after.UpdatedAt.Equal(row.UpdatedAt) {
			t.Fatalf("bad input changed the document: %+v → %+v", row, after)
		}

		// Delete.
		h.must(200, "DELETE", adminPath+"/documents/"+itoa(d.ID), nil, h.admin)
		h.must(404, "GET", adminPath+"/documents/"+itoa(d.ID), nil, h.admin)
		if n := kbCount(h, (*models.Document)(nil)); n != before-1 {
			t.Fatalf("count after delete: %d", n)
		}
	})
}

func TestDocumentRoles(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		site, other, editor, siteAdmin := kbRoles(h)
		mine := kbDocument(h, map[string]any{"title": "mine", "site_id": site.ID})
		theirs := kbDocument(h, map[string]any{"title": "theirs", "site_id": other.ID})

		// An editor of Alpha works on Alpha only.
		titles, total := kbList(h, adminPath+"/documents", editor)
		if total != 1 || titles[0] != "mine" {
			t.Fatalf("editor list: %v", titles)
		}
		if _, total := kbList(h, adminPath+"/documents", h.admin); total != 2 {
			t.Fatalf("admin list: %d", total)
		}
		// Another site's documents are answered as missing ones.
		h.must(404, "GET", fmt.Sprintf("%s/documents?site_id=%d", adminPath, other.ID), nil, editor)
		h.must(404, "GET", adminPath+"/documents/"+itoa(theirs.ID), nil, editor)
		h.must(400, "POST", adminPath+"/documents", map[string]any{"title": "x", "site_id": other.ID}, editor)
		h.must(404, "PUT", adminPath+"/documents/"+itoa(theirs.ID), map[string]any{"title": "x"}, editor)
		h.must(200, "GET", adminPath+"/documents/"+itoa(mine.ID), nil, editor)
		h.must(200, "PUT", adminPath+"/documents/"+itoa(mine.ID), map[string]any{"title": "mine2"}, editor)
		h.must(201, "POST", adminPath+"/documents", map[string]any{"title": "new", "site_id": site.ID}, editor)
		// Editors cannot delete; site admins can, on their sites.
		before := kbCount(h, (*models.Document)(nil))
		h.must(403, "DELETE", adminPath+"/documents/"+itoa(mine.ID), nil, editor)
		h.must(404, "DELETE", adminPath+"/documents/"+itoa(theirs.ID), nil, siteAdmin)
		if n := kbCount(h, (*models.Document)(nil)); n != before {
			t.Fatalf("refused deletes changed the count")
		}
		h.must(200, "DELETE", adminPath+"/documents/"+itoa(mine.ID), nil, siteAdmin)
		h.must(401, "GET", adminPath+"/documents", nil, "")
	})
}

func TestDocumentListFilters(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		site := kbSite(h, "Alpha")
		other := kbSite(h, "Beta")
		a := kbCollection(h, site.ID, nil, "A")
		a1 := kbCollection(h, site.ID, &a.ID, "A1")
		a11 := kbCollection(h, site.ID, &a1.ID, "A11")
		b := kbCollection(h, site.ID, nil, "B")
		mk := func(title string, col int64, status, content string) DocumentResponse {
			body := map[string]any{"title": title, "site_id": site.ID, "status": status, "content": content}
			if col > 0 {
				body["collection_id"] = col
			}
			return kbDocument(h, body)
		}
		d1 := mk("charlie", a.ID, "published", "PostgreSQL 数据库 tuning")
		d2 := mk("alpha", a1.ID, "draft", "sqlite notes")
		d3 := mk("bravo", a11.ID, "published", "100% coverage")
		d4 := mk("delta", b.ID, "published", "nothing")
		kbDocument(h, map[string]any{"title": "zulu", "site_id": other.ID, "content": "数据库"})
		kbSetDoc(h, d2.ID, "views = ?", 5)
		kbSetDoc(h, d3.ID, "views = ?", 9)
		kbSetDoc(h, d4.ID, "views = ?", 1)
		kbSetDoc(h, d3.ID, "vector_status = ?", models.VecCompleted)
		kbSetDoc(h, d1.ID, "updated_at = ?", d1.UpdatedAt.AddDate(0, 0, 1))
		base := fmt.Sprintf("%s/documents?site_id=%d", adminPath, site.ID)
		for _, tc := range []struct {
			query string
			want  string
		}{
			{"", "delta bravo alpha charlie"},
			{"&collection_id=" + itoa(a.ID), "bravo alpha charlie"},
			{"&collection_id=" + itoa(a1.ID), "bravo alpha"},
			{"&collection_id=" + itoa(a11.ID), "bravo"},
			{"&collection_id=999999", ""},
			{"&status=draft", "alpha"},
			{"&status=published&order_dir=asc", "charlie bravo delta"},
			{"&vector_status=completed", "bravo"},
			{"&vector_status=none&status=published", "delta charlie"},
			{"&keyword=数据库", "charlie"},
			{"&keyword=POSTGRES", "charlie"},
			{"&keyword=%25", "bravo"},
			{"&keyword=sqlite", "alpha"},
			{"&order_by=title&order_dir=asc", "alpha bravo charlie delta"},
			{"&order_by=title", "delta charlie bravo alpha"},
			{"&order_by=views", "bravo alpha delta charlie"},
			{"&order_by=views&order_dir=asc", "charlie delta alpha bravo"},
			{"&order_by=created_at&order_dir=asc", "charlie alpha bravo delta"},
			{"&order_by=updated_at", "charlie delta bravo alpha"},
			{"&size=2&page=2", "alpha charlie"},
		} {
			titles, _ := kbList(h, base+tc.query, h.admin)
			if got := strings.Join(titles, " "); got != tc.want {
				t.Fatalf("%s: %q, want %q", tc.query, got, tc.want)
			}
		}
		// No site filter: every site, CJK keyword across sites.
		if titles, total := kbList(h, adminPath+"/documents?keyword=数据库", h.admin); total != 2 || len(titles) != 2 {
			t.Fatalf("keyword across sites: %v", titles)
		}
		// is_pager=0 returns every row; exclude_content nulls content.
		var pg Page[DocumentResponse]
		h.must(200, "GET", base+"&is_pager=0&size=1&exclude_content=false", nil, h.admin).into(t, &pg)
		if len(pg.List) != 4 || pg.Pagination.IsPager != 0 || pg.Pagination.Total != 4 {
			t.Fatalf("is_pager=0: %+v", pg.Pagination)
		}
		if pg.List[0].Content == nil || pg.List[0].SiteName != nil {
			t.Fatalf("admin list content/site info: %+v", pg.List[0])
		}
		if pg.List[1].Collection == nil || pg.List[1].Collection.Path != "A > A1 > A11" {
			t.Fatalf("list collection path: %+v", pg.List[1].Collection)
		}
		r := h.must(200, "GET", base, nil, h.admin) // excluded by default, as the reference
		if !strings.Contains(string(r.Data), `"content":null`) {
			t.Fatalf("exclude_content: %s", r.Data)
		}
		// Bad parameters are 422 naming them.
		for q, want := range map[string]string{
			"&order_by=secret":    "order_by",
			"&order_dir=sideways": "order_dir",
			"&status=gone":        "status",
			"&vector_status=x":    "vector_status",
			"&collection_id=abc":  "collection_id",
			"&size=1001":          "size",
			"&page=0":             "page",
			"&exclude_content=z":  "exclude_content",
		} {
			r := h.must(422, "GET", base+q, nil, h.admin)
			if !strings.Contains(r.Msg, want) {
				t.Fatalf("%s: %s", q, r.Msg)
			}
		}
	})
}

func TestClientDocuments(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		site := kbSite(h, "Alpha")
		closed := kbSite(h, "Closed")
		locked := kbSite(h, "Locked")
		a := kbCollection(h, site.ID, nil, "A")
		a1 := kbCollection(h, site.ID, &a.ID, "A1")
		pub := kbDocument(h, map[string]any{"title": "pub", "site_id": site.ID, "collection_id": a1.ID,
			"status": "published", "content": "hello 数据库"})
		pub2 := kbDocument(h, map[string]any{"title": "pub2", "site_id": site.ID, "collection_id": a.ID,
			"status": "published", "content": "other"})
		draft := kbDocument(h, map[string]any{"title": "draft", "site_id": site.ID, "status": "draft"})
		gone := kbDocument(h, map[string]any{"title": "gone", "site_id": closed.ID, "status": "published"})
		secret := kbDocument(h, map[string]any{"title": "secret", "site_id": locked.ID, "status": "published"})
		h.setSite(closed.ID, "status = ?", models.SiteInactive)
		h.setSite(locked.ID, "requires_password = ?", true)
		t.Cleanup(func() { _ = h.s.CloseViews(context.Background()) })

		// List: published documents of visible sites, content excluded by
		// default, password sites hidden without site_id.
		var pg Page[DocumentResponse]
		r := h.must(200, "GET", clientPath+"/documents", nil, "")
		r.into(t, &pg)
		if pg.Pagination.Total != 2 || pg.List[0].ID != pub2.ID || pg.List[1].ID != pub.ID {
			t.Fatalf("client list: %s", r.Data)
		}
		if pg.List[0].Content != nil || pg.List[0].SiteName != nil || !strings.Contains(string(r.Data), `"content":null`) {
			t.Fatalf("client list defaults: %s", r.Data)
		}
		h.must(200, "GET", clientPath+"/documents?exclude_content=false&include_site_info=true", nil, "").into(t, &pg)
		if pg.List[0].Content == nil || *pg.List[0].Content != "other" || pg.List[0].SiteName == nil ||
			*pg.List[0].SiteName != "Alpha" || *pg.List[0].SiteSlug != "alpha" || *pg.List[0].TenantSlug != "default" {
			t.Fatalf("content and site info: %+v", pg.List[0])
		}
		for q, want := range map[string]string{
			"?keyword=数据库":                              "pub",
			"?collection_id=" + itoa(a1.ID):             "pub",
			"?collection_id=" + itoa(a.ID):              "pub2 pub",
			"?site_id=" + itoa(site.ID):                 "pub2 pub",
			fmt.Sprintf("?tenant_id=%d", site.TenantID): "pub2 pub",
			"?tenant_id=999":                            "",
			"?order_by=created_at&order_dir=asc":        "pub pub2",
		} {
			titles, _ := kbList(h, clientPath+"/documents"+q, "")
			if got := strings.Join(titles, " "); got != want {
				t.Fatalf("client %s: %q, want %q", q, got, want)
			}
		}
		h.must(404, "GET", clientPath+"/documents?site_id="+itoa(closed.ID), nil, "")
		h.must(422, "GET", clientPath+"/documents?site_id=x", nil, "")
		h.must(422, "GET", clientPath+"/documents?order_by=title", nil, "")
		h.must(422, "GET", clientPath+"/documents?keyword=a%00", nil, "")

		// Detail: published and visible only; site info and path included.
		var d DocumentResponse
		h.must(200, "GET", clientPath+"/documents/"+itoa(pub.ID), nil, "").into(t, &d)
		if d.Content == nil || *d.Content != "hello 数据库" || d.Views != 1 || *d.SiteName != "Alpha" ||
			d.Collection.Path != "A > A1" {
			t.Fatalf("client detail: %+v", d)
		}
		h.must(200, "GET", "/api/v1/documents/"+itoa(pub.ID), nil, "").into(t, &d)
		if d.Views != 2 {
			t.Fatalf("views shown = %d, want 2 (stored + pending)", d.Views)
		}
		h.must(200, "GET", fmt.Sprintf("%s/documents/%d?site_id=%d", clientPath, pub.ID, site.ID), nil, "")
		h.must(404, "GET", fmt.Sprintf("%s/documents/%d?site_id=%d", clientPath, pub.ID, closed.ID), nil, "")
		h.must(404, "GET", clientPath+"/documents/"+itoa(draft.ID), nil, "")
		h.must(404, "GET", clientPath+"/documents/"+itoa(gone.ID), nil, "")
		h.must(404, "GET", clientPath+"/documents/999999", nil, "")
		h.must(422, "GET", clientPath+"/documents/abc", nil, "")
		_ = secret
		// Refused reads counted nothing.
		if err := h.s.FlushViews(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := kbCount(h, (*models.ViewEvent)(nil)); n != 3 {
			t.Fatalf("view events = %d, want 3", n)
		}
		// The detail is cached, but writes through the admin API show at once:
		// the flushed count, an edit, a collection rename, unpublishing.
		h.must(200, "GET", clientPath+"/documents/"+itoa(pub.ID), nil, "").into(t, &d)
		if d.Views != 4 {
			t.Fatalf("views after flush = %d, want 4", d.Views)
		}
		h.must(200, "PUT", adminPath+"/documents/"+itoa(pub.ID), map[string]any{"content": "edited"}, h.admin)
		h.must(200, "PUT", adminPath+"/collections/"+itoa(a.ID), map[string]any{"title": "Renamed"}, h.admin)
		h.must(200, "GET", clientPath+"/documents/"+itoa(pub.ID), nil, "").into(t, &d)
		if *d.Content != "edited" || d.Collection.Path != "Renamed > A1" || d.Views != 5 {
			t.Fatalf("after edits: %q %q %d", *d.Content, d.Collection.Path, d.Views)
		}
		h.must(200, "PUT", adminPath+"/documents/"+itoa(pub.ID), map[string]any{"status": "draft"}, h.admin)
		h.must(404, "GET", clientPath+"/documents/"+itoa(pub.ID), nil, "")
		// Site visibility is checked on every read, cached or not.
		h.must(200, "GET", clientPath+"/documents/"+itoa(pub2.ID), nil, "")
		h.setSite(site.ID, "status = ?", models.SiteInactive)
		h.must(404, "GET", clientPath+"/documents/"+itoa(pub2.ID), nil, "")
		h.setSite(site.ID, "status = ?", models.SiteActive)
		if err := h.s.FlushViews(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := kbCount(h, (*models.ViewEvent)(nil)); n != 6 {
			t.Fatalf("view events = %d, want 6", n)
		}
		for _, id := range []int64{draft.ID, gone.ID} {
			row, _ := h.d.DB.GetDocument(context.Background(), id)
			if row.Views != 0 {
				t.Fatalf("document %d counted views", id)
			}
		}
	})
}

func TestDocumentViewCountingConcurrent(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		site := kbSite(h, "Alpha")
		doc := kbDocument(h, map[string]any{"title": "hot", "site_id": site.ID, "status": "published", "content": "x"})
		const n = 32
		var wg sync.WaitGroup
		errs := make(chan string, n)
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				req := httptest.NewRequest("GET", clientPath+"/documents/"+itoa(doc.ID), nil)
				req.Header.Set("X-Forwarded-For", "203.0.113.7")
				req.Header.Set("User-Agent", "lore-test/1.0")
				req.Header.Set("Referer", "https://ref.example/page")
				res, err := h.s.App().Test(req, -1)
				if err != nil {
					errs <- err.Error()
					return
				}
				defer res.Body.Close()
				body, _ := io.ReadAll(res.Body)
				if res.StatusCode != 200 {
					errs <- fmt.Sprintf("status %d: %s", res.StatusCode, body)
				}
			}(i)
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Fatal(e)
		}
		if err := h.s.FlushViews(context.Background()); err != nil {
			t.Fatal(err)
		}
		row, err := h.d.DB.GetDocument(context.Background(), doc.ID)
		if err != nil || row.Views != n {
			t.Fatalf("views = %d (%v), want %d", row.Views, err, n)
		}
		var events []models.ViewEvent
		if err := h.d.DB.NewSelect().Model(&events).Where("document_id = ?", doc.ID).Scan(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(events) != n {
			t.Fatalf("view events = %d, want %d", len(events), n)
		}
		for _, ev := range events {
			if ev.IP != "203.0.113.7" || ev.UserAgent != "lore-test/1.0" || ev.Referer != "https://ref.example/page" ||
				ev.SiteID != site.ID {
				t.Fatalf("event: %+v", ev)
			}
		}
		// The admin list shows the stored count.
		var d DocumentResponse
		h.must(200, "GET", adminPath+"/documents/"+itoa(doc.ID), nil, h.admin).into(t, &d)
		if d.Views != n {
			t.Fatalf("admin views = %d", d.Views)
		}
		if err := h.s.CloseViews(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestReadingTime(t *testing.T) {
	for in, want := range map[string]int{
		"":                                1,
		strings.Repeat("word ", 399):      1,
		strings.Repeat("word ", 400):      2,
		strings.Repeat("数据库", 200):        3,
		strings.Repeat("it's fine ", 300): 3,
	} {
		if got := readingTime(in); got != want {
			t.Errorf("readingTime(%.20q…) = %d, want %d", in, got, want)
		}
	}
}

// The client site check reads a copy of the site row at most siteRowTTL old:
// a write through this server drops the copy at once, a write made elsewhere
// (here: straight to the database) shows within the TTL.
func TestClientSiteCheckCopyIsShortLived(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		site := kbSite(h, "Short-lived copy")
		doc := kbDocument(h, map[string]any{"site_id": site.ID, "title": "T", "content": "c", "status": "published"})
		path := clientPath + "/documents/" + itoa(doc.ID)
		h.must(200, "GET", path, nil, "")
		if _, err := h.d.DB.NewUpdate().Model((*models.Site)(nil)).Set("status = ?", models.SiteInactive).
			Where("id = ?", site.ID).Exec(context.Background()); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(siteRowTTL + 2*time.Second)
		for h.do("GET", path, nil, "").Status != 404 {
			if time.Now().After(deadline) {
				t.Fatalf("a site deactivated elsewhere still serves documents after %s", siteRowTTL+2*time.Second)
			}
			time.Sleep(50 * time.Millisecond)
		}
		h.must(200, "PUT", adminPath+"/sites/"+itoa(site.ID), map[string]any{"status": "active"}, h.admin)
		h.must(200, "GET", path, nil, "") // through this server: at once
		h.must(200, "PUT", adminPath+"/sites/"+itoa(site.ID), map[string]any{"status": "inactive"}, h.admin)
		h.must(404, "GET", path, nil, "")
	})
}

// A cached detail is written from its pre-encoded body: byte for byte what
// encoding the envelope writes, with the view count in place.
func TestDetailBodyMatchesTheEnvelope(t *testing.T) {
	content := "quotes \" and \"views\":-7777777777777, <html> & unicode ü 中文"
	coll := int64(7)
	doc := DocumentResponse{ID: 42, Title: "T \"x\"", Content: &content, SiteID: 3, CollectionID: &coll, Views: 5,
		Tags: []string{"a", "b"}, Status: "published"}
	body := encodeDetail(doc)
	if body.head == nil {
		t.Fatal("no body")
	}
	app := fiber.New()
	app.Get("/spliced", func(c *fiber.Ctx) error { return body.write(c, 123456) })
	app.Get("/encoded", func(c *fiber.Ctx) error {
		d := doc
		d.Views = 123456
		return ok(c, d)
	})
	get := func(path string) (string, string) {
		res, err := app.Test(httptest.NewRequest("GET", path, nil))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		return string(b), res.Header.Get("Content-Type")
	}
	spliced, ct1 := get("/spliced")
	encoded, ct2 := get("/encoded")
	if spliced != encoded || ct1 != ct2 {
		t.Fatalf("spliced %s (%s)\nencoded %s (%s)", spliced, ct1, encoded, ct2)
	}
}
