package api

import (
	"strings"
	"testing"

	"github.com/lorekb/lore/models"
)

// TestFilesOutsideSitesAreAdminOnly: an object outside sites/<id>/ (the
// default uploads/ folder) is not listed, read, presigned or deleted by a
// site admin (404, as a missing file), whose :info never shows the
// uploader's email; site admins upload into their sites' folders only (one
// site's admin without naming it: into that site's).
func TestFilesOutsideSitesAreAdminOnly(t *testing.T) {
	eachFileDialect(t, nil, func(t *testing.T, h *harness) {
		mine := saSite(h, "mine")
		var up, own FileUploadResult
		h.upload("/files:upload", h.admin, []upPart{{"file", "secret.txt", []byte("admin only")}}, nil).into(t, &up)
		if !strings.HasPrefix(up.ObjectName, defaultUploadFolder+"/") {
			t.Fatalf("default folder: %s", up.ObjectName)
		}
		sa := h.userToken(models.RoleSiteAdmin, mine.ID)
		h.upload("/files:upload", sa, []upPart{{"file", "own.txt", []byte("mine")}}, map[string]string{"folder": "sites/" + itoa(mine.ID)}).into(t, &own)

		var pg Page[FileItem]
		h.must(200, "GET", adminPath+"/files:list?prefix=uploads/", nil, sa).into(t, &pg)
		if pg.Pagination.Total != 0 {
			t.Fatalf("site admin lists %+v", pg.List)
		}
		h.must(200, "GET", adminPath+"/files:list", nil, sa).into(t, &pg)
		if pg.Pagination.Total != 1 || pg.List[0].ObjectName != own.ObjectName {
			t.Fatalf("site admin list: %+v", pg.List)
		}
		for _, rq := range [][2]string{{"GET", ":info"}, {"GET", ":download"}, {"GET", ":presignedUrl"}, {"DELETE", ""}} {
			r := h.must(404, rq[0], adminPath+"/files/"+up.ObjectName+rq[1], nil, sa)
			if strings.Contains(string(r.Raw), "@example.com") {
				t.Fatalf("%s leaks the uploader: %s", rq, r.Raw)
			}
		}
		// Without a site folder, a site admin's upload goes to its site.
		var def FileUploadResult
		h.upload("/files:upload", sa, []upPart{{"file", "x.txt", []byte("x")}}, nil).into(t, &def)
		if want := "sites/" + itoa(mine.ID) + "/" + defaultUploadFolder + "/"; !strings.HasPrefix(def.ObjectName, want) {
			t.Fatalf("site admin upload without a site folder: %s, want under %s", def.ObjectName, want)
		}
		// The admin still manages it; the object survived the attempts.
		h.must(200, "GET", adminPath+"/files/"+up.ObjectName+":info", nil, h.admin)
		h.must(200, "DELETE", adminPath+"/files/"+up.ObjectName, nil, h.admin)
	})
}
