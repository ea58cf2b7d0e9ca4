package api

import (
	"net/url"
	"strings"
	"testing"

	"github.com/lorekb/lore/models"
)

// TestReferenceAdminCoverUpload: the reference admin app uploads every cover
// with folder "covers" and no site. A site admin of one site gets it in that
// site's folder, a tenant admin in the tenant's; both can delete their old
// cover by the name the app derives from its URL, the file downloads from
// its URL, and neither reaches the other tenant's covers. A site admin of
// several sites must name one.
func TestReferenceAdminCoverUpload(t *testing.T) {
	h := newHarness(t, "sqlite", map[string]string{"LORE_PUBLIC_URL": "https://docs.example.com"})
	var site, second SiteResponse
	h.must(201, "POST", adminPath+"/sites", map[string]any{"name": "Covers"}, h.admin).into(t, &site)
	h.must(201, "POST", adminPath+"/sites", map[string]any{"name": "Second"}, h.admin).into(t, &second)
	siteAdmin := h.userToken(models.RoleSiteAdmin, site.ID)
	tenantA, adminA := newTenantAdmin(h, "acme")
	_, adminB := newTenantAdmin(h, "globex")
	png := []byte("\x89PNG\r\n\x1a\n" + strings.Repeat("x", 64))
	upload := func(tok string) FileUploadResult {
		t.Helper()
		var up FileUploadResult
		h.upload("/files:upload", tok, []upPart{{"file", "cover.png", png}}, map[string]string{"folder": "covers"}).into(t, &up)
		return up
	}
	derived := func(up FileUploadResult) string { // what ImageUpload's caller sends to delete it
		u, err := url.Parse(up.URL)
		if err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(strings.Trim(u.Path, "/"), "/")
		return strings.Join(parts[1:], "/")
	}

	sa := upload(siteAdmin)
	if want := "sites/" + itoa(site.ID) + "/covers/"; !strings.HasPrefix(sa.ObjectName, want) {
		t.Fatalf("site admin's cover %q, want under %s", sa.ObjectName, want)
	}
	a := upload(adminA)
	if want := "tenants/" + itoa(tenantA) + "/covers/"; !strings.HasPrefix(a.ObjectName, want) {
		t.Fatalf("tenant admin's cover %q, want under %s", a.ObjectName, want)
	}
	b := upload(adminB)
	if r := h.do("GET", "/v1/files/"+a.ObjectName+":download", nil, ""); r.Status != 200 || string(r.Raw) != string(png) {
		t.Fatalf("download of the tenant's cover: %d", r.Status)
	}
	// Another tenant's admin and a site admin cannot see or delete it; an
	// explicit folder in another tenant is refused.
	h.must(404, "DELETE", "/admin/v1/files/"+derived(a), nil, adminB)
	h.must(404, "GET", adminPath+"/files/"+a.ObjectName+":info", nil, siteAdmin)
	r := h.upload("/files:upload", adminB, []upPart{{"file", "cover.png", png}}, map[string]string{"folder": "tenants/" + itoa(tenantA) + "/covers"})
	if r.Status != 422 {
		t.Fatalf("upload into another tenant's folder: %d %s", r.Status, r.Raw)
	}
	var pg Page[FileItem]
	h.must(200, "GET", adminPath+"/files:list?prefix=tenants/", nil, adminB).into(t, &pg)
	if pg.Pagination.Total != 1 || pg.List[0].ObjectName != b.ObjectName {
		t.Fatalf("tenant B lists %+v", pg.List)
	}
	// Each deletes its own old cover the app's way.
	for _, c := range []struct {
		tok string
		up  FileUploadResult
	}{{siteAdmin, sa}, {adminA, a}} {
		var del FileDeleted
		h.must(200, "DELETE", "/admin/v1/files/"+derived(c.up), nil, c.tok).into(t, &del)
		if del.ObjectName != c.up.ObjectName {
			t.Fatalf("deleted %q, want %q", del.ObjectName, c.up.ObjectName)
		}
		h.must(404, "GET", adminPath+"/files/"+c.up.ObjectName+":info", nil, h.admin)
	}
	h.must(200, "GET", adminPath+"/files/"+b.ObjectName+":info", nil, h.admin)

	two := h.userToken(models.RoleSiteAdmin, site.ID, second.ID)
	if r := h.upload("/files:upload", two, []upPart{{"file", "cover.png", png}}, map[string]string{"folder": "covers"}); r.Status != 422 || !strings.Contains(r.Msg, "sites/") {
		t.Fatalf("site admin of two sites without a site folder: %d %s", r.Status, r.Raw)
	}
}
