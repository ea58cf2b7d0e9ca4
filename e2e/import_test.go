package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/activities"
	"github.com/lorekb/lore/internal/convert/converttest"
	"github.com/lorekb/lore/internal/db/dbtest"
	"github.com/lorekb/lore/models"
	"github.com/lorekb/lore/workflows"
)

// upload is one multipart file.
type upload struct {
	name string
	data []byte
}

// multipart posts a multipart form with the token; files go in field.
func (a *app) multipart(path string, fields map[string]string, field string, files []upload, token string) *resp {
	a.t.Helper()
	var parts []formPart
	for k, v := range fields {
		parts = append(parts, formPart{k, "", []byte(v)})
	}
	for _, f := range files {
		parts = append(parts, formPart{field, f.name, f.data})
	}
	return a.multipartOrdered(path, parts, token)
}

type jobProgress struct {
	Status   string                  `json:"status"`
	Progress workflows.BatchProgress `json:"progress"`
}

// waitJob polls the job until it closes and returns its last view.
func (a *app) waitImport(id string, within time.Duration) jobProgress {
	a.t.Helper()
	var j jobProgress
	eventually(a.t, within, "job "+id+" to end", func() bool {
		j = jobProgress{}
		a.admin("GET", "/admin/api/v1/jobs/"+id, nil, &j)
		return j.Status != "running" && j.Progress.Done
	})
	return j
}

func (a *app) countDocs(site int64) int {
	n, err := a.d.DB.NewSelect().Model((*models.Document)(nil)).Where("site_id = ?", site).Count(context.Background())
	if err != nil {
		a.t.Fatal(err)
	}
	return int(n)
}

// TestImportFiles imports every good sample and every kind of bad file in one
// request: each good file becomes one published, vectorized document in the
// collection with its own title, its images stored as site files; each bad
// file fails alone with its reason; a retried activity and a retried job
// create no second document.
func TestImportFiles(t *testing.T) {
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			a := newApp(t, dialect, map[string]string{"LORE_IMPORT_MAX_BYTES": "1048576"})
			site := a.site("Import " + dialect)
			var col struct {
				ID int64 `json:"id"`
			}
			a.admin("POST", "/admin/api/v1/collections", map[string]any{"site_id": site, "title": "Imported"}, &col)
			var files []upload
			for _, s := range converttest.Good() {
				files = append(files, upload{s.Name, s.Data})
			}
			bad := map[string]string{"locked.xlsx": "encrypted", "junk.pdf": "corrupt", "bomb.docx": "over the size limit",
				"archive.zip": "unsupported file type", "huge.md": "over the size limit"}
			for _, b := range converttest.BadSamples() {
				if _, ok := bad[b.Name]; ok {
					files = append(files, upload{b.Name, b.Data})
				}
			}
			files = append(files, upload{"archive.zip", []byte("PK\x03\x04 not really")},
				upload{"huge.md", bytes.Repeat([]byte("# big\n"), 200_000)})
			r := a.multipart("/admin/api/v1/documents:import", map[string]string{"site_id": itoa(site),
				"collection_id": itoa(col.ID), "publish": "true"}, "files", files, a.token)
			if r.Status != 201 {
				t.Fatalf("import: %d %s", r.Status, r.Raw)
			}
			var task struct {
				ID       string `json:"id"`
				JobID    string `json:"job_id"`
				TaskType string `json:"task_type"`
				SiteID   int64  `json:"site_id"`
			}
			r.into(t, &task)
			if !strings.HasPrefix(task.ID, fmt.Sprintf("import-%d-", site)) || task.JobID != task.ID || task.TaskType != "import" || task.SiteID != site {
				t.Fatalf("task %+v", task)
			}
			j := a.waitImport(task.ID, 3*time.Minute)
			good := len(converttest.Good())
			p := j.Progress
			if j.Status != "completed" || p.Total != len(files) || p.Completed != good || p.Failed != len(bad) || len(p.Items) != len(files) {
				t.Fatalf("job %s: %+v", j.Status, p)
			}
			titles := map[string]string{}
			for _, s := range converttest.Good() {
				titles[s.Name] = s.Title
			}
			for i, it := range p.Items {
				if it.Index != i || it.Name != files[i].name {
					t.Fatalf("item %d: %+v", i, it)
				}
				if want, isBad := bad[it.Name]; isBad {
					if it.Status != "failed" || !strings.Contains(it.Reason, want) || it.DocumentID != 0 {
						t.Fatalf("bad file %s: %+v (want reason with %q)", it.Name, it, want)
					}
					continue
				}
				if it.Status != "completed" || it.DocumentID == 0 || it.Title != titles[it.Name] || it.VectorStatus != "completed" {
					t.Fatalf("good file %s: %+v", it.Name, it)
				}
				var d struct {
					Title        string         `json:"title"`
					Content      string         `json:"content"`
					Status       string         `json:"status"`
					VectorStatus string         `json:"vector_status"`
					CollectionID int64          `json:"collection_id"`
					SiteID       int64          `json:"site_id"`
					ParseMeta    map[string]any `json:"parse_meta"`
					ChunkCount   int            `json:"chunk_count"`
				}
				a.admin("GET", fmt.Sprintf("/admin/api/v1/documents/%d", it.DocumentID), nil, &d)
				if d.Title != titles[it.Name] || d.Status != "published" || d.VectorStatus != "completed" || d.ChunkCount == 0 ||
					d.CollectionID != col.ID || d.SiteID != site || d.ParseMeta["source_name"] != it.Name || d.ParseMeta["converter"] == nil {
					t.Fatalf("document of %s: %+v", it.Name, d)
				}
				if strings.Contains(d.Content, "lore-image:") {
					t.Fatalf("%s: an image link was not rewritten:\n%s", it.Name, d.Content)
				}
				if it.Name == "guide.docx" {
					a.checkImage(t, site, d.Content)
				}
			}
			if n := a.countDocs(site); n != good {
				t.Fatalf("%d documents, want %d", n, good)
			}
			// The imported documents answer a search.
			var hits struct {
				List []struct {
					Title string `json:"title"`
				} `json:"list"`
			}
			a.admin("GET", fmt.Sprintf("/admin/api/v1/documents?site_id=%d&keyword=connector", site), nil, &hits)
			if len(hits.List) != 1 || hits.List[0].Title != "Quarterly Report" {
				t.Fatalf("keyword search: %+v", hits)
			}

			// A retried activity finds its document and creates nothing.
			imp := activities.NewImport(a.d)
			res, err := imp.ImportFile(context.Background(), activities.ImportFileInput{
				Spec: activities.ImportSpec{ImportID: task.ID, TenantID: 1, SiteID: site, Status: "published"}, Index: 0,
				File: activities.ImportFile{Name: files[0].name, Source: activities.SourceUpload, Key: "gone"}})
			if err != nil || res.Created || res.DocumentID != p.Items[0].DocumentID {
				t.Fatalf("retried activity: %+v %v", res, err)
			}
			// So does a retried batch; in the same batch a file that is no
			// longer in the store fails alone with its reason.
			bres, err := imp.ImportBatch(context.Background(), activities.ImportBatchInput{
				Spec:        activities.ImportSpec{ImportID: task.ID, TenantID: 1, SiteID: site, Status: "published"},
				Concurrency: 2, Files: []activities.ImportBatchFile{
					{Index: 0, File: activities.ImportFile{Name: files[0].name, Source: activities.SourceUpload, Key: "gone"}},
					{Index: 1000, File: activities.ImportFile{Name: "lost.md", Source: activities.SourceUpload,
						Key: fmt.Sprintf("sites/%d/imports/%s/src/lost.md", site, task.ID)}}}})
			if err != nil || len(bres.Items) != 2 {
				t.Fatalf("retried batch: %+v %v", bres, err)
			}
			if it := bres.Items[0]; it.Created || it.DocumentID != p.Items[0].DocumentID || it.Title != p.Items[0].Title || it.Reason != "" {
				t.Fatalf("retried batch, done file: %+v, want document %d %q", it, p.Items[0].DocumentID, p.Items[0].Title)
			}
			if it := bres.Items[1]; it.DocumentID != 0 || !strings.Contains(it.Reason, "lost.md: the file is no longer in the store") {
				t.Fatalf("retried batch, missing file: %+v", it)
			}
			if n := a.countDocs(site); n != good {
				t.Fatalf("after the retried batch: %d documents, want %d", n, good)
			}
			// So does a retried job: the failed files fail again, nothing doubles.
			a.admin("POST", "/admin/api/v1/jobs/"+task.ID+":retry", nil, nil)
			j2 := a.waitImport(task.ID, 2*time.Minute)
			if j2.Progress.Completed != good || j2.Progress.Failed != len(bad) || a.countDocs(site) != good {
				t.Fatalf("after retry: %+v, %d documents", j2.Progress, a.countDocs(site))
			}
			for i, it := range j2.Progress.Items {
				if it.DocumentID != p.Items[i].DocumentID {
					t.Fatalf("retry changed the document of %s: %d → %d", it.Name, p.Items[i].DocumentID, it.DocumentID)
				}
			}
		})
	}
}

// checkImage follows the first image link of an imported document through
// the client file route and expects the PNG.
func (a *app) checkImage(t *testing.T, site int64, content string) {
	t.Helper()
	i := strings.Index(content, "/v1/files/sites/")
	if i < 0 {
		t.Fatalf("no stored image link in:\n%s", content)
	}
	link := content[i:]
	link = link[:strings.Index(link, ")")]
	if !strings.HasPrefix(link, fmt.Sprintf("/v1/files/sites/%d/imports/", site)) {
		t.Fatalf("image link %s is not under the site", link)
	}
	req := httptest.NewRequest("GET", link, nil)
	res, err := a.srv.App().Test(req, -1)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !bytes.Equal(body, converttest.PNG()) {
		t.Fatalf("GET %s: %d, %d bytes", link, res.StatusCode, len(body))
	}
}

// TestImportBadInput refuses every malformed import with a 4xx and starts
// nothing.
func TestImportBadInput(t *testing.T) {
	a := newApp(t, "sqlite", nil)
	site := a.site("Bad input")
	other := a.site("Other")
	var col struct {
		ID int64 `json:"id"`
	}
	a.admin("POST", "/admin/api/v1/collections", map[string]any{"site_id": other, "title": "Elsewhere"}, &col)
	md := []upload{{"a.md", []byte("# A\n")}}
	sa := a.siteAdmin("sa@e2e.test", other)
	cases := []struct {
		what   string
		fields map[string]string
		files  []upload
		token  string
		status int
	}{
		{"no files", map[string]string{"site_id": itoa(site)}, nil, a.token, 422},
		{"empty upload", map[string]string{"site_id": itoa(site)}, []upload{{"empty.md", nil}}, a.token, 400},
		{"traversal", map[string]string{"site_id": itoa(site)}, []upload{{"../../etc/passwd.md", []byte("x")}}, a.token, 400},
		{"unknown site", map[string]string{"site_id": "987654321"}, md, a.token, 400},
		{"no site", map[string]string{}, md, a.token, 422},
		{"collection of another site", map[string]string{"site_id": itoa(site), "collection_id": itoa(col.ID)}, md, a.token, 400},
		{"unknown processor", map[string]string{"site_id": itoa(site), "processor_type": "MinerU"}, md, a.token, 400},
		{"site not managed (as unknown)", map[string]string{"site_id": itoa(site)}, md, sa, 400},
		{"bad boolean", map[string]string{"site_id": itoa(site), "publish": "maybe"}, md, a.token, 422},
	}
	for _, c := range cases {
		r := a.multipart("/admin/api/v1/documents:import", c.fields, "files", c.files, c.token)
		if r.Status != c.status || r.Code != c.status || r.Msg == "" {
			t.Errorf("%s: %d %s, want %d", c.what, r.Status, r.Raw, c.status)
		}
	}
	if n, _ := a.d.DB.NewSelect().Model((*models.Job)(nil)).Count(context.Background()); n != 0 {
		t.Fatalf("%d jobs started by refused imports", n)
	}
	if a.countDocs(site) != 0 {
		t.Fatal("a refused import created documents")
	}
}

// TestImportGeneratesFields: generate_summary and generate_tags fill each
// imported document's summary and tags (extractively on the default chat
// provider), and parse_meta says what generated them.
func TestImportGeneratesFields(t *testing.T) {
	a := newApp(t, "sqlite", nil)
	site := a.site("Import generate")
	md := "# Backups\n\nA nightly backup copies the database. Restoring a backup brings the sites back.\n\n## Restoring a backup\n\nStop the worker, then restore the backup.\n"
	r := a.multipart("/admin/api/v1/documents:import", map[string]string{"site_id": itoa(site), "generate_summary": "true",
		"generate_tags": "true"}, "files", []upload{{"backups.md", []byte(md)}}, a.token)
	if r.Status != 201 {
		t.Fatalf("import: %d %s", r.Status, r.Raw)
	}
	var task struct {
		ID string `json:"id"`
	}
	r.into(t, &task)
	if j := a.waitImport(task.ID, 2*time.Minute); j.Status != "completed" || j.Progress.Completed != 1 {
		t.Fatalf("job %s: %+v", j.Status, j.Progress)
	}
	var doc models.Document
	if err := a.d.DB.NewSelect().Model(&doc).Where("site_id = ? AND title = ?", site, "Backups").Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(doc.Summary, "A nightly backup copies the database. Restoring a backup brings the sites back.") || !strings.HasPrefix(doc.Tags, `["backup"`) ||
		doc.ParseMeta == nil || !strings.Contains(*doc.ParseMeta, `"generated_by":"extractive"`) {
		t.Errorf("summary %q, tags %s, meta %v", doc.Summary, doc.Tags, doc.ParseMeta)
	}
}
