package api

import (
	"bytes"
	"context"
	"fmt"
	"mime/multipart"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/blob"
	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/models"
)

// fileHarness is a harness whose server stores files in a local directory
// store, as deps.Open would configure it.
func fileHarness(t *testing.T, dialect string, env map[string]string) *harness {
	t.Helper()
	h := newHarness(t, dialect, env)
	store, err := deps.OpenBlob(context.Background(), h.d.Cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.d.Blob = store
	return h
}

// eachFileDialect runs fn on both dialects with a file harness.
func eachFileDialect(t *testing.T, env map[string]string, fn func(t *testing.T, h *harness)) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) { fn(t, fileHarness(t, dialect, env)) })
	}
}

// upPart is one file of a multipart body.
type upPart struct {
	field, filename string
	content         []byte
}

// multipartBody builds a multipart/form-data body of files and form values.
func multipartBody(t *testing.T, parts []upPart, values map[string]string) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for k, v := range values {
		if err := w.WriteField(k, v); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range parts {
		hdr := textproto.MIMEHeader{}
		hdr.Set("Content-Disposition", fmt.Sprintf(`form-data; name="%s"; filename="%s"`, p.field, p.filename))
		hdr.Set("Content-Type", "application/octet-stream")
		fw, err := w.CreatePart(hdr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fw.Write(p.content)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), w.FormDataContentType()
}

// upload posts files to an admin upload route.
func (h *harness) upload(path, token string, parts []upPart, values map[string]string) *resp {
	h.t.Helper()
	body, ct := multipartBody(h.t, parts, values)
	return h.do("POST", adminPath+path, body, token, "Content-Type", ct)
}

// storedObjects lists every object of the store.
func storedObjects(t *testing.T, h *harness) []string {
	t.Helper()
	items, err := h.d.Blob.List(context.Background(), "", true)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, it := range items {
		names = append(names, it.Name)
	}
	return names
}

var uuidName = regexp.MustCompile(`^uploads/[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\.pdf$`)

func TestFileUploadRoundTrip(t *testing.T) {
	eachFileDialect(t, nil, func(t *testing.T, h *harness) {
		content := []byte("%PDF-1.4 résumé body \x00\x01 binary")
		orig := "报告 résumé.PDF"
		r := h.upload("/files:upload", h.admin, []upPart{{"file", orig, content}}, nil)
		if r.Status != 200 {
			t.Fatalf("upload: %d %s", r.Status, r.Raw)
		}
		var up FileUploadResult
		r.into(t, &up)
		if !uuidName.MatchString(up.ObjectName) || up.OriginalFilename != orig || up.Size != int64(len(content)) ||
			up.ContentType != "application/pdf" || up.URL != "http://127.0.0.1:8080/v1/files/"+up.ObjectName+":download" ||
			objectFromAssetURL(up.URL) != up.ObjectName {
			t.Fatalf("upload result: %+v", up)
		}
		if got := strings.Join(storedObjects(t, h), ","); got != up.ObjectName {
			t.Fatalf("stored %q", got)
		}

		// list
		var pg Page[FileItem]
		h.must(200, "GET", adminPath+"/files:list?prefix=uploads/", nil, h.admin).into(t, &pg)
		if pg.Pagination.Total != 1 || pg.List[0].ObjectName != up.ObjectName || pg.List[0].Size != up.Size ||
			pg.List[0].ETag == "" || pg.List[0].LastModified == nil || pg.List[0].URL == "" ||
			pg.List[0].ContentType != "application/pdf" {
			t.Fatalf("list: %s", r.Data)
		}
		h.must(200, "GET", adminPath+"/files:list?prefix=other/", nil, h.admin).into(t, &pg)
		if pg.Pagination.Total != 0 || pg.List == nil {
			t.Fatalf("other prefix: %+v", pg)
		}
		h.must(200, "GET", adminPath+"/files:list?recursive=false", nil, h.admin).into(t, &pg)
		if pg.Pagination.Total != 0 {
			t.Fatalf("non-recursive root: %+v", pg)
		}
		h.must(422, "GET", adminPath+"/files:list?recursive=maybe", nil, h.admin)
		h.must(422, "GET", adminPath+"/files:list?size=101", nil, h.admin)

		// info: admin sees who uploaded, the client does not
		var info FileInfo
		h.must(200, "GET", adminPath+"/files/"+up.ObjectName+":info", nil, h.admin).into(t, &info)
		if info.ObjectName != up.ObjectName || info.Size != up.Size || info.Metadata["original_filename"] != orig ||
			info.Metadata["uploaded_by_id"] == "" || !strings.Contains(info.Metadata["uploaded_by_email"], "@example.com") ||
			info.ContentType != "application/pdf" || info.LastModified == nil || info.ETag == "" {
			t.Fatalf("admin info: %+v", info)
		}
		r = h.must(200, "GET", clientPath+"/files/"+up.ObjectName+":info", nil, "")
		r.into(t, &info)
		if strings.Contains(string(r.Raw), "uploaded_by") || info.Metadata["original_filename"] != orig {
			t.Fatalf("client info: %s", r.Raw)
		}

		// download: same bytes, type and the UTF-8 filename
		for _, p := range []string{adminPath, clientPath, "/api/v1"} {
			tok := ""
			if p == adminPath {
				tok = h.admin
			}
			r = h.must(200, "GET", p+"/files/"+up.ObjectName+":download", nil, tok)
			if !bytes.Equal(r.Raw, content) || r.Header.Get("Content-Type") != "application/pdf" {
				t.Fatalf("%s download: %q %q", p, r.Raw, r.Header.Get("Content-Type"))
			}
			cd := r.Header.Get("Content-Disposition")
			if !strings.HasPrefix(cd, "attachment;") || !strings.Contains(cd, "filename*=UTF-8''"+url.PathEscape(orig)) {
				t.Fatalf("content-disposition %q", cd)
			}
		}

		// a named folder; editors may not upload; no token → 401
		r = h.upload("/files:upload?folder=docs/2024", h.admin, []upPart{{"file", "a.md", []byte("# hi")}}, nil)
		r.into(t, &up)
		if r.Status != 200 || !strings.HasPrefix(up.ObjectName, "docs/2024/") || !strings.HasSuffix(up.ObjectName, ".md") {
			t.Fatalf("folder upload: %s", r.Raw)
		}
		r = h.upload("/files:upload?folder=ignored", h.admin, []upPart{{"file", "b.txt", []byte("b")}}, map[string]string{"folder": "form/wins/"})
		r.into(t, &up)
		if !strings.HasPrefix(up.ObjectName, "form/wins/") {
			t.Fatalf("form folder: %s", r.Raw)
		}
		editor := h.userToken(models.RoleEditor)
		if r := h.upload("/files:upload", editor, []upPart{{"file", "a.md", []byte("x")}}, nil); r.Status != 403 {
			t.Fatalf("editor upload: %d", r.Status)
		}
		if r := h.upload("/files:upload", "", []upPart{{"file", "a.md", []byte("x")}}, nil); r.Status != 401 {
			t.Fatalf("anonymous upload: %d", r.Status)
		}
		h.must(401, "GET", adminPath+"/files:list", nil, "")

		// delete
		name := up.ObjectName
		h.must(200, "DELETE", adminPath+"/files/"+name, nil, h.admin)
		h.must(404, "GET", adminPath+"/files/"+name+":info", nil, h.admin)
		h.must(404, "GET", clientPath+"/files/"+name+":download", nil, "")
		h.must(404, "DELETE", adminPath+"/files/"+name, nil, h.admin)
	})
}

func TestFileUploadLimitsAndBatch(t *testing.T) {
	eachFileDialect(t, map[string]string{"LORE_UPLOAD_MAX_BYTES": "1024"}, func(t *testing.T, h *harness) {
		r := h.upload("/files:upload", h.admin, []upPart{{"file", "big.txt", bytes.Repeat([]byte("x"), 2048)}}, nil)
		if r.Status != 400 || r.Code != 400 || !strings.Contains(r.Msg, "too large") || !strings.Contains(r.Msg, "1024") {
			t.Fatalf("too large: %d %s", r.Status, r.Raw)
		}
		r = h.upload("/files:upload", h.admin, []upPart{{"file", "run.exe", []byte("MZ")}}, nil)
		if r.Status != 400 || !strings.Contains(r.Msg, "not allowed") || !strings.Contains(r.Msg, ".exe") {
			t.Fatalf("bad extension: %d %s", r.Status, r.Raw)
		}
		r = h.upload("/files:upload", h.admin, []upPart{{"file", "README", []byte("x")}}, nil)
		if r.Status != 400 || !strings.Contains(r.Msg, "no extension") {
			t.Fatalf("no extension: %d %s", r.Status, r.Raw)
		}
		r = h.upload("/files:upload", h.admin, []upPart{{"other", "a.txt", []byte("x")}}, nil)
		if r.Status != 422 || !strings.Contains(r.Msg, "file") {
			t.Fatalf("missing file field: %d %s", r.Status, r.Raw)
		}
		h.must(422, "POST", adminPath+"/files:upload", map[string]string{"file": "x"}, h.admin)
		if got := storedObjects(t, h); len(got) != 0 {
			t.Fatalf("refused uploads stored %v", got)
		}

		// batch: one bad extension, one too large, two good ones
		r = h.upload("/files:batchUpload", h.admin, []upPart{
			{"files", "a.txt", []byte("alpha")},
			{"files", "b.exe", []byte("MZ")},
			{"files", "c.md", []byte("# c")},
			{"files", "d.png", bytes.Repeat([]byte("p"), 1025)},
		}, map[string]string{"folder": "batch"})
		if r.Status != 200 {
			t.Fatalf("batch: %d %s", r.Status, r.Raw)
		}
		var b BatchUploadResult
		r.into(t, &b)
		if b.SuccessCount != 2 || b.ErrorCount != 2 || len(b.Results) != 2 || len(b.Errors) != 2 ||
			b.Errors[0].Filename != "b.exe" || !strings.Contains(b.Errors[0].Error, "not allowed") ||
			b.Errors[1].Filename != "d.png" || !strings.Contains(b.Errors[1].Error, "too large") ||
			b.Results[0].OriginalFilename != "a.txt" || !strings.HasPrefix(b.Results[1].ObjectName, "batch/") {
			t.Fatalf("batch result: %s", r.Data)
		}
		if got := storedObjects(t, h); len(got) != 2 {
			t.Fatalf("batch stored %v", got)
		}
		r = h.upload("/files:batchUpload", h.admin, []upPart{{"file", "a.txt", []byte("x")}}, nil)
		if r.Status != 422 || !strings.Contains(r.Msg, "files") {
			t.Fatalf("batch without files: %d %s", r.Status, r.Raw)
		}
		r = h.upload("/files:batchUpload", h.admin, []upPart{{"files", "a.txt", []byte("x")}}, map[string]string{"folder": "../up"})
		if r.Status != 400 {
			t.Fatalf("batch bad folder: %d %s", r.Status, r.Raw)
		}
		if got := storedObjects(t, h); len(got) != 2 {
			t.Fatalf("refused batch stored %v", got)
		}
	})
}

func TestFilePresignedURLRange(t *testing.T) {
	eachFileDialect(t, nil, func(t *testing.T, h *harness) {
		var up FileUploadResult
		h.upload("/files:upload", h.admin, []upPart{{"file", "p.png", []byte("png")}}, nil).into(t, &up)
		admin := adminPath + "/files/" + up.ObjectName + ":presignedUrl"
		client := clientPath + "/files/" + up.ObjectName + ":presignedUrl"

		var pu PresignedURL
		h.must(200, "GET", admin, nil, h.admin).into(t, &pu)
		if pu.ExpiresHours != 1 || pu.ObjectName != up.ObjectName || !strings.Contains(pu.URL, "sig=") {
			t.Fatalf("default: %+v", pu)
		}
		h.must(200, "GET", admin+"?expires_hours=168", nil, h.admin).into(t, &pu)
		exp := mustExpiry(t, pu.URL)
		if pu.ExpiresHours != 168 || exp.Before(time.Now().Add(167*time.Hour)) || exp.After(time.Now().Add(169*time.Hour)) {
			t.Fatalf("168h: %+v (expires %v)", pu, exp)
		}
		for _, q := range []string{"0", "169", "-1", "abc", "1.5"} {
			r := h.must(422, "GET", admin+"?expires_hours="+q, nil, h.admin)
			if !strings.Contains(r.Msg, "expires_hours") {
				t.Fatalf("admin %s: %s", q, r.Msg)
			}
		}
		var cu ClientPresignedURL
		r := h.must(200, "GET", client+"?expires_hours=24", nil, "")
		r.into(t, &cu)
		if cu.ObjectName != up.ObjectName || strings.Contains(string(r.Data), "expires_hours") {
			t.Fatalf("client: %s", r.Data)
		}
		if exp := mustExpiry(t, cu.URL); exp.After(time.Now().Add(25 * time.Hour)) {
			t.Fatalf("client expiry %v", exp)
		}
		for _, q := range []string{"0", "25", "168"} {
			r := h.must(422, "GET", client+"?expires_hours="+q, nil, "")
			if !strings.Contains(r.Msg, "expires_hours") {
				t.Fatalf("client %s: %s", q, r.Msg)
			}
		}
		h.must(404, "GET", adminPath+"/files/uploads/missing.png:presignedUrl", nil, h.admin)
		h.must(404, "GET", clientPath+"/files/uploads/missing.png:presignedUrl", nil, "")
	})
}

func mustExpiry(t *testing.T, raw string) time.Time {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	var sec int64
	if _, err := fmt.Sscan(u.Query().Get("expires"), &sec); err != nil {
		t.Fatalf("no expires in %s", raw)
	}
	return time.Unix(sec, 0)
}

func TestFileTraversalNamesRefused(t *testing.T) {
	eachFileDialect(t, nil, func(t *testing.T, h *harness) {
		// jwt.secret is a real file beside the store that a traversal would reach.
		names := []string{
			"../x", "..%2fx", "%2e%2e%2fx", "%2e%2e/x", "uploads/../../jwt.secret", "uploads/%2e%2e/%2e%2e/jwt.secret",
			"/etc/passwd", "%2Fetc%2Fpasswd", "a%00b", "uploads/a%00.png", "%252e%252e%252fx", "..", "uploads//x",
			"C:%5Cwindows", "uploads%5C..%5C..%5Cjwt.secret", ".lore-meta/x",
		}
		for _, n := range names {
			for _, tc := range []struct{ method, path, token string }{
				{"GET", adminPath + "/files/" + n + ":info", h.admin},
				{"GET", adminPath + "/files/" + n + ":download", h.admin},
				{"GET", adminPath + "/files/" + n + ":presignedUrl", h.admin},
				{"DELETE", adminPath + "/files/" + n, h.admin},
				{"GET", clientPath + "/files/" + n + ":info", ""},
				{"GET", clientPath + "/files/" + n + ":download", ""},
				{"GET", clientPath + "/files/" + n + ":presignedUrl", ""},
				{"GET", clientPath + "/files-signed/" + n + "?expires=9999999999&sig=00", ""},
			} {
				r := h.do(tc.method, tc.path, nil, tc.token)
				if r.Status != 400 || r.Code != 400 {
					t.Errorf("%s %s: %d %s", tc.method, tc.path, r.Status, r.Raw)
				}
			}
		}
		for _, folder := range []string{"../evil", "%2e%2e", "/abs", "a\x00b", "uploads/../x", ".lore-meta", "a//b", `..\x`, "."} {
			r := h.upload("/files:upload", h.admin, []upPart{{"file", "a.txt", []byte("x")}}, map[string]string{"folder": folder})
			if r.Status != 400 || !strings.Contains(r.Msg, "folder") {
				t.Errorf("folder %q: %d %s", folder, r.Status, r.Raw)
			}
		}
		h.must(400, "GET", adminPath+"/files:list?prefix=../", nil, h.admin)
		h.must(400, "GET", adminPath+"/files:list?prefix=%2e%2e%2f", nil, h.admin)
		if got := storedObjects(t, h); len(got) != 0 {
			t.Fatalf("refused requests stored %v", got)
		}
	})
}

func TestFileSignedURLThroughApp(t *testing.T) {
	eachFileDialect(t, nil, func(t *testing.T, h *harness) {
		content := []byte("<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>")
		var up FileUploadResult
		h.upload("/files:upload", h.admin, []upPart{{"file", "logo één.svg", content}}, nil).into(t, &up)
		// The upload's own URL is the stable download route (an editor embeds
		// it); signed URLs come from the store, as :presignedUrl gives them.
		stable := h.must(200, "GET", strings.TrimPrefix(up.URL, "http://127.0.0.1:8080"), nil, "")
		if !bytes.Equal(stable.Raw, content) || !strings.Contains(stable.Header.Get("Content-Security-Policy"), "sandbox") {
			t.Fatalf("stable URL %s: %q %v", up.URL, stable.Raw, stable.Header)
		}
		signed, err := h.d.Blob.URL(context.Background(), up.ObjectName, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		up.URL = signed
		u, err := url.Parse(up.URL)
		if err != nil || u.Path != deps.SignedFilesPath+"/"+up.ObjectName {
			t.Fatalf("url %q", up.URL)
		}
		// valid → the bytes, sandboxed inline
		r := h.must(200, "GET", u.RequestURI(), nil, "")
		if !bytes.Equal(r.Raw, content) || !strings.Contains(r.Header.Get("Content-Security-Policy"), "sandbox") ||
			r.Header.Get("X-Content-Type-Options") != "nosniff" || !strings.HasPrefix(r.Header.Get("Content-Disposition"), "inline") {
			t.Fatalf("signed fetch: %q %v", r.Raw, r.Header)
		}
		h.must(200, "GET", "/api"+u.RequestURI(), nil, "")

		q := u.Query()
		sig, exp := q.Get("sig"), q.Get("expires")
		flip := func(s string) string {
			b := []byte(s)
			if b[0] == 'a' {
				b[0] = 'b'
			} else {
				b[0] = 'a'
			}
			return string(b)
		}
		base := deps.SignedFilesPath + "/" + up.ObjectName
		for _, bad := range []string{
			base + "?expires=" + exp + "&sig=" + flip(sig),
			base + "?expires=" + fmt.Sprint(mustExpiry(t, up.URL).Unix()+3600) + "&sig=" + sig,
			base + "?expires=" + exp,
			base + "?sig=" + sig,
			deps.SignedFilesPath + "/uploads/other.svg?expires=" + exp + "&sig=" + sig,
		} {
			r := h.do("GET", bad, nil, "")
			if r.Status != 403 || r.Code != 403 {
				t.Fatalf("tampered %s: %d %s", bad, r.Status, r.Raw)
			}
		}
		// expired → 403
		short, err := h.d.Blob.URL(context.Background(), up.ObjectName, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(2100 * time.Millisecond)
		su, _ := url.Parse(short)
		r = h.must(403, "GET", su.RequestURI(), nil, "")
		if !strings.Contains(r.Msg, "expired") {
			t.Fatalf("expired: %s", r.Raw)
		}
		// a store that is not local has no signed route
		h.d.Blob = otherStore{h.d.Blob}
		h.must(404, "GET", u.RequestURI(), nil, "")
	})
}

// otherStore hides the local store's type, as a MinIO store would.
type otherStore struct{ blob.Store }

func TestFilesOfSites(t *testing.T) {
	eachFileDialect(t, nil, func(t *testing.T, h *harness) {
		open := saSite(h, "open")
		locked := saSite(h, "locked")
		other := saSite(h, "other")
		h.must(200, "PUT", adminPath+"/sites/"+itoa(locked.ID)+"/password", map[string]string{"password": "letmein"}, h.admin)

		var inOpen, inLocked, inOther FileUploadResult
		h.upload("/files:upload", h.admin, []upPart{{"file", "o.txt", []byte("open")}}, map[string]string{"folder": "sites/" + itoa(open.ID)}).into(t, &inOpen)
		h.upload("/files:upload", h.admin, []upPart{{"file", "l.txt", []byte("locked")}}, map[string]string{"folder": "sites/" + itoa(locked.ID) + "/img"}).into(t, &inLocked)
		h.upload("/files:upload", h.admin, []upPart{{"file", "x.txt", []byte("other")}}, map[string]string{"folder": "sites/" + itoa(other.ID)}).into(t, &inOther)
		if r := h.upload("/files:upload", h.admin, []upPart{{"file", "x.txt", []byte("x")}}, map[string]string{"folder": "sites/999"}); r.Status != 400 {
			t.Fatalf("unknown site folder: %d", r.Status)
		}

		// client reads of a protected site's files need its token
		h.must(200, "GET", clientPath+"/files/"+inOpen.ObjectName+":download", nil, "")
		r := h.must(401, "GET", clientPath+"/files/"+inLocked.ObjectName+":download", nil, "")
		if r.Msg != "site access token required" {
			t.Fatalf("msg %q", r.Msg)
		}
		h.must(401, "GET", clientPath+"/files/"+inLocked.ObjectName+":info", nil, "")
		h.must(401, "GET", clientPath+"/files/"+inLocked.ObjectName+":presignedUrl", nil, "")
		tok := saToken(h, locked.Slug, "letmein")
		r = h.must(200, "GET", clientPath+"/files/"+inLocked.ObjectName+":download", nil, "", SiteAccessHeader, tok)
		if string(r.Raw) != "locked" {
			t.Fatalf("download with token: %q", r.Raw)
		}
		var cu ClientPresignedURL
		h.must(200, "GET", clientPath+"/files/"+inLocked.ObjectName+":presignedUrl", nil, "", SiteAccessHeader, tok).into(t, &cu)
		su, _ := url.Parse(cu.URL)
		h.must(200, "GET", su.RequestURI(), nil, "") // the signature is the authorisation
		// an inactive site's files are gone for clients
		h.setSite(open.ID, "status = ?", models.SiteInactive)
		h.must(404, "GET", clientPath+"/files/"+inOpen.ObjectName+":info", nil, "")

		// a site admin manages its sites' files only
		sa := h.userToken(models.RoleSiteAdmin, locked.ID)
		var pg Page[FileItem]
		h.must(200, "GET", adminPath+"/files:list", nil, sa).into(t, &pg)
		if pg.Pagination.Total != 1 || pg.List[0].ObjectName != inLocked.ObjectName {
			t.Fatalf("site admin list: %+v", pg)
		}
		h.must(200, "GET", adminPath+"/files/"+inLocked.ObjectName+":info", nil, sa)
		// Another site's files are answered as missing ones.
		h.must(404, "GET", adminPath+"/files/"+inOther.ObjectName+":info", nil, sa)
		h.must(404, "DELETE", adminPath+"/files/"+inOther.ObjectName, nil, sa)
		if r := h.upload("/files:upload", sa, []upPart{{"file", "x.txt", []byte("x")}}, map[string]string{"folder": "sites/" + itoa(other.ID)}); r.Status != 400 {
			t.Fatalf("upload into another site: %d", r.Status)
		}
		h.must(200, "GET", adminPath+"/files:list", nil, h.admin).into(t, &pg)
		if pg.Pagination.Total != 3 {
			t.Fatalf("admin list: %+v", pg)
		}
	})
}

func TestFilesWithoutConfiguredStore(t *testing.T) {
	// Deps built by hand (no Blob): the store deps.OpenBlob picks is used.
	h := newHarness(t, "sqlite", nil)
	var up FileUploadResult
	h.upload("/files:upload", h.admin, []upPart{{"file", "a.txt", []byte("fallback")}}, nil).into(t, &up)
	u, _ := url.Parse(up.URL)
	if r := h.must(200, "GET", u.RequestURI(), nil, ""); string(r.Raw) != "fallback" {
		t.Fatalf("signed fetch %q", r.Raw)
	}
	if _, err := os.Stat(filepath.Join(h.d.Cfg.DataDir, "files", up.ObjectName)); err != nil {
		t.Fatalf("not under the data dir: %v", err)
	}
}
