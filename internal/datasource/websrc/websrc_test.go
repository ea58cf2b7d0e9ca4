package websrc

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestGetConditional: the validators of the last sync are sent, and a 304
// reads as not modified with them kept.
func TestGetConditional(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", `"v1"`)
		_, _ = w.Write([]byte("<p>hi</p>"))
	}))
	defer srv.Close()
	f := &Fetcher{Client: srv.Client(), MaxBytes: 1 << 20, Timeout: 5 * time.Second, UserAgent: Agent}
	p, err := f.Get(context.Background(), srv.URL+"/x", "", "", srv.URL+"/")
	if err != nil || p.NotModified || p.ETag != `"v1"` || string(p.Body) != "<p>hi</p>" {
		t.Fatalf("first: %+v %v", p, err)
	}
	p, err = f.Get(context.Background(), srv.URL+"/x", p.ETag, "", srv.URL+"/")
	if err != nil || !p.NotModified || p.ETag != `"v1"` {
		t.Fatalf("second: %+v %v", p, err)
	}
}

func TestRobots(t *testing.T) {
	r := ParseRobots([]byte("User-agent: Googlebot\nDisallow: /\n\nUser-agent: *\nDisallow: /private\nAllow: /private/open\nCrawl-delay: 2\n"))
	for u, want := range map[string]bool{"https://x/a": true, "https://x/private/a": false, "https://x/private/open/b": true} {
		if got := r.Allowed(u); got != want {
			t.Errorf("%s: %v, want %v", u, got, want)
		}
	}
	if r.CrawlDelay != 2*time.Second {
		t.Errorf("crawl delay %s", r.CrawlDelay)
	}
	if (&Robots{Closed: "x"}).Allowed("https://x/a") {
		t.Error("a closed site allowed a page")
	}
}

func TestLinksStayUnderThePrefix(t *testing.T) {
	body := `<a href="/docs/a#x">a</a><a href="b">b</a><a href="/other">o</a><a href="mailto:x@y">m</a><a href="/docs/a">again</a>`
	got := Links([]byte(body), "https://s/docs/index", "https://s/docs/")
	if strings.Join(got, " ") != "https://s/docs/a https://s/docs/b" {
		t.Fatalf("links: %v", got)
	}
}

func TestSitemap(t *testing.T) {
	pages, maps, err := ParseSitemap([]byte(`<?xml version="1.0"?><urlset><url><loc> https://s/a </loc></url><url><loc>https://s/b</loc></url></urlset>`))
	if err != nil || len(pages) != 2 || pages[0] != "https://s/a" || len(maps) != 0 {
		t.Fatalf("%v %v %v", pages, maps, err)
	}
	if _, _, err := ParseSitemap([]byte("<html></html>")); err == nil {
		t.Fatal("an HTML page read as a sitemap")
	}
}
