//go:build chaos

package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/models"
)

// importFiles is the size of the import of scenario (e): 200 files, whatever
// CHAOS_DOCS says (the import is quick; the files are what it is about).
const importFiles = 200

// importBody is the body of each imported file, about 17 KB: large enough
// that converting and storing 200 of them lasts a few seconds, so the worker
// is killed while batches are running, not after the last one.
var importBody = strings.Repeat(guide, 8)

// (e) The worker process is killed with SIGKILL in the middle of a 200-file
// import; a new worker takes over. Every file ends as exactly one document:
// the activities that were running when the worker died run again and find
// the document an earlier attempt may have created.
func TestChaosImportWorkerKill(t *testing.T) {
	sc := newScenario(t, "(e) kill -9 worker during a 200-file import")
	// Two files at a time, so the import lasts long enough to be hit in
	// the middle even on a fast machine.
	s := newStack(sc, "e", stackOpts{API: map[string]string{"LORE_IMPORT_CONCURRENCY": "2"}})
	site := s.CreateSite("Chaos E")
	t0 := time.Now()
	job := s.StartImport(site, importFiles)
	sc.logf("import %s of %d files started", job, importFiles)

	killWorkerMidway(sc, s, job, importFiles, "import")
	sc.logf("killed %s after the import was started", time.Since(t0).Round(time.Millisecond))

	start := time.Now()
	view := waitJobEnd(sc, s, job, "import", 3*time.Minute)
	sc.logf("import %s %s %s after the restart", job, view.Status, time.Since(start).Round(time.Millisecond))
	p := view.Progress
	sc.check("job status completed, progress completed=200, failed=0",
		view.Status == "completed" && p.Completed == importFiles && p.Failed == 0 && len(p.Items) == importFiles,
		"status %s, completed %d/%d, failed %d, items %d%s", view.Status, p.Completed, importFiles, p.Failed, len(p.Items), errSuffix(view.Error))

	// Exactly one document per file: 200 rows in the site, one per title
	// (each file has its own first heading), and the items name them all.
	var rows []struct {
		ID    int64  `bun:"id"`
		Title string `bun:"title"`
	}
	if err := s.DB.NewSelect().Model((*models.Document)(nil)).Column("id", "title").Where("site_id = ?", site).
		Scan(context.Background(), &rows); err != nil {
		sc.fatalf("read documents", "%v", err)
	}
	perTitle := map[string]int{}
	ids := map[int64]bool{}
	for _, r := range rows {
		perTitle[r.Title]++
		ids[r.ID] = true
	}
	dups, missing := 0, 0
	example := ""
	for i := 0; i < importFiles; i++ {
		title := fmt.Sprintf("Chaos import file %d", i)
		switch n := perTitle[title]; {
		case n > 1:
			dups++
			if example == "" {
				example = fmt.Sprintf("; e.g. %q: %d documents", title, n)
			}
		case n == 0:
			missing++
			if example == "" {
				example = fmt.Sprintf("; e.g. %q: none", title)
			}
		}
	}
	itemsOK := 0
	for _, it := range p.Items {
		if it.Status == "completed" && ids[it.DocumentID] {
			itemsOK++
		}
	}
	sc.check("exactly one document per file (200 rows, one per file's title; every item names its document)",
		len(rows) == importFiles && dups == 0 && missing == 0 && itemsOK == importFiles,
		"%d documents, %d files with more than one, %d with none, %d/%d items completed with their document%s",
		len(rows), dups, missing, itemsOK, importFiles, example)
}

// importView is the part of GET /jobs/{id} of an import the test reads.
type importView struct {
	Status   string `json:"status"`
	Error    string `json:"error"`
	Progress struct {
		Completed int `json:"completed"`
		Failed    int `json:"failed"`
		Items     []struct {
			Status     string `json:"status"`
			DocumentID int64  `json:"document_id"`
		} `json:"items"`
	} `json:"progress"`
}

// ImportJob reads an import job with its per-file items.
func (s *stack) ImportJob(id string) (*importView, error) { return jobAs[importView](s, id) }

// waitJobEnd polls an import or sync job until it is neither running nor
// pending and returns its last view; the scenario fails when the worker
// exits or the job is not done within d.
func waitJobEnd(sc *scenario, s *stack, job, what string, d time.Duration) importView {
	var view importView
	err := waitFor(d, 250*time.Millisecond, func() (bool, error) {
		if s.worker.Exited() {
			return false, fmt.Errorf("worker process exited: %v", s.worker.err)
		}
		v, err := s.ImportJob(job)
		if err != nil {
			return false, nil
		}
		view = *v
		return v.Status != "running" && v.Status != "pending", nil
	})
	if err != nil {
		sc.fatalf(what+" completed", "%v (last view status %s)", err, view.Status)
	}
	return view
}

// StartImport uploads n Markdown files to documents:import (drafts, not
// vectorized) and returns the job id.
func (s *stack) StartImport(siteID int64, n int) string {
	s.t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	_ = w.WriteField("site_id", strconv.FormatInt(siteID, 10))
	_ = w.WriteField("auto_vectorize", "false")
	for i := 0; i < n; i++ {
		fw, err := w.CreateFormFile("files", fmt.Sprintf("page-%03d.md", i))
		if err != nil {
			s.sc.fatalf("build the import form", "%v", err)
		}
		fmt.Fprintf(fw, "# Chaos import file %d\n\nFile %d of the chaos import.\n\n%s", i, i, importBody)
	}
	if err := w.Close(); err != nil {
		s.sc.fatalf("build the import form", "%v", err)
	}
	req, err := http.NewRequest("POST", s.Base+"/admin/api/v1/documents:import", &body)
	if err != nil {
		s.sc.fatalf("start import", "%v", err)
	}
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+s.token)
	res, err := s.HTTP.Do(req)
	if err != nil {
		s.sc.fatalf("start import", "%v", err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	r := parseReply(res.StatusCode, raw)
	var task struct {
		ID string `json:"id"`
	}
	if r.Status != 201 || json.Unmarshal(r.Data, &task) != nil || task.ID == "" {
		s.sc.fatalf("start import", "status %d: %s", r.Status, clip(string(raw), 300))
	}
	return task.ID
}
