package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/testenv"
	"github.com/lorekb/lore/workflows"
	"go.temporal.io/sdk/client"
)

// gitServer is testenv's Git server, failing the test on errors.
type gitServer struct {
	t *testing.T
	*testenv.GitServer
}

func newGitServer(t *testing.T) *gitServer {
	t.Helper()
	g, err := testenv.StartGitServer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return &gitServer{t: t, GitServer: g}
}

func (g *gitServer) url() string { return g.URL() }

func (g *gitServer) write(files map[string][]byte) {
	g.t.Helper()
	if err := g.Write(files); err != nil {
		g.t.Fatal(err)
	}
}

func (g *gitServer) commit(msg string) {
	g.t.Helper()
	if err := g.Commit(msg); err != nil {
		g.t.Fatal(err)
	}
}

func (g *gitServer) mv(from, to string) {
	g.t.Helper()
	_ = os.MkdirAll(filepath.Dir(filepath.Join(g.Work, to)), 0o755)
	if err := g.Git(g.Work, "mv", from, to); err != nil {
		g.t.Fatal(err)
	}
}

type syncRunView struct {
	ID        int64  `json:"id"`
	JobID     string `json:"job_id"`
	Trigger   string `json:"trigger"`
	Status    string `json:"status"`
	Ref       string `json:"ref"`
	Added     int    `json:"added"`
	Updated   int    `json:"updated"`
	Deleted   int    `json:"deleted"`
	Unchanged int    `json:"unchanged"`
	Failed    int    `json:"failed"`
	Message   string `json:"message"`
	Items     []struct {
		Key        string `json:"key"`
		Outcome    string `json:"outcome"`
		DocumentID int64  `json:"document_id"`
		Reason     string `json:"reason"`
		Note       string `json:"note"`
	} `json:"items"`
}

// runSync starts a sync of the data source and returns its run once its job
// completed.
func (a *app) runSync(ds int64, body any) syncRunView {
	a.t.Helper()
	var started struct {
		JobID string `json:"job_id"`
	}
	r := a.do("POST", fmt.Sprintf("/admin/api/v1/data-sources/%d:sync", ds), body, a.token)
	if r.Status != 201 {
		a.t.Fatalf("sync: %d %s", r.Status, r.Raw)
	}
	r.into(a.t, &started)
	// Waited for on the engine (a long poll), not by polling the job, whose
	// reads would run beside the sync being timed.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	_ = a.d.Temporal.GetWorkflow(ctx, started.JobID, "").Get(ctx, nil)
	a.waitJob(started.JobID, "completed")
	return a.syncRun(ds, started.JobID)
}

// syncRun finds a run of the data source by job id in GET …/syncs.
func (a *app) syncRun(ds int64, jobID string) syncRunView {
	a.t.Helper()
	var pg struct {
		List []syncRunView `json:"list"`
	}
	a.admin("GET", fmt.Sprintf("/admin/api/v1/data-sources/%d/syncs?size=100", ds), nil, &pg)
	for _, run := range pg.List {
		if run.JobID == jobID {
			return run
		}
	}
	a.t.Fatalf("run %s not listed by /syncs: %+v", jobID, pg.List)
	return syncRunView{}
}

type syncedDoc struct {
	ID             int64          `json:"id"`
	Title          string         `json:"title"`
	Content        string         `json:"content"`
	ContentVersion int64          `json:"content_version"`
	ParseMeta      map[string]any `json:"parse_meta"`
	Sync           map[string]any `json:"sync"`
}

// siteDocs lists the site's documents by title.
func (a *app) siteDocs(site int64) map[string]syncedDoc {
	a.t.Helper()
	var pg struct {
		List []syncedDoc `json:"list"`
	}
	a.admin("GET", fmt.Sprintf("/admin/api/v1/documents?site_id=%d&size=1000", site), nil, &pg)
	out := map[string]syncedDoc{}
	for _, d := range pg.List {
		if _, dup := out[d.Title]; dup {
			a.t.Fatalf("two documents titled %q: a duplicate", d.Title)
		}
		out[d.Title] = d
	}
	return out
}

func page(title, body string) []byte { return []byte("# " + title + "\n\n" + body + "\n") }

// TestGitSync keeps a site in sync with a real Git server: the first sync
// adds the matching files; a change, a rename, a deletion and a broken file
// are each applied (the broken one fails alone with its reason) and only
// they are converted; an edit made in Lore is replaced when the source
// changes, and says so; a sync with nothing new converts nothing; deleting
// most of the files is held by the mass-deletion guard until confirmed;
// the schedule is a Temporal Schedule named after the data source that
// runs the same sync and goes with the data source.
func TestGitSync(t *testing.T) {
	g := newGitServer(t)
	files := map[string][]byte{"README.md": page("Readme", "outside the paths"), "docs/main.go": []byte("package main\n")}
	for i := range 10 {
		files[fmt.Sprintf("docs/page%d.md", i)] = page(fmt.Sprintf("Page %d", i), fmt.Sprintf("Body of page %d.", i))
	}
	g.write(files)
	g.commit("first")

	a := newApp(t, "sqlite", map[string]string{"LORE_ALLOWED_PROVIDER_HOSTS": "127.0.0.1"})
	site := a.site("Git synced")

	// The outbound guard refuses a metadata address at save.
	r := a.do("POST", "/admin/api/v1/data-sources", map[string]any{"name": "x", "type": "git", "site_id": site,
		"config": map[string]any{"url": "http://169.254.169.254/repo.git"}}, a.token)
	if r.Status != 422 {
		t.Fatalf("metadata address: %d %s", r.Status, r.Raw)
	}
	// A branch that does not exist is a 400 at save.
	r = a.do("POST", "/admin/api/v1/data-sources", map[string]any{"name": "x", "type": "git", "site_id": site,
		"config": map[string]any{"url": g.url(), "branch": "nope"}}, a.token)
	if r.Status != 400 || !strings.Contains(string(r.Raw), "nope") {
		t.Fatalf("missing branch: %d %s", r.Status, r.Raw)
	}
	var ds struct {
		ID     int64          `json:"id"`
		Config map[string]any `json:"config"`
		Sync   map[string]any `json:"sync"`
	}
	a.admin("POST", "/admin/api/v1/data-sources", map[string]any{"name": "Docs repo", "type": "git", "site_id": site,
		"config": map[string]any{"url": g.url(), "paths": []string{"docs/**"}, "token": "secret-token-123"},
		"sync":   map[string]any{"publish": true}}, &ds)
	if ds.Config["branch"] != "main" || strings.Contains(fmt.Sprint(ds.Config["token"]), "secret-token") {
		t.Fatalf("config: %v", ds.Config)
	}

	first := a.runSync(ds.ID, nil)
	if first.Status != "completed" || first.Added != 10 || first.Failed != 0 || first.Ref == "" {
		t.Fatalf("first sync: %+v", first)
	}
	a.listed("/admin/api/v1/jobs?kind=sync", a.token, first.JobID) // a job like the others
	docs := a.siteDocs(site)
	if len(docs) != 10 {
		t.Fatalf("documents after the first sync: %d", len(docs))
	}
	p4 := docs["Page 4"]
	var detail syncedDoc
	a.admin("GET", fmt.Sprintf("/admin/api/v1/documents/%d", p4.ID), nil, &detail)
	prov, _ := detail.ParseMeta["sync"].(map[string]any)
	if prov["path"] != "docs/page4.md" || prov["commit"] != first.Ref || prov["edit_rule"] == nil {
		t.Fatalf("provenance of page 4: %v", detail.ParseMeta)
	}

	// Edit page 4 in Lore; then change it, page 1, rename page 3, delete
	// page 2 and add a broken DOCX at the source.
	a.admin("PUT", fmt.Sprintf("/admin/api/v1/documents/%d", p4.ID), map[string]any{"content": "edited in Lore"}, nil)
	g.write(map[string][]byte{"docs/page1.md": page("Page 1", "Changed."), "docs/page4.md": page("Page 4", "Changed at the source."),
		"docs/page2.md": nil, "docs/broken.docx": []byte("PK\x03\x04 not a zip")})
	g.mv("docs/page3.md", "docs/moved/page3.md")
	g.commit("second")
	second := a.runSync(ds.ID, map[string]any{})
	if second.Added != 0 || second.Updated != 3 || second.Deleted != 1 || second.Failed != 1 || second.Unchanged != 6 {
		t.Fatalf("second sync: %+v", second)
	}
	outcomes := map[string]string{}
	for _, it := range second.Items {
		outcomes[it.Key] = it.Outcome
		switch it.Key {
		case "docs/broken.docx":
			if it.Reason == "" {
				t.Fatalf("broken file without a reason: %+v", it)
			}
		case "docs/page4.md":
			if !strings.Contains(it.Note, "edit made in Lore") {
				t.Fatalf("page 4's note: %+v", it)
			}
		}
	}
	if outcomes["docs/moved/page3.md"] != "renamed" || outcomes["docs/page2.md"] != "deleted" || outcomes["docs/page1.md"] != "updated" {
		t.Fatalf("outcomes: %v", outcomes)
	}
	docs = a.siteDocs(site)
	if len(docs) != 9 || docs["Page 3"].ID == 0 || docs["Page 2"].ID != 0 {
		t.Fatalf("documents after the second sync: %v", len(docs))
	}
	a.admin("GET", fmt.Sprintf("/admin/api/v1/documents/%d", p4.ID), nil, &detail)
	if !strings.Contains(detail.Content, "Changed at the source") || detail.Sync["edited_in_lore"] != false || detail.Sync["key"] != "docs/page4.md" {
		t.Fatalf("page 4 kept the edit: %q %v", detail.Content, detail.Sync)
	}
	// An edit in Lore shows on the document until the source changes.
	a.admin("PUT", fmt.Sprintf("/admin/api/v1/documents/%d", p4.ID), map[string]any{"content": "edited again"}, nil)
	a.admin("GET", fmt.Sprintf("/admin/api/v1/documents/%d", p4.ID), nil, &detail)
	if detail.Sync["edited_in_lore"] != true || detail.Sync["edit_rule"] == nil {
		t.Fatalf("the edit does not show: %v", detail.Sync)
	}

	// Nothing changed: nothing converted.
	third := a.runSync(ds.ID, nil)
	if third.Added+third.Updated+third.Deleted+third.Failed != 1 || third.Failed != 1 || third.Unchanged != 9 {
		t.Fatalf("sync with nothing new: %+v", third)
	}

	// Deleting 6 of 9: the guard holds the deletions until confirmed.
	for _, n := range []int{0, 1, 5, 6, 7, 8} {
		g.write(map[string][]byte{fmt.Sprintf("docs/page%d.md", n): nil})
	}
	g.commit("mass deletion")
	held := a.runSync(ds.ID, nil)
	if held.Status != "held" || held.Deleted != 0 || !strings.Contains(held.Message, "mass-deletion guard") {
		t.Fatalf("held run: %+v", held)
	}
	if n := len(a.siteDocs(site)); n != 9 {
		t.Fatalf("documents after the held run: %d", n)
	}
	confirmed := a.runSync(ds.ID, map[string]any{"confirm_deletions": true})
	if confirmed.Status != "completed" || confirmed.Deleted != 6 {
		t.Fatalf("confirmed run: %+v", confirmed)
	}
	if n := len(a.siteDocs(site)); n != 3 {
		t.Fatalf("documents after the confirmed run: %d", n)
	}

	// A schedule: a Temporal Schedule named after the data source, whose
	// run (triggered now) is a sync like the others.
	a.admin("PUT", fmt.Sprintf("/admin/api/v1/data-sources/%d", ds.ID), map[string]any{"sync": map[string]any{"schedule": "@every 1h"}}, &ds)
	if ds.Sync["schedule"] != "@every 1h" || ds.Sync["schedule_id"] != workflows.SyncScheduleID(ds.ID) {
		t.Fatalf("sync view: %v", ds.Sync)
	}
	ctx := context.Background()
	h := a.d.Temporal.ScheduleClient().GetHandle(ctx, workflows.SyncScheduleID(ds.ID))
	if _, err := h.Describe(ctx); err != nil {
		t.Fatalf("schedule: %v", err)
	}
	if err := h.Trigger(ctx, client.ScheduleTriggerOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "a scheduled run", func() bool {
		var pg struct {
			List []syncRunView `json:"list"`
		}
		a.admin("GET", fmt.Sprintf("/admin/api/v1/data-sources/%d/syncs", ds.ID), nil, &pg)
		return len(pg.List) > 0 && pg.List[0].Trigger == "schedule" && pg.List[0].Status == "completed"
	})
	if r := a.do("PUT", fmt.Sprintf("/admin/api/v1/data-sources/%d", ds.ID), map[string]any{"sync": map[string]any{"schedule": "every day"}}, a.token); r.Status != 422 {
		t.Fatalf("bad schedule: %d %s", r.Status, r.Raw)
	}
	a.admin("DELETE", fmt.Sprintf("/admin/api/v1/data-sources/%d", ds.ID), nil, nil)
	if _, err := h.Describe(ctx); err == nil {
		t.Fatal("the schedule outlived its data source")
	}
}
