//go:build chaos

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/testenv"
	"github.com/lorekb/lore/models"
)

// syncFiles is the size of the repository of scenario (f).
const syncFiles = 500

// (f) The worker process is killed with SIGKILL in the middle of the first
// sync of a 500-file Git repository; a new worker takes over. Every file
// ends as exactly one document (the batches that were running when the
// worker died run again and find the items an earlier attempt wrote), and
// the next sync finds nothing left to do.
func TestChaosSyncWorkerKill(t *testing.T) {
	sc := newScenario(t, "(f) kill -9 worker during a 500-file git sync")
	g, err := testenv.StartGitServer(filepath.Join(tmpRoot, "f-git"))
	if err != nil {
		sc.fatalf("setup", "%v", err)
	}
	defer g.Close()
	files := map[string][]byte{}
	body := strings.Repeat(guide, 4)
	for i := range syncFiles {
		files[fmt.Sprintf("docs/%03d/page.md", i)] = []byte(fmt.Sprintf("# Chaos sync file %d\n\n%s", i, body))
	}
	if err := g.Write(files); err != nil {
		sc.fatalf("setup", "%v", err)
	}
	if err := g.Commit("500 files"); err != nil {
		sc.fatalf("setup", "%v", err)
	}
	// The Git server is on loopback, which the outbound guard refuses
	// unless allowed; one batch at a time so the sync lasts long enough to be hit.
	env := map[string]string{"LORE_ALLOWED_PROVIDER_HOSTS": "127.0.0.1", "LORE_IMPORT_CONCURRENCY": "1"}
	s := newStack(sc, "f", stackOpts{API: env, Worker: env})
	site := s.CreateSite("Chaos F")
	var ds struct {
		ID int64 `json:"id"`
	}
	r, err := s.do("POST", "/admin/api/v1/data-sources", map[string]any{"name": "Chaos repo", "type": "git", "site_id": site,
		"config": map[string]any{"url": g.URL(), "paths": []string{"docs/**/*.md"}}}, s.token)
	if err != nil || r.Status != 200 || json.Unmarshal(r.Data, &ds) != nil {
		sc.fatalf("create the data source", "%v %d %s", err, r.Status, clip(string(r.Raw), 300))
	}
	job := s.startSync(ds.ID)
	sc.logf("sync %s of %d files started", job, syncFiles)
	killWorkerMidway(sc, s, job, syncFiles, "sync")

	view := waitJobEnd(sc, s, job, "sync", 5*time.Minute)
	p := view.Progress
	sc.check("job status completed, progress completed=500, failed=0",
		view.Status == "completed" && p.Completed == syncFiles && p.Failed == 0,
		"status %s, completed %d/%d, failed %d%s", view.Status, p.Completed, syncFiles, p.Failed, errSuffix(view.Error))

	ctx := context.Background()
	var rows []struct {
		ID    int64  `bun:"id"`
		Title string `bun:"title"`
	}
	if err := s.DB.NewSelect().Model((*models.Document)(nil)).Column("id", "title").Where("site_id = ?", site).Scan(ctx, &rows); err != nil {
		sc.fatalf("read documents", "%v", err)
	}
	perTitle := map[string]int{}
	for _, r := range rows {
		perTitle[r.Title]++
	}
	dups, missing := 0, 0
	for i := range syncFiles {
		switch perTitle[fmt.Sprintf("Chaos sync file %d", i)] {
		case 0:
			missing++
		case 1:
		default:
			dups++
		}
	}
	items, err := s.DB.SyncItems(ctx, ds.ID, 0)
	if err != nil {
		sc.fatalf("read sync items", "%v", err)
	}
	sc.check("exactly one document per file (500 rows, one per title, 500 sync items)",
		len(rows) == syncFiles && dups == 0 && missing == 0 && len(items) == syncFiles,
		"%d documents, %d files with more than one, %d with none, %d items", len(rows), dups, missing, len(items))

	next := s.startSync(ds.ID)
	err = waitFor(2*time.Minute, 250*time.Millisecond, func() (bool, error) {
		v, err := s.ImportJob(next)
		if err != nil {
			return false, nil
		}
		view = *v
		return v.Status != "running", nil
	})
	run, rerr := s.DB.GetSyncRun(ctx, next)
	sc.check("the next sync completes with nothing to do (500 unchanged, nothing added, updated, deleted or failed)",
		err == nil && rerr == nil && run.Status == models.SyncCompleted && run.Unchanged == syncFiles && run.Added+run.Updated+run.Deleted+run.Failed == 0,
		"status %s, unchanged %d, added %d, updated %d, deleted %d, failed %d%s", run.Status, run.Unchanged, run.Added, run.Updated,
		run.Deleted, run.Failed, errNote(firstErr(err, rerr)))
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// startSync starts a sync of the data source and returns its job id.
func (s *stack) startSync(ds int64) string {
	s.t.Helper()
	r, err := s.do("POST", fmt.Sprintf("/admin/api/v1/data-sources/%d:sync", ds), nil, s.token)
	var out struct {
		JobID string `json:"job_id"`
	}
	if err != nil || r.Status != 201 || json.Unmarshal(r.Data, &out) != nil {
		s.sc.fatalf("start the sync", "%v %d %s", err, r.Status, clip(string(r.Raw), 300))
	}
	return out.JobID
}
