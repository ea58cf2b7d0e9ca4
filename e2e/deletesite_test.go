package e2e

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/models"
)

func TestDeleteSiteWorkflowRemovesEverything(t *testing.T) {
	a := newApp(t, "postgres", nil)
	ctx := context.Background()
	site := a.site("Doomed")
	keep := a.site("Kept")
	doc := a.newDoc(site, "Doc", installDoc, "published")
	other := a.newDoc(keep, "Other", installDoc, "published")
	var parent, keptCol struct {
		ID int64 `json:"id"`
	}
	a.admin("POST", "/admin/api/v1/collections", map[string]any{"site_id": site, "title": "Guides"}, &parent)
	a.admin("POST", "/admin/api/v1/collections", map[string]any{"site_id": site, "title": "Deep", "parent_id": parent.ID}, nil)
	a.admin("POST", "/admin/api/v1/collections", map[string]any{"site_id": keep, "title": "Kept guides"}, &keptCol)
	a.waitStatus(doc, "completed")
	a.waitStatus(other, "completed")
	if _, err := a.d.Blob.Put(ctx, fmt.Sprintf("sites/%d/logo.png", site), bytes.NewReader([]byte("png")), 3, "image/png", nil); err != nil {
		t.Fatal(err)
	}
	_, _ = a.stream("POST", "/v1/chat/responses", map[string]any{"input": "install?", "stream": true, "filter": map[string]any{"site_id": site}})
	a.do("GET", fmt.Sprintf("/v1/documents/%d", doc), nil, "")

	var res struct {
		JobID string `json:"job_id"`
	}
	a.admin("DELETE", fmt.Sprintf("/admin/api/v1/sites/%d", site), nil, &res)
	if res.JobID != fmt.Sprintf("delete-site-%d", site) {
		t.Fatalf("job %q", res.JobID)
	}
	// Gone from both APIs at once.
	if r := a.do("GET", fmt.Sprintf("/v1/sites/%d", site), nil, ""); r.Status != 404 {
		t.Fatalf("client still sees the site: %d", r.Status)
	}
	if r := a.do("GET", fmt.Sprintf("/admin/api/v1/sites/%d", site), nil, a.token); r.Status != 404 {
		t.Fatalf("admin still sees the site: %d", r.Status)
	}
	eventually(t, 60*time.Second, "delete job completed", func() bool {
		var j struct {
			Status string `json:"status"`
		}
		a.admin("GET", "/admin/api/v1/jobs/"+res.JobID, nil, &j)
		return j.Status == "completed"
	})
	count := func(m any, where string) int {
		n, err := a.d.DB.NewSelect().Model(m).Where(where, site).Count(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return int(n)
	}
	left := map[string]int{
		"sites":         count((*models.Site)(nil), "id = ?"),
		"documents":     count((*models.Document)(nil), "site_id = ?"),
		"view_events":   count((*models.ViewEvent)(nil), "site_id = ?"),
		"chat_sessions": count((*models.ChatSession)(nil), "site_id = ?"),
		"collections":   count((*models.Collection)(nil), "site_id = ?"),
	}
	for k, n := range left {
		if n != 0 {
			t.Errorf("%d %s rows left", n, k)
		}
	}
	if a.chunks(doc) != 0 || a.chunks(other) == 0 {
		t.Fatalf("vectors: deleted site %d, kept site %d", a.chunks(doc), a.chunks(other))
	}
	files, _ := a.d.Blob.List(ctx, fmt.Sprintf("sites/%d/", site), true)
	if len(files) != 0 {
		t.Fatalf("files left: %v", files)
	}
	if r := a.do("GET", fmt.Sprintf("/admin/api/v1/sites/%d", keep), nil, a.token); r.Status != 200 || !strings.Contains(string(r.Raw), "Kept") {
		t.Fatalf("other site affected: %d", r.Status)
	}
	if r := a.do("GET", fmt.Sprintf("/admin/api/v1/collections/%d", keptCol.ID), nil, a.token); r.Status != 200 {
		t.Fatalf("other site's collection affected: %d", r.Status)
	}
}
