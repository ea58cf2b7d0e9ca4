package api

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/models"
	"github.com/lorekb/lore/workflows"
)

func revPath(doc int64, rest string) string {
	return fmt.Sprintf("%s/documents/%d/revisions%s", adminPath, doc, rest)
}

func listRevs(h *harness, doc int64, query, token string) Page[RevisionInfo] {
	h.t.Helper()
	var pg Page[RevisionInfo]
	h.must(200, "GET", revPath(doc, query), nil, token).into(h.t, &pg)
	return pg
}

// TestRevisionsListGetDiffRestore: edits store revisions (identical saves
// none) listed newest first with their author and source; one reads back
// whole; a diff shows the changed lines; a restore makes an old text current
// as a new revision, re-indexes the vectorized document, and restoring the
// current text changes nothing.
func TestRevisionsListGetDiffRestore(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		fake := &fakeTemporal{}
		h.d.Temporal = fake
		site := kbSite(h, "Revs")
		editor := h.userToken(models.RoleEditor, site.ID)
		doc := kbDocument(h, map[string]any{"title": "Install", "site_id": site.ID,
			"content": "line one\nline two\nline three\n"})
		put := func(body map[string]any, token string) DocumentResponse {
			var d DocumentResponse
			h.must(200, "PUT", fmt.Sprintf("%s/documents/%d", adminPath, doc.ID), body, token).into(t, &d)
			return d
		}
		put(map[string]any{"content": "line one\nline 2\nline three\nline four\n"}, editor)
		put(map[string]any{"content": "line one\nline 2\nline three\nline four\n"}, editor) // identical
		put(map[string]any{"summary": "only the summary"}, editor)                          // not title or content
		put(map[string]any{"title": "Installing"}, h.admin)

		pg := listRevs(h, doc.ID, "", editor)
		if pg.Pagination.Total != 3 || len(pg.List) != 3 {
			t.Fatalf("revisions %+v", pg)
		}
		r3, r2, r1 := pg.List[0], pg.List[1], pg.List[2]
		editorEmail := tokenUser(h, editor).Email
		if r3.Revision != 3 || !r3.Current || r3.Title != "Installing" || r3.Source != "edit" || r3.Author != tokenUser(h, h.admin).Email ||
			r2.Revision != 2 || r2.Current || r2.Author != editorEmail || r2.AuthorID == nil || r2.Source != "edit" ||
			r1.Revision != 1 || r1.Source != "create" || r1.ContentBytes != len("line one\nline two\nline three\n") ||
			r1.ContentHash != models.RevisionHash("Install", "line one\nline two\nline three\n") {
			t.Fatalf("revisions: %+v", pg.List)
		}
		// Paging as the other lists.
		p2 := listRevs(h, doc.ID, "?page=2&size=2", editor)
		if len(p2.List) != 1 || p2.List[0].Revision != 1 || p2.Pagination.Page != 2 || p2.Pagination.Total != 3 {
			t.Fatalf("page 2: %+v", p2)
		}

		var one RevisionDetail
		h.must(200, "GET", revPath(doc.ID, "/1"), nil, editor).into(t, &one)
		if one.Content != "line one\nline two\nline three\n" || one.Title != "Install" || one.Current {
			t.Fatalf("revision 1: %+v", one)
		}

		var diff RevisionDiff
		h.must(200, "GET", revPath(doc.ID, "/2:diff?against=1"), nil, editor).into(t, &diff)
		if diff.Added != 2 || diff.Removed != 1 || diff.From == nil || diff.From.Revision != 1 || diff.To.Revision != 2 ||
			diff.TitleChanged || len(diff.Hunks) != 1 {
			t.Fatalf("diff 1→2: %+v", diff)
		}
		wantUnified := "--- revision 1\n+++ revision 2\n@@ -1,3 +1,4 @@\n line one\n-line two\n+line 2\n line three\n+line four\n"
		if diff.Unified != wantUnified {
			t.Fatalf("unified:\n%s\nwant:\n%s", diff.Unified, wantUnified)
		}
		// Default: against the revision before; revision 3 changed the title only.
		h.must(200, "GET", revPath(doc.ID, "/3:diff"), nil, editor).into(t, &diff)
		if diff.From == nil || diff.From.Revision != 2 || !diff.TitleChanged || diff.Added != 0 || diff.Removed != 0 || len(diff.Hunks) != 0 {
			t.Fatalf("diff 3: %+v", diff)
		}
		// The first revision against nothing: every line added.
		h.must(200, "GET", revPath(doc.ID, "/1:diff"), nil, editor).into(t, &diff)
		if diff.From != nil || diff.Added != 3 || diff.Removed != 0 || !strings.HasPrefix(diff.Unified, "--- /dev/null\n+++ revision 1\n@@ -0,0 +1,3 @@\n") {
			t.Fatalf("diff 1: %+v", diff)
		}
		// Backwards works too.
		h.must(200, "GET", revPath(doc.ID, "/1:diff?against=2"), nil, editor).into(t, &diff)
		if diff.Added != 1 || diff.Removed != 2 {
			t.Fatalf("diff 2→1: %+v", diff)
		}

		// Restore revision 1 of a vectorized document: a new revision 4
		// with revision 1's text, by the editor, and a re-index job.
		kbSetDoc(h, doc.ID, "vector_status = ?", models.VecCompleted)
		var res RevisionRestored
		h.must(200, "POST", revPath(doc.ID, "/1:restore"), nil, editor).into(t, &res)
		if !res.Restored || res.RestoredFrom != 1 || res.Revision.Revision != 4 || res.Revision.Source != "restore" ||
			res.Revision.RestoredFrom == nil || *res.Revision.RestoredFrom != 1 || res.Revision.Author != editorEmail || !res.Revision.Current ||
			res.Document.Title != "Install" || res.Document.Content == nil || *res.Document.Content != "line one\nline two\nline three\n" ||
			res.Document.Version != 4 || res.Revision.ContentHash != r1.ContentHash {
			t.Fatalf("restore: %+v", res)
		}
		if res.JobID == nil || *res.JobID != workflows.VectorizeDocID(doc.ID) || res.Document.VectorStatus != models.VecPending {
			t.Fatalf("restore of a vectorized document: job %v, vector_status %s", res.JobID, res.Document.VectorStatus)
		}
		// Restoring the text that is current stores nothing, starts nothing.
		started := len(fake.started)
		h.must(200, "POST", revPath(doc.ID, "/4:restore"), nil, editor).into(t, &res)
		if res.Restored || res.Revision.Revision != 4 || res.JobID != nil || len(fake.started) != started {
			t.Fatalf("restore of the current text: %+v", res)
		}
		h.must(200, "POST", revPath(doc.ID, "/1:restore"), nil, editor).into(t, &res) // same text as revision 4
		if res.Restored || listRevs(h, doc.ID, "", editor).Pagination.Total != 4 {
			t.Fatalf("restore of a text equal to the current one stored a revision: %+v", res)
		}
		// A draft that was never vectorized is restored without a job
		// (manual mode or not, nothing of it is indexed).
		draft := kbDocument(h, map[string]any{"title": "Draft", "site_id": site.ID, "content": "a"})
		put2 := fmt.Sprintf("%s/documents/%d", adminPath, draft.ID)
		h.must(200, "PUT", put2, map[string]any{"content": "b"}, editor)
		h.must(200, "POST", revPath(draft.ID, "/1:restore"), nil, editor).into(t, &res)
		if !res.Restored || res.JobID != nil || res.Document.VectorStatus != models.VecNone || *res.Document.Content != "a" {
			t.Fatalf("restore of a draft: %+v", res)
		}
	})
}

// TestRevisionsScopeAndBadInput: revisions follow the document's site and
// roles (an editor or site_admin of another site, and another tenant's admin,
// get the 404 of a missing document); unknown revisions are 404, malformed
// ones 422; a huge document's diff is bounded.
func TestRevisionsScopeAndBadInput(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		site, other := kbSite(h, "Scoped"), kbSite(h, "Elsewhere")
		doc := kbDocument(h, map[string]any{"title": "T", "site_id": site.ID, "content": "x"})
		t2 := kbTenant(h, "other-tenant").ID
		foreignAdmin, _ := h.tenantUser(models.RoleAdmin, t2)
		outsiders := map[string]string{
			"editor of another site":     h.userToken(models.RoleEditor, other.ID),
			"site_admin of another site": h.userToken(models.RoleSiteAdmin, other.ID),
			"admin of another tenant":    foreignAdmin,
		}
		missing := h.do("GET", revPath(987654, ""), nil, h.admin)
		if missing.Status != 404 {
			t.Fatalf("missing document: %d %s", missing.Status, missing.Raw)
		}
		for who, tok := range outsiders {
			for _, c := range []struct{ method, path string }{
				{"GET", revPath(doc.ID, "")}, {"GET", revPath(doc.ID, "/1")},
				{"GET", revPath(doc.ID, "/1:diff")}, {"POST", revPath(doc.ID, "/1:restore")},
			} {
				r := h.do(c.method, c.path, nil, tok)
				if r.Status != 404 || r.Msg != missing.Msg {
					t.Errorf("%s %s as %s: %d %s, want the 404 of a missing document", c.method, c.path, who, r.Status, r.Raw)
				}
			}
		}
		if r := h.do("GET", revPath(doc.ID, ""), nil, ""); r.Status != 401 {
			t.Fatalf("no token: %d", r.Status)
		}
		for _, c := range []struct {
			path   string
			status int
		}{
			{revPath(doc.ID, "/2"), 404}, {revPath(doc.ID, "/2:diff"), 404}, {revPath(doc.ID, "/1:diff?against=7"), 404},
			{revPath(doc.ID, "/0"), 422}, {revPath(doc.ID, "/abc"), 422}, {revPath(doc.ID, "/-1:diff"), 422},
			{revPath(doc.ID, "/99999999999999999999"), 422},
			{revPath(doc.ID, "/1:diff?against=x"), 422}, {revPath(doc.ID, "/1:diff?against="), 422},
			{revPath(doc.ID, "/1:diff?against=0"), 422}, {revPath(doc.ID, "?size=1000"), 422}, {revPath(doc.ID, "?page=0"), 422},
		} {
			r := h.do("GET", c.path, nil, h.admin)
			if r.Status != c.status || r.Code != c.status {
				t.Errorf("GET %s: %d %s, want %d", c.path, r.Status, r.Raw, c.status)
			}
		}
		if r := h.do("POST", revPath(doc.ID, "/5:restore"), nil, h.admin); r.Status != 404 {
			t.Errorf("restore of an unknown revision: %d %s", r.Status, r.Raw)
		}

		// A large document rewritten whole: the diff answers quickly with
		// every change counted and a bounded listing.
		var a, b strings.Builder
		for i := 0; i < 60000; i++ {
			fmt.Fprintf(&a, "line %d of the old text\n", i)
			fmt.Fprintf(&b, "line %d of the new text\n", i)
		}
		big := kbDocument(h, map[string]any{"title": "Big", "site_id": site.ID, "content": a.String()})
		h.must(200, "PUT", fmt.Sprintf("%s/documents/%d", adminPath, big.ID), map[string]any{"content": b.String()}, h.admin)
		start := time.Now()
		var diff RevisionDiff
		h.must(200, "GET", revPath(big.ID, "/2:diff"), nil, h.admin).into(t, &diff)
		lines := 0
		for _, hk := range diff.Hunks {
			lines += len(hk.Lines)
		}
		if took := time.Since(start); took > 20*time.Second || !diff.Truncated || lines != diffMaxLines ||
			diff.Added != 60000 || diff.Removed != 60000 {
			t.Fatalf("big diff: %v, truncated %v, %d lines listed, +%d -%d", took, diff.Truncated, lines, diff.Added, diff.Removed)
		}
		// Revision rows of the documents: nothing else was stored by the refusals.
		if n, err := h.d.DB.CountRevisions(ctx, doc.ID); err != nil || n != 1 {
			t.Fatalf("revisions of the scoped document: %d %v", n, err)
		}
	})
}

// TestRevisionsPruneKeepsCurrent: the retention of the configuration applied
// by db.PruneRevisions leaves what the list shows.
func TestRevisionsPruneKeepsCurrent(t *testing.T) {
	h := newHarness(t, "sqlite", map[string]string{"LORE_REVISIONS_KEEP": "2"})
	site := kbSite(h, "Pruned")
	doc := kbDocument(h, map[string]any{"title": "P", "site_id": site.ID, "content": "v1"})
	for i := 2; i <= 5; i++ {
		h.must(200, "PUT", fmt.Sprintf("%s/documents/%d", adminPath, doc.ID), map[string]any{"content": fmt.Sprintf("v%d", i)}, h.admin)
	}
	ret := db.RevisionRetention{Keep: h.d.Cfg.RevisionsKeep, MaxAge: h.d.Cfg.RevisionsMaxAge}
	if ret.Keep != 2 || ret.MaxAge != 180*24*time.Hour {
		t.Fatalf("retention %+v", ret)
	}
	if _, _, err := h.d.DB.PruneRevisions(context.Background(), ret, time.Now(), 0, 100); err != nil {
		t.Fatal(err)
	}
	pg := listRevs(h, doc.ID, "", h.admin)
	if pg.Pagination.Total != 2 || pg.List[0].Revision != 5 || pg.List[1].Revision != 4 {
		t.Fatalf("after pruning: %+v", pg.List)
	}
	if r := h.do("GET", revPath(doc.ID, "/1"), nil, h.admin); r.Status != 404 || !strings.Contains(r.Msg, "pruned") {
		t.Fatalf("a pruned revision: %d %s", r.Status, r.Raw)
	}
}
