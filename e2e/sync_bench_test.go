package e2e

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// jobTime is a job's own duration: from its workflow's start to its close.
func (a *app) jobTime(id string) time.Duration {
	a.t.Helper()
	var j struct {
		StartedAt *time.Time `json:"started_at"`
		ClosedAt  *time.Time `json:"closed_at"`
	}
	a.admin("GET", "/admin/api/v1/jobs/"+id, nil, &j)
	if j.StartedAt == nil || j.ClosedAt == nil {
		a.t.Fatalf("job %s has no start or close time", id)
	}
	return j.ClosedAt.Sub(*j.StartedAt)
}

// TestSyncTargets measures the sync against the plain import of the same
// files and checks the targets: the first sync of a 1,000-file repository
// takes at most 1/0.6 of the import's time (at least 60% of its speed), a
// re-sync after 1% of the files changed at most 5% of the first sync's, and
// a re-sync with nothing changed converts nothing. Timing on a shared
// machine is noisy, so the times are checked when LORE_SYNC_TARGETS=1
// (1,000 files, or LORE_SYNC_TARGETS_FILES), measured as job durations
// (workflow start to close); otherwise 100 files run and only the counts
// are checked. It prints the figures.
func TestSyncTargets(t *testing.T) {
	timed := os.Getenv("LORE_SYNC_TARGETS") == "1"
	n := 100 // without the timing targets: the same runs, smaller, counts checked
	if timed {
		n = 1000
	}
	if v, err := strconv.Atoi(os.Getenv("LORE_SYNC_TARGETS_FILES")); err == nil && v > 0 {
		n = v
	}
	body := strings.Repeat("Run the installer and follow the prompts. The installer checks the system first.\n\n", 40)
	files := map[string][]byte{}
	var uploads []upload
	for i := range n {
		data := []byte(fmt.Sprintf("# Guide %d\n\n%s", i, body))
		files[fmt.Sprintf("docs/guide-%04d.md", i)] = data
		uploads = append(uploads, upload{fmt.Sprintf("guide-%04d.md", i), data})
	}
	g := newGitServer(t)
	g.write(files)
	g.commit("files")
	a := newApp(t, "sqlite", map[string]string{"LORE_ALLOWED_PROVIDER_HOSTS": "127.0.0.1", "LORE_IMPORT_MAX_FILES": strconv.Itoa(n)})

	// The plain import of the same files (drafts, not vectorized).
	imp := a.site("Imported")
	r := a.multipart("/admin/api/v1/documents:import", map[string]string{"site_id": itoa(imp), "auto_vectorize": "false"}, "files", uploads, a.token)
	if r.Status != 201 {
		t.Fatalf("import: %d %s", r.Status, r.Raw)
	}
	var task struct {
		ID string `json:"id"`
	}
	r.into(t, &task)
	if j := a.waitImport(task.ID, 10*time.Minute); j.Status != "completed" || j.Progress.Completed != n {
		t.Fatalf("import: %s %+v", j.Status, j.Progress)
	}
	importTime := a.jobTime(task.ID)

	site := a.site("Synced")
	var ds struct {
		ID int64 `json:"id"`
	}
	a.admin("POST", "/admin/api/v1/data-sources", map[string]any{"name": "Bench repo", "type": "git", "site_id": site,
		"config": map[string]any{"url": g.url()}}, &ds)
	first := a.runSync(ds.ID, nil)
	firstTime := a.jobTime(first.JobID)
	if first.Added != n {
		t.Fatalf("first sync: %+v", first)
	}
	changed := map[string][]byte{}
	for i := 0; i < n; i += 100 {
		changed[fmt.Sprintf("docs/guide-%04d.md", i)] = []byte(fmt.Sprintf("# Guide %d\n\nChanged.\n\n%s", i, body))
	}
	g.write(changed)
	g.commit("1% changed")
	second := a.runSync(ds.ID, nil)
	secondTime := a.jobTime(second.JobID)
	if second.Updated != len(changed) || second.Unchanged != n-len(changed) {
		t.Fatalf("re-sync after 1%%: %+v", second)
	}
	third := a.runSync(ds.ID, nil)
	thirdTime := a.jobTime(third.JobID)
	t.Logf("files %d: import %s, first sync %s (%.0f%% of the import's speed), re-sync after 1%% changed %s (%.1f%% of the first), re-sync with nothing changed %s (converted %d)",
		n, importTime.Round(time.Millisecond), firstTime.Round(time.Millisecond), 100*importTime.Seconds()/firstTime.Seconds(),
		secondTime.Round(time.Millisecond), 100*secondTime.Seconds()/firstTime.Seconds(), thirdTime.Round(time.Millisecond),
		third.Added+third.Updated)
	if third.Added+third.Updated+third.Deleted+third.Failed != 0 || third.Unchanged != n {
		t.Errorf("re-sync with nothing changed converted something: %+v", third)
	}
	if !timed {
		return
	}
	if importTime.Seconds()/firstTime.Seconds() < 0.6 {
		t.Errorf("first sync %s: less than 60%% of the import's speed (%s)", firstTime, importTime)
	}
	if secondTime.Seconds() > 0.05*firstTime.Seconds() {
		t.Errorf("re-sync after 1%% changed %s: more than 5%% of the first sync (%s)", secondTime, firstTime)
	}
}
