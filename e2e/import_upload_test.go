package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// formPart is one part of a hand-ordered multipart body: a field when data
// is a string, a file otherwise.
type formPart struct {
	field, file string
	data        []byte
}

// multipartOrdered posts the parts in the given order (a.multipart writes
// the fields first, then the files).
func (a *app) multipartOrdered(path string, parts []formPart, token string) *resp {
	a.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, p := range parts {
		if p.file == "" {
			_ = mw.WriteField(p.field, string(p.data))
			continue
		}
		w, _ := mw.CreateFormFile(p.field, p.file)
		_, _ = w.Write(p.data)
	}
	_ = mw.Close()
	req := httptest.NewRequest("POST", path, &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := a.srv.App().Test(req, -1)
	if err != nil {
		a.t.Fatal(err)
	}
	return readResp(res)
}

// storedUploads lists the objects under the site's import folders with their
// content.
func (a *app) storedUploads(site int64) map[string]string {
	a.t.Helper()
	ctx := context.Background()
	infos, err := a.d.Blob.List(ctx, fmt.Sprintf("sites/%d/imports/", site), true)
	if err != nil {
		a.t.Fatal(err)
	}
	out := map[string]string{}
	for _, in := range infos {
		rc, _, err := a.d.Blob.Get(ctx, in.Name)
		if err != nil {
			a.t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		out[in.Name] = string(b)
	}
	return out
}

// TestImportUploadStreamed: files sent after site_id are streamed into the
// import's folder and files sent before it are spooled first; a spooled file
// is stored alone under its index, small streamed files of a type the
// built-in converters read are stored together in a pack, a file over
// LORE_IMPORT_MAX_BYTES or of an unsupported type fails alone and is not
// stored, and fields sent after files still count.
func TestImportUploadStreamed(t *testing.T) {
	a := newApp(t, "sqlite", map[string]string{"LORE_IMPORT_MAX_BYTES": "1000"})
	site := a.site("Streamed")
	early := []byte("# Early\n\nSent before site_id.\n")
	first := []byte("# First\n\nStreamed.\n")
	last := []byte("# Last\n\nStreamed after a refused file.\n")
	big := bytes.Repeat([]byte("# big\n"), 200) // 1,200 bytes
	r := a.multipartOrdered("/admin/api/v1/documents:import", []formPart{
		{"files", "early.md", early},
		{"site_id", "", []byte(itoa(site))},
		{"files", "first.md", first},
		{"files", "big.md", big},
		{"file", "archive.zip", []byte("PK\x03\x04 not really")},
		{"files", "last.md", last},
		{"publish", "", []byte("true")}, // after the files: still read
	}, a.token)
	if r.Status != 201 {
		t.Fatalf("import: %d %s", r.Status, r.Raw)
	}
	var task struct {
		ID      string         `json:"id"`
		Payload map[string]any `json:"payload"`
	}
	r.into(t, &task)
	if task.Payload["status"] != "published" || task.Payload["rejected"] != float64(2) {
		t.Fatalf("payload %+v", task.Payload)
	}
	j := a.waitImport(task.ID, 2*time.Minute)
	want := []struct{ name, status, reason string }{
		{"early.md", "completed", ""}, {"first.md", "completed", ""},
		{"big.md", "failed", "big.md: the file is over the size limit: 1200 bytes, the limit is 1000"},
		{"archive.zip", "failed", "unsupported file type"}, {"last.md", "completed", ""},
	}
	if j.Status != "completed" || len(j.Progress.Items) != len(want) {
		t.Fatalf("job %s: %+v", j.Status, j.Progress)
	}
	for i, w := range want {
		it := j.Progress.Items[i]
		if it.Name != w.name || it.Status != w.status || !strings.Contains(it.Reason, w.reason) || (w.reason == "") != (it.DocumentID != 0) {
			t.Fatalf("item %d: %+v, want %+v", i, it, w)
		}
	}
	if n := a.countDocs(site); n != 3 {
		t.Fatalf("%d documents, want 3", n)
	}
	// Files failed, so the workflow keeps the uploads: exactly the accepted
	// ones, the spooled one alone, the two streamed ones in one pack.
	dir := fmt.Sprintf("sites/%d/imports/%s/src/", site, task.ID)
	got := a.storedUploads(site)
	exp := map[string]string{dir + "0.md": string(early), dir + "pack-0": string(first) + string(last)}
	if len(got) != len(exp) {
		t.Fatalf("stored %v, want %v", keys(got), keys(exp))
	}
	for k, v := range exp {
		if got[k] != v {
			t.Fatalf("stored %s = %q, want %q", k, got[k], v)
		}
	}
}

// TestImportUploadPacked: many small files of several types are stored as a
// few packs (at most 16 files each) and every file becomes the document of
// its own bytes, whatever its place in its pack.
func TestImportUploadPacked(t *testing.T) {
	a := newApp(t, "sqlite", nil)
	site := a.site("Packed")
	parts := []formPart{{"site_id", "", []byte(itoa(site))}}
	const n = 37
	for i := range n {
		name, body := fmt.Sprintf("f%02d.md", i), fmt.Sprintf("# Title %d\n\n%s\n", i, strings.Repeat(fmt.Sprintf("word%d ", i), i+1))
		if i%3 == 1 {
			name, body = fmt.Sprintf("f%02d.txt", i), fmt.Sprintf("Plain %d\n\n%s\n", i, strings.Repeat("x", i*97))
		}
		parts = append(parts, formPart{"files", name, []byte(body)})
	}
	// A corrupt file fails, so the workflow keeps the uploads to look at.
	parts = append(parts, formPart{"files", "corrupt.pdf", []byte("%PDF-1.4 not really")})
	r := a.multipartOrdered("/admin/api/v1/documents:import", parts, a.token)
	if r.Status != 201 {
		t.Fatalf("import: %d %s", r.Status, r.Raw)
	}
	var task struct {
		ID string `json:"id"`
	}
	r.into(t, &task)
	j := a.waitImport(task.ID, 2*time.Minute)
	if j.Status != "completed" || j.Progress.Completed != n || j.Progress.Failed != 1 || len(j.Progress.Items) != n+1 {
		t.Fatalf("job %s: %+v", j.Status, j.Progress)
	}
	dir := fmt.Sprintf("sites/%d/imports/%s/src/", site, task.ID)
	stored := a.storedUploads(site)
	var all strings.Builder
	for _, k := range []string{"pack-0", "pack-1", "pack-2"} {
		all.WriteString(stored[dir+k])
	}
	var want strings.Builder
	for _, p := range parts[1:] {
		want.Write(p.data)
	}
	if len(stored) != 3 || all.String() != want.String() {
		t.Fatalf("stored %v, want the %d files in pack-0..2 in order", keys(stored), n+1)
	}
	if it := j.Progress.Items[n]; it.Status != "failed" || it.DocumentID != 0 || !strings.Contains(it.Reason, "corrupt.pdf") {
		t.Fatalf("corrupt file: %+v", it)
	}
	for i, it := range j.Progress.Items[:n] {
		var d struct {
			Content string `json:"content"`
		}
		a.admin("GET", fmt.Sprintf("/admin/api/v1/documents/%d", it.DocumentID), nil, &d)
		words := strings.Fields(string(parts[i+1].data))
		if it.Name != parts[i+1].file || !strings.Contains(d.Content, words[len(words)-1]) ||
			strings.Count(d.Content, words[len(words)-1]) != strings.Count(string(parts[i+1].data), words[len(words)-1]) {
			t.Fatalf("item %d %s: content %q, from %q", i, it.Name, d.Content, parts[i+1].data)
		}
	}
}

// TestImportUploadRefusedLate: a request refused after files were already
// streamed into the store (a bad field after them, one file too many, an
// empty file) answers its 4xx, starts nothing and leaves nothing stored.
func TestImportUploadRefusedLate(t *testing.T) {
	a := newApp(t, "sqlite", map[string]string{"LORE_IMPORT_MAX_FILES": "2"})
	site := a.site("Refused late")
	s := []byte(itoa(site))
	md := []byte("# A\n\ntext\n")
	cases := []struct {
		what   string
		parts  []formPart
		status int
	}{
		{"bad boolean after files", []formPart{{"site_id", "", s}, {"files", "a.md", md}, {"publish", "", []byte("maybe")}}, 422},
		{"too many files", []formPart{{"site_id", "", s}, {"files", "a.md", md}, {"files", "b.md", md}, {"files", "c.md", md}}, 422},
		{"empty file after one streamed", []formPart{{"site_id", "", s}, {"files", "a.md", md}, {"files", "e.md", nil}}, 400},
		{"traversal after one streamed", []formPart{{"site_id", "", s}, {"files", "a.md", md}, {"files", "../x.md", md}}, 400},
		{"unknown processor after files", []formPart{{"site_id", "", s}, {"files", "a.md", md}, {"processor_type", "", []byte("MinerU")}}, 400},
	}
	for _, c := range cases {
		r := a.multipartOrdered("/admin/api/v1/documents:import", c.parts, a.token)
		if r.Status != c.status || r.Msg == "" {
			t.Errorf("%s: %d %s, want %d", c.what, r.Status, r.Raw, c.status)
		}
		if got := a.storedUploads(site); len(got) != 0 {
			t.Errorf("%s: left %v in the store", c.what, keys(got))
		}
	}
	if a.countDocs(site) != 0 {
		t.Fatal("a refused import created documents")
	}
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
