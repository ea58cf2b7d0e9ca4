package api

import (
	"fmt"
	"strings"
	"testing"
)

// TestSyncDataSourceBadInput: git and web data sources refuse bad input
// with a clear 4xx before anything is stored or started, and without a
// workflow engine a sync or a schedule is a 503.
func TestSyncDataSourceBadInput(t *testing.T) {
	h := newHarness(t, "sqlite", map[string]string{"LORE_ALLOWED_PROVIDER_HOSTS": "127.0.0.1"})
	site := h.sitesNew(map[string]any{"name": "Synced"}).ID
	other := h.sitesNew(map[string]any{"name": "Other"}).ID
	web := func(cfg map[string]any, sync map[string]any) map[string]any {
		b := map[string]any{"name": "w", "type": "web", "site_id": site, "config": cfg}
		if sync != nil {
			b["sync"] = sync
		}
		return b
	}
	good := map[string]any{"url": "http://127.0.0.1:1/docs/sitemap.xml"}
	for name, c := range map[string]struct {
		body   map[string]any
		status int
		says   string
	}{
		"no site":             {map[string]any{"name": "g", "type": "web", "config": good}, 422, "site_id"},
		"git ftp url":         {map[string]any{"name": "g", "type": "git", "site_id": site, "config": map[string]any{"url": "ftp://x/r.git"}}, 422, "config.url"},
		"git plain http":      {map[string]any{"name": "g", "type": "git", "site_id": site, "config": map[string]any{"url": "http://git.example.com/r.git"}}, 422, "https"},
		"git bad branch":      {map[string]any{"name": "g", "type": "git", "site_id": site, "config": map[string]any{"url": "https://x/r.git", "branch": "a..b"}}, 422, "config.branch"},
		"git credentials":     {map[string]any{"name": "g", "type": "git", "site_id": site, "config": map[string]any{"url": "https://u:p@x/r.git"}}, 422, "credentials"},
		"unknown field":       {web(map[string]any{"url": "http://127.0.0.1:1/s.xml", "pages": 3}, nil), 422, "config"},
		"metadata":            {web(map[string]any{"url": "http://169.254.169.254/s.xml"}, nil), 422, "config.url"},
		"max_pages":           {web(map[string]any{"url": "http://127.0.0.1:1/s.xml", "max_pages": 100000}, nil), 422, "max_pages"},
		"delay":               {web(map[string]any{"url": "http://127.0.0.1:1/s.xml", "delay_ms": 1}, nil), 422, "delay_ms"},
		"start off prefix":    {web(map[string]any{"url": "http://127.0.0.1:1/a/start", "prefix": "http://127.0.0.1:1/b/"}, nil), 422, "prefix"},
		"bad schedule":        {web(good, map[string]any{"schedule": "every day"}), 422, "sync.schedule"},
		"short every":         {web(good, map[string]any{"schedule": "@every 5s"}), 422, "sync.schedule"},
		"collection of other": {web(good, map[string]any{"collection_id": 999999}), 400, "collection_id"},
		"share":               {web(good, map[string]any{"max_delete_share": 2}), 422, "max_delete_share"},
		"schedule no engine":  {web(good, map[string]any{"schedule": "@every 1h"}), 503, "workflow engine"},
		"sync on internal":    {map[string]any{"name": "i", "type": "internal", "site_id": site, "sync": map[string]any{"publish": true}}, 422, "sync"},
	} {
		r := h.do("POST", adminPath+"/data-sources", c.body, h.admin)
		if r.Status != c.status || !strings.Contains(strings.ToLower(string(r.Raw)), strings.ToLower(c.says)) {
			t.Errorf("%s: %d %s (want %d saying %q)", name, r.Status, r.Raw, c.status, c.says)
		}
	}
	var list []DataSource
	h.must(200, "GET", adminPath+"/data-sources", nil, h.admin).into(t, &list)
	if len(list) != 0 {
		t.Fatalf("stored after refusals: %+v", list)
	}
	var ds DataSource
	h.must(200, "POST", adminPath+"/data-sources", web(good, map[string]any{"publish": true}), h.admin).into(t, &ds)
	if ds.Sync == nil || !ds.Sync.Publish || ds.Sync.DeleteShare != 0.3 || ds.Config["max_pages"] != float64(200) {
		t.Fatalf("web data source: %+v %+v", ds, ds.Sync)
	}
	one := fmt.Sprintf("%s/data-sources/%d", adminPath, ds.ID)
	if r := h.do("POST", one+":sync", nil, h.admin); r.Status != 503 {
		t.Fatalf("sync without an engine: %d %s", r.Status, r.Raw)
	}
	if r := h.do("POST", one+"/import", map[string]any{"keys": []string{"a.md"}, "site_id": site}, h.admin); r.Status != 400 {
		t.Fatalf("import from a web data source: %d %s", r.Status, r.Raw)
	}
	if r := h.do("GET", one+"/browse", nil, h.admin); r.Status != 400 {
		t.Fatalf("browse a web data source: %d %s", r.Status, r.Raw)
	}
	h.must(200, "GET", one+"/syncs", nil, h.admin)
	// A site administrator of another site sees none of it.
	sa := h.userToken("site_admin", other)
	for _, p := range []string{one + "/syncs", one} {
		if r := h.do("GET", p, nil, sa); r.Status != 404 && r.Status != 405 {
			t.Errorf("%s as another site's admin: %d", p, r.Status)
		}
	}
	if r := h.do("POST", one+":sync", nil, sa); r.Status != 404 {
		t.Errorf("sync as another site's admin: %d", r.Status)
	}
}
