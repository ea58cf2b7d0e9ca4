package activities

import (
	"strings"
	"testing"

	"github.com/lorekb/lore/internal/datasource/gitsrc"
	"github.com/lorekb/lore/models"
)

// TestPlanGit: the plan against the items last synced adds new paths,
// updates changed blobs, pairs a deleted path with its blob under a new
// path as a rename, deletes the rest and counts the unchanged.
func TestPlanGit(t *testing.T) {
	items := []models.SyncItem{{Key: "a.md", Version: "1", DocumentID: 10}, {Key: "b.md", Version: "2", DocumentID: 11},
		{Key: "c.md", Version: "3", DocumentID: 12}, {Key: "d.md", Version: "4", DocumentID: 13}}
	files := []gitsrc.File{{Path: "a.md", Blob: "1"}, {Path: "b.md", Blob: "2b"}, {Path: "moved/c.md", Blob: "3"}, {Path: "e.md", Blob: "5"}}
	p := PlanGit(files, items)
	got := map[string]string{}
	for _, c := range p.Changes {
		got[c.Key] = c.Op
		if c.Op == SyncRename && (c.From != "c.md" || c.DocumentID != 12) {
			t.Errorf("rename: %+v", c)
		}
	}
	want := map[string]string{"b.md": SyncUpdate, "moved/c.md": SyncRename, "e.md": SyncAdd, "d.md": SyncDelete}
	if len(got) != len(want) || p.Unchanged != 1 || p.Existing != 4 {
		t.Fatalf("plan %v, unchanged %d", got, p.Unchanged)
	}
	for k, op := range want {
		if got[k] != op {
			t.Errorf("%s: %s, want %s", k, got[k], op)
		}
	}
}

// TestMassDeletionGuard: more than the share of deletions is held unless
// confirmed; the other changes stay.
func TestMassDeletionGuard(t *testing.T) {
	plan := func() SyncPlan {
		return SyncPlan{Existing: 10, DeleteShare: 0.3, Changes: []SyncChange{{Key: "n.md", Op: SyncAdd},
			{Key: "1", Op: SyncDelete}, {Key: "2", Op: SyncDelete}, {Key: "3", Op: SyncDelete}, {Key: "4", Op: SyncDelete}}}
	}
	p := plan()
	p.guard(false)
	if p.HeldDeletions != 4 || len(p.Changes) != 1 || !strings.Contains(p.Held, "4 of the source's 10") {
		t.Fatalf("held: %+v", p)
	}
	p = plan()
	p.guard(true)
	if p.Held != "" || len(p.Changes) != 5 {
		t.Fatalf("confirmed: %+v", p)
	}
	p = plan()
	p.Changes = p.Changes[:4] // 3 of 10: within the share
	p.guard(false)
	if p.Held != "" || len(p.Changes) != 4 {
		t.Fatalf("within the share: %+v", p)
	}
}

// TestStartedOutcome: a run SyncStart applies whole is recorded as the
// workflow would record it: the plan's failures and unchanged files counted
// with the items' outcomes, held with the guard's message, and the run it
// waited for named first.
func TestStartedOutcome(t *testing.T) {
	spec := SyncSpec{RunID: 4, Ref: "abc"}
	plan := SyncPlan{Unchanged: 7, Failed: []SyncItemResult{{Key: "bad.md", Outcome: SyncFailed, Reason: "broken"}}}
	items := []SyncItemResult{{Key: "a.md", Outcome: SyncUpdated, DocumentID: 1}, {Key: "b.md", Outcome: SyncAdded, DocumentID: 2},
		{Key: "c.md", Outcome: SyncDeleted, DocumentID: 3}}
	got := startedOutcome(spec, plan, items, "")
	if got.RunID != 4 || got.Ref != "abc" || got.Status != models.SyncCompleted || got.Message != "" || len(got.Items) != 4 ||
		got.Counts[SyncUnchanged] != 7 || got.Counts[SyncFailed] != 1 || got.Counts[SyncUpdated] != 1 || got.Counts[SyncAdded] != 1 ||
		got.Counts[SyncDeleted] != 1 {
		t.Fatalf("outcome %+v", got)
	}
	plan.Held = "mass-deletion guard: …"
	got = startedOutcome(spec, plan, items, "sync-ds-1-x")
	if got.Status != models.SyncHeld || got.Message != "waited for sync sync-ds-1-x to finish; mass-deletion guard: …" {
		t.Fatalf("held outcome %+v", got)
	}
	if indexes(spec, items) || !indexes(SyncSpec{Vectorize: true}, items) || indexes(SyncSpec{Vectorize: true}, items[2:]) {
		t.Fatal("indexes: only written documents of a vectorizing run are left to index")
	}
}
