package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testSite is a website whose pages change, vanish, redirect, time out and
// fail while a test syncs it.
type testSite struct {
	mu          sync.Mutex
	pages       map[string]string // path → HTML body (200)
	status      map[string]int    // path → status to answer instead
	notModified atomic.Int64      // 304s answered
	srv         *httptest.Server
}

func newTestSite(t *testing.T) *testSite {
	s := &testSite{pages: map[string]string{}, status: map[string]int{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *testSite) set(path, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pages[path] = body
	delete(s.status, path)
}

func (s *testSite) fail(path string, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status[path] = status
}

func htmlPage(title, body string, links ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<html><head><title>%s</title></head><body><main><h1>%s</h1><p>%s</p>", title, title, body)
	for _, l := range links {
		fmt.Fprintf(&b, `<a href="%s">%s</a>`, l, l)
	}
	b.WriteString("</main></body></html>")
	return b.String()
}

func (s *testSite) serve(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch p {
	case "/robots.txt":
		fmt.Fprint(w, "User-agent: *\nDisallow: /docs/private\n")
		return
	case "/docs/slow":
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
		}
		return
	case "/docs/huge":
		w.Header().Set("Content-Type", "text/html")
		chunk := strings.Repeat("<p>huge</p>", 1000)
		for i := 0; i < 300; i++ { // about 3 MB, over the 1 MiB limit
			if _, err := fmt.Fprint(w, chunk); err != nil {
				return
			}
		}
		return
	case "/docs/redirect":
		http.Redirect(w, r, "/docs/target", http.StatusFound)
		return
	case "/docs/away":
		http.Redirect(w, r, "/elsewhere/page", http.StatusFound)
		return
	case "/docs/etag":
		if r.Header.Get("If-None-Match") == `"v1"` {
			s.notModified.Add(1)
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", `"v1"`)
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, htmlPage("Tagged", "A page with an ETag."))
		return
	}
	s.mu.Lock()
	st, failing := s.status[p]
	body, ok := s.pages[p]
	s.mu.Unlock()
	switch {
	case failing:
		w.WriteHeader(st)
	case !ok:
		http.NotFound(w, r)
	default:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, body)
	}
}

// TestWebSync keeps a site in sync with a local website: pages of a sitemap
// that change, vanish (404: deleted), redirect (under the prefix: followed;
// outside: refused), time out, answer 500 or 404, send a body over the
// limit or are disallowed by robots.txt; the bad ones fail alone with a
// reason and the others sync. A 304 or the same body is unchanged and not
// converted. A start page is crawled under the prefix up to max_pages.
func TestWebSync(t *testing.T) {
	ws := newTestSite(t)
	base := ws.srv.URL
	ws.set("/docs/a", htmlPage("Page A", "Stable text."))
	ws.set("/docs/b", htmlPage("Page B", "First text."))
	ws.set("/docs/c", htmlPage("Page C", "Soon gone."))
	ws.set("/docs/target", htmlPage("Target", "Reached by a redirect."))
	ws.set("/docs/private/p", htmlPage("Private", "robots.txt says no."))
	ws.fail("/docs/broken", 500)
	var sm strings.Builder
	sm.WriteString(`<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">`)
	for _, p := range []string{"a", "b", "c", "redirect", "etag", "away", "slow", "broken", "missing", "huge", "private/p"} {
		fmt.Fprintf(&sm, "<url><loc>%s/docs/%s</loc></url>", base, p)
	}
	fmt.Fprintf(&sm, "<url><loc>%s/outside</loc></url></urlset>", base)
	ws.set("/docs/sitemap.xml", sm.String())

	a := newApp(t, "sqlite", map[string]string{"LORE_ALLOWED_PROVIDER_HOSTS": "127.0.0.1", "LORE_IMPORT_MAX_BYTES": "1048576"})
	site := a.site("Web synced")
	if r := a.do("POST", "/admin/api/v1/data-sources", map[string]any{"name": "x", "type": "web", "site_id": site,
		"config": map[string]any{"url": "http://169.254.169.254/sitemap.xml"}}, a.token); r.Status != 422 {
		t.Fatalf("metadata address: %d %s", r.Status, r.Raw)
	}
	if r := a.do("POST", "/admin/api/v1/data-sources", map[string]any{"name": "x", "type": "web", "site_id": site,
		"config": map[string]any{"url": base + "/docs/sitemap.xml", "max_pages": 100000}}, a.token); r.Status != 422 {
		t.Fatalf("max_pages over the bound: %d %s", r.Status, r.Raw)
	}
	var ds struct {
		ID     int64          `json:"id"`
		Config map[string]any `json:"config"`
	}
	a.admin("POST", "/admin/api/v1/data-sources", map[string]any{"name": "Docs site", "type": "web", "site_id": site,
		"config": map[string]any{"url": base + "/docs/sitemap.xml", "prefix": base + "/docs/", "delay_ms": 50, "timeout_ms": 1000},
		"sync":   map[string]any{"publish": true}}, &ds)

	first := a.runSync(ds.ID, nil)
	reasons := map[string]string{}
	for _, it := range first.Items {
		if it.Outcome == "failed" {
			reasons[strings.TrimPrefix(it.Key, base)] = it.Reason
		}
	}
	if first.Status != "completed" || first.Added != 5 || first.Failed != 6 {
		t.Fatalf("first web sync: %+v (failed: %v)", first, reasons)
	}
	for p, want := range map[string]string{"/docs/away": "outside the prefix", "/docs/slow": "within", "/docs/broken": "HTTP 500",
		"/docs/missing": "HTTP 404", "/docs/huge": "bytes", "/docs/private/p": "robots.txt"} {
		if !strings.Contains(reasons[p], want) {
			t.Errorf("%s: reason %q, want it to say %q", p, reasons[p], want)
		}
	}
	docs := a.siteDocs(site)
	if len(docs) != 5 || docs["Target"].ID == 0 || docs["Tagged"].ID == 0 {
		t.Fatalf("documents: %v", docs)
	}
	prov, _ := docs["Page B"].ParseMeta["sync"].(map[string]any)
	if docs["Page B"].ParseMeta == nil {
		var d syncedDoc
		a.admin("GET", fmt.Sprintf("/admin/api/v1/documents/%d", docs["Page B"].ID), nil, &d)
		prov, _ = d.ParseMeta["sync"].(map[string]any)
	}
	if prov["url"] != base+"/docs/b" || prov["type"] != "web" {
		t.Fatalf("provenance of page B: %v", prov)
	}

	// B changes, C vanishes; A is the same body, the ETag page answers 304.
	ws.set("/docs/b", htmlPage("Page B", "Second text."))
	ws.fail("/docs/c", 404)
	second := a.runSync(ds.ID, nil)
	if second.Updated != 1 || second.Deleted != 1 || second.Unchanged != 3 || second.Added != 0 || second.Failed != 6 {
		t.Fatalf("second web sync: %+v", second)
	}
	if ws.notModified.Load() == 0 {
		items, _ := a.d.DB.SyncItems(context.Background(), ds.ID, 0)
		t.Fatalf("the ETag page was not asked conditionally: %+v", items)
	}
	docs = a.siteDocs(site)
	if len(docs) != 4 || docs["Page C"].ID != 0 {
		t.Fatalf("documents after the second sync: %d", len(docs))
	}
	var bdoc syncedDoc
	a.admin("GET", fmt.Sprintf("/admin/api/v1/documents/%d", docs["Page B"].ID), nil, &bdoc)
	if !strings.Contains(bdoc.Content, "Second text") {
		t.Fatalf("page B: %q", bdoc.Content)
	}

	// A start page: links under the prefix are followed, up to max_pages.
	ws.set("/site/index", htmlPage("Index", "Start here.", "/site/one", "/site/two", "/outside", "#top"))
	ws.set("/site/one", htmlPage("One", "First.", "/site/three", "/site/index"))
	ws.set("/site/two", htmlPage("Two", "Second."))
	ws.set("/site/three", htmlPage("Three", "Third."))
	other := a.site("Crawled")
	var crawl struct {
		ID int64 `json:"id"`
	}
	a.admin("POST", "/admin/api/v1/data-sources", map[string]any{"name": "Crawl", "type": "web", "site_id": other,
		"config": map[string]any{"url": base + "/site/index", "max_pages": 3, "delay_ms": 50}}, &crawl)
	run := a.runSync(crawl.ID, nil)
	if run.Added != 3 || run.Failed != 0 {
		t.Fatalf("crawl: %+v", run)
	}
	got := a.siteDocs(other)
	if got["Index"].ID == 0 || got["One"].ID == 0 || got["Two"].ID == 0 || len(got) != 3 {
		t.Fatalf("crawled documents: %v", got)
	}
}
