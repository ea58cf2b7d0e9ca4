package api

import (
	"strings"
	"testing"
)

func TestClientListCacheDroppedByWrites(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		var site, doc struct {
			ID int64 `json:"id"`
		}
		h.must(201, "POST", "/admin/api/v1/sites", map[string]any{"name": "Cached"}, h.admin).into(t, &site)
		h.must(201, "POST", "/admin/api/v1/documents", map[string]any{"site_id": site.ID, "title": "Alpha guide", "content": "x", "status": "published"}, h.admin).into(t, &doc)
		path := "/v1/documents?site_id=" + itoa(site.ID) + "&keyword=guide&include_site_info=true"
		first := h.must(200, "GET", path, nil, "")
		if again := h.must(200, "GET", path, nil, ""); string(again.Raw) != string(first.Raw) {
			t.Fatal("cached list differs")
		}
		h.must(200, "PUT", "/admin/api/v1/documents/"+itoa(doc.ID), map[string]any{"title": "Beta guide"}, h.admin)
		if r := h.must(200, "GET", path, nil, ""); !strings.Contains(string(r.Raw), "Beta guide") {
			t.Fatalf("list still shows the old title: %s", r.Raw)
		}
		h.must(200, "PUT", "/admin/api/v1/sites/"+itoa(site.ID), map[string]any{"name": "Renamed site"}, h.admin)
		if r := h.must(200, "GET", path, nil, ""); !strings.Contains(string(r.Raw), "Renamed site") {
			t.Fatalf("list still shows the old site name: %s", r.Raw)
		}
		h.must(200, "PUT", "/admin/api/v1/sites/"+itoa(site.ID), map[string]any{"status": "inactive"}, h.admin)
		h.must(404, "GET", path, nil, "")
	})
}
