package e2e

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/lorekb/lore/internal/convert/converttest"
	"github.com/lorekb/lore/internal/testenv"
)

// uploadTo posts one file to a data source.
func (a *app) uploadTo(ds int64, prefix, name string, data []byte, token string) *resp {
	a.t.Helper()
	return a.multipart(fmt.Sprintf("/admin/api/v1/data-sources/%d/upload", ds), map[string]string{"prefix": prefix}, "file",
		[]upload{{name, data}}, token)
}

type dsView struct {
	ID     int64          `json:"id"`
	SiteID *int64         `json:"site_id"`
	Type   string         `json:"type"`
	Config map[string]any `json:"config"`
}

type entry struct {
	Name string `json:"name"`
	Path string `json:"path"`
	Type string `json:"type"`
	Size *int64 `json:"size"`
}

// TestDataSources: an internal data source of a site and an external bucket
// on a real MinIO server, managed through the API (upload, browse, delete),
// scoped to the site's administrators, secrets masked, then imported from:
// each file one document.
func TestDataSources(t *testing.T) {
	srv, err := testenv.StartMinio()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	mc, _ := srv.Client()
	if err := mc.MakeBucket(context.Background(), "team-docs", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	// Files already in the external bucket, under the data source's prefix.
	for name, data := range map[string][]byte{"exports/guide.docx": converttest.DOCX(), "exports/deep/report.pdf": converttest.PDF(""),
		"outside.md": []byte("# Outside the prefix\n")} {
		if _, err := mc.PutObject(context.Background(), "team-docs", name, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The test bucket is on loopback, which the outbound guard refuses
	// unless allowed.
	a := newApp(t, "postgres", map[string]string{"LORE_ALLOWED_PROVIDER_HOSTS": "127.0.0.1"})
	site, other := a.site("DS site"), a.site("DS other")
	sa := a.siteAdmin("dsa@e2e.test", site)

	// A site administrator creates an internal data source of their site;
	// not one of another site, nor a tenant-wide one.
	var internal dsView
	a.do("POST", "/admin/api/v1/data-sources", map[string]any{"name": "Uploads", "type": "internal", "site_id": site}, sa).into(t, &internal)
	if r := a.do("POST", "/admin/api/v1/data-sources", map[string]any{"name": "X", "type": "internal", "site_id": other}, sa); r.Status != 400 {
		t.Fatalf("data source on another site: %d %s", r.Status, r.Raw)
	}
	if r := a.do("POST", "/admin/api/v1/data-sources", map[string]any{"name": "X", "type": "internal"}, sa); r.Status != 422 {
		t.Fatalf("tenant-wide data source by a site admin: %d %s", r.Status, r.Raw)
	}
	// The admin adds the external bucket (tenant-wide); a wrong secret or a
	// missing bucket is refused when created.
	cfg := map[string]any{"endpoint": "http://" + srv.Addr, "bucket": "team-docs", "prefix": "exports/",
		"access_key": testenv.MinioUser, "secret_key": testenv.MinioPassword}
	for _, bad := range []map[string]any{{"secret_key": "wrong-secret-123"}, {"bucket": "no-such-bucket"}, {"endpoint": "ftp://x"}, {"prefix": "../"}} {
		c := map[string]any{}
		for k, v := range cfg {
			c[k] = v
		}
		for k, v := range bad {
			c[k] = v
		}
		if r := a.do("POST", "/admin/api/v1/data-sources", map[string]any{"name": "Bad", "type": "s3", "config": c}, a.token); r.Status < 400 || r.Status >= 500 {
			t.Fatalf("bad config %v: %d %s", bad, r.Status, r.Raw)
		}
	}
	var ext dsView
	a.admin("POST", "/admin/api/v1/data-sources", map[string]any{"name": "Team bucket", "type": "s3", "config": cfg}, &ext)
	if s, _ := ext.Config["secret_key"].(string); !strings.Contains(s, "****") || strings.Contains(s, testenv.MinioPassword) {
		t.Fatalf("secret not masked: %v", ext.Config)
	}
	// The site administrator sees their data source only.
	var list []dsView
	a.do("GET", "/admin/api/v1/data-sources", nil, sa).into(t, &list)
	if len(list) != 1 || list[0].ID != internal.ID {
		t.Fatalf("site admin lists %+v", list)
	}
	if r := a.do("GET", fmt.Sprintf("/admin/api/v1/data-sources/%d/browse", ext.ID), nil, sa); r.Status != 404 {
		t.Fatalf("site admin browses the tenant bucket: %d", r.Status)
	}
	// Update: a masked secret keeps the stored one; a new endpoint needs it again.
	a.admin("PUT", fmt.Sprintf("/admin/api/v1/data-sources/%d", ext.ID), map[string]any{"name": "Team", "config": map[string]any{"secret_key": ext.Config["secret_key"]}}, nil)
	if r := a.do("PUT", fmt.Sprintf("/admin/api/v1/data-sources/%d", ext.ID), map[string]any{"config": map[string]any{"endpoint": "http://127.0.0.1:1"}}, a.token); r.Status != 422 {
		t.Fatalf("new endpoint without the secret: %d %s", r.Status, r.Raw)
	}

	// Browse the bucket under its prefix: folders first, nothing outside.
	var pg struct {
		List []entry `json:"list"`
	}
	a.admin("GET", fmt.Sprintf("/admin/api/v1/data-sources/%d/browse", ext.ID), nil, &pg)
	if len(pg.List) != 2 || pg.List[0].Type != "dir" || pg.List[0].Path != "deep/" || pg.List[1].Path != "guide.docx" {
		t.Fatalf("browse: %+v", pg.List)
	}
	// Upload into both, then delete one file again.
	for _, up := range []struct {
		ds    int64
		token string
	}{{internal.ID, sa}, {ext.ID, a.token}} {
		if r := a.uploadTo(up.ds, "notes/", "install.md", []byte("# Install\n\nRun it.\n"), up.token); r.Status != 200 {
			t.Fatalf("upload: %d %s", r.Status, r.Raw)
		}
		if r := a.uploadTo(up.ds, "notes/", "tmp.txt", []byte("scratch"), up.token); r.Status != 200 {
			t.Fatalf("upload: %d %s", r.Status, r.Raw)
		}
		if r := a.do("DELETE", fmt.Sprintf("/admin/api/v1/data-sources/%d/files?key=notes/tmp.txt", up.ds), nil, up.token); r.Status != 200 {
			t.Fatalf("delete file: %d %s", r.Status, r.Raw)
		}
		if r := a.do("DELETE", fmt.Sprintf("/admin/api/v1/data-sources/%d/files?key=notes/tmp.txt", up.ds), nil, up.token); r.Status != 404 {
			t.Fatalf("delete a missing file: %d %s", r.Status, r.Raw)
		}
		a.do("GET", fmt.Sprintf("/admin/api/v1/data-sources/%d/browse?prefix=notes/", up.ds), nil, up.token).into(t, &pg)
		if len(pg.List) != 1 || pg.List[0].Path != "notes/install.md" {
			t.Fatalf("browse notes/: %+v", pg.List)
		}
		for _, bad := range []string{"../x", "/etc/passwd", "a//b"} {
			if r := a.do("DELETE", fmt.Sprintf("/admin/api/v1/data-sources/%d/files?key=%s", up.ds, bad), nil, up.token); r.Status != 400 {
				t.Fatalf("delete %q: %d", bad, r.Status)
			}
		}
		if r := a.uploadTo(up.ds, "../", "x.md", []byte("x"), up.token); r.Status != 400 {
			t.Fatalf("upload with traversal prefix: %d %s", r.Status, r.Raw)
		}
	}

	// Import from the bucket and from the site's folder.
	imports := []struct {
		ds    int64
		token string
		keys  []string
		want  []string
	}{
		{ext.ID, a.token, []string{"guide.docx", "deep/report.pdf", "notes/install.md", "missing.md"}, []string{"Getting Started", "Quarterly Report", "Install", ""}},
		{internal.ID, sa, []string{"notes/install.md"}, []string{"Install"}},
	}
	for _, im := range imports {
		var tasks []struct {
			ID string `json:"id"`
		}
		r := a.do("POST", fmt.Sprintf("/admin/api/v1/data-sources/%d/import", im.ds), map[string]any{"keys": im.keys, "site_id": site, "publish": true}, im.token)
		if r.Status != 201 {
			t.Fatalf("import: %d %s", r.Status, r.Raw)
		}
		r.into(t, &tasks)
		if len(tasks) != 1 {
			t.Fatalf("tasks %s", r.Raw)
		}
		j := a.waitImport(tasks[0].ID, 2*time.Minute)
		for i, it := range j.Progress.Items {
			if im.want[i] == "" {
				if it.Status != "failed" || !strings.Contains(it.Reason, "no longer in the store") {
					t.Fatalf("missing key: %+v", it)
				}
				continue
			}
			if it.Status != "completed" || it.Title != im.want[i] {
				t.Fatalf("item %d: %+v", i, it)
			}
		}
	}
	if n := a.countDocs(site); n != 4 {
		t.Fatalf("%d documents, want 4", n)
	}
	// Refused: keys with traversal, another site for a site's data source,
	// an unknown data source.
	for _, c := range []struct {
		path string
		body map[string]any
		want int
	}{
		{fmt.Sprintf("/admin/api/v1/data-sources/%d/import", ext.ID), map[string]any{"keys": []string{"../etc/passwd"}, "site_id": site}, 400},
		{fmt.Sprintf("/admin/api/v1/data-sources/%d/import", internal.ID), map[string]any{"keys": []string{"notes/install.md"}, "site_id": other}, 400},
		{"/admin/api/v1/data-sources/987654/import", map[string]any{"keys": []string{"a.md"}, "site_id": site}, 404},
		{fmt.Sprintf("/admin/api/v1/data-sources/%d/import", ext.ID), map[string]any{"keys": []string{}, "site_id": site}, 422},
	} {
		if r := a.do("POST", c.path, c.body, a.token); r.Status != c.want {
			t.Fatalf("%s %v: %d %s, want %d", c.path, c.body, r.Status, r.Raw, c.want)
		}
	}
	// Deleting the internal data source removes its files.
	a.admin("DELETE", fmt.Sprintf("/admin/api/v1/data-sources/%d", internal.ID), nil, nil)
	infos, _ := a.d.Blob.List(context.Background(), fmt.Sprintf("sites/%d/datasources/", site), true)
	if len(infos) != 0 {
		t.Fatalf("files left: %v", infos)
	}
}
