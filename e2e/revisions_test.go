package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/lorekb/lore/internal/db/dbtest"
	"github.com/lorekb/lore/worker"
	"github.com/lorekb/lore/workflows"
)

type retrievedChunk struct {
	DocumentID int64  `json:"document_id"`
	Text       string `json:"text"`
	Version    int64  `json:"content_version"`
}

// retrieveTexts runs the admins' retrieval test (the chat's pipeline) for
// query on the site.
func (a *app) retrieveTexts(site int64, query string) []retrievedChunk {
	a.t.Helper()
	var out struct {
		Chunks []retrievedChunk `json:"chunks"`
	}
	a.admin("POST", "/admin/api/v1/documents:retrieve", map[string]any{"site_id": site, "query": query, "top_k": 10}, &out)
	return out.Chunks
}

// noChunkSays fails when a retrieved chunk of doc contains text.
func noChunkSays(t *testing.T, what string, chunks []retrievedChunk, doc int64, text string) {
	t.Helper()
	for _, c := range chunks {
		if c.DocumentID == doc && strings.Contains(c.Text, text) {
			t.Fatalf("%s: retrieval served %q of content version %d: %+v", what, text, c.Version, c)
		}
	}
}

// someChunkSays fails unless a retrieved chunk of doc at version contains text.
func someChunkSays(t *testing.T, what string, chunks []retrievedChunk, doc, version int64, text string) {
	t.Helper()
	for _, c := range chunks {
		if c.DocumentID == doc && c.Version == version && strings.Contains(c.Text, text) {
			return
		}
	}
	t.Fatalf("%s: no chunk of document %d version %d says %q: %+v", what, doc, version, text, chunks)
}

// TestRetrievalFollowsTheCurrentRevision: after an edit, retrieval never
// serves the old text (not while the document waits for its re-index, not
// after it); a restore of the first revision is re-indexed and serves the
// restored text only; the vector store and the chunk rows hold the current
// version alone. A chat answer's sources name the revision they quoted, and
// the stored conversation marks them changed once the document changes.
func TestRetrievalFollowsTheCurrentRevision(t *testing.T) {
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			a := newApp(t, dialect, nil)
			site := a.site("Revisions " + dialect)
			oldText := "The flux capacitor needs exactly one point twenty one gigawatts of power."
			newText := "The warp core runs on dilithium crystals aligned by the chief engineer."
			id := a.newDoc(site, "Engine room", "# Engine room\n\n"+oldText+"\n", "published")
			a.waitStatus(id, "completed")
			someChunkSays(t, "first version", a.retrieveTexts(site, "flux capacitor gigawatts"), id, 1, "flux capacitor")

			// The chat quotes revision 1.
			body := map[string]any{"input": "How much power does the flux capacitor need?", "stream": false, "user": "m1",
				"filter": map[string]any{"site_id": site}}
			r := a.do("POST", "/v1/chat/responses", body, "")
			var answer struct {
				ID      string `json:"id"`
				Sources []struct {
					DocumentID int64 `json:"documentId"`
					Revision   int64 `json:"revision"`
				} `json:"sources"`
			}
			if r.Status != 200 || json.Unmarshal(r.Raw, &answer) != nil || len(answer.Sources) == 0 ||
				answer.Sources[0].DocumentID != id || answer.Sources[0].Revision != 1 {
				t.Fatalf("chat answer: %d %s", r.Status, r.Raw)
			}
			type storedSource struct {
				DocumentID      int64  `json:"documentId"`
				Revision        int64  `json:"revision"`
				ChangedSince    *bool  `json:"changed_since"`
				CurrentRevision *int64 `json:"current_revision"`
			}
			storedSources := func() []storedSource {
				t.Helper()
				var hist struct {
					Messages []struct {
						Role    string         `json:"role"`
						Sources []storedSource `json:"sources"`
					} `json:"messages"`
				}
				var found []storedSource
				eventually(t, 30*time.Second, "the answer stored", func() bool {
					r := a.do("GET", "/v1/chat/sessions/"+answer.ID+"/messages?member_id=m1", nil, "")
					hist.Messages = nil
					if r.Status != 200 || json.Unmarshal(r.Data, &hist) != nil {
						return false
					}
					for _, m := range hist.Messages {
						if m.Role == "assistant" && len(m.Sources) > 0 {
							found = m.Sources
							return true
						}
					}
					return false
				})
				return found
			}
			if s := storedSources()[0]; s.Revision != 1 || s.ChangedSince == nil || *s.ChangedSince ||
				s.CurrentRevision == nil || *s.CurrentRevision != 1 {
				t.Fatalf("stored source before the edit: %+v", s)
			}

			// Edit: the old text is gone from retrieval at once.
			a.admin("PUT", fmt.Sprintf("/admin/api/v1/documents/%d", id), map[string]any{"content": "# Engine room\n\n" + newText + "\n"}, nil)
			noChunkSays(t, "right after the edit", a.retrieveTexts(site, "flux capacitor gigawatts"), id, "flux capacitor")
			d := a.waitStatus(id, "completed")
			if d.Version != 2 {
				t.Fatalf("content_version %d after the edit", d.Version)
			}
			noChunkSays(t, "after the re-index", a.retrieveTexts(site, "flux capacitor gigawatts power"), id, "flux capacitor")
			someChunkSays(t, "edited version", a.retrieveTexts(site, "warp core dilithium crystals"), id, 2, "dilithium")
			if s := storedSources()[0]; s.Revision != 1 || s.ChangedSince == nil || !*s.ChangedSince ||
				s.CurrentRevision == nil || *s.CurrentRevision != 2 {
				t.Fatalf("stored source after the edit: %+v", s)
			}

			// Restore revision 1: a new revision 3, re-indexed.
			var res struct {
				Restored bool    `json:"restored"`
				JobID    *string `json:"job_id"`
				Revision struct {
					Revision int64 `json:"revision"`
				} `json:"revision"`
			}
			a.admin("POST", fmt.Sprintf("/admin/api/v1/documents/%d/revisions/1:restore", id), nil, &res)
			if !res.Restored || res.Revision.Revision != 3 || res.JobID == nil {
				t.Fatalf("restore: %+v", res)
			}
			noChunkSays(t, "right after the restore", a.retrieveTexts(site, "warp core dilithium crystals"), id, "dilithium")
			d = a.waitStatus(id, "completed")
			if d.Version != 3 {
				t.Fatalf("content_version %d after the restore", d.Version)
			}
			noChunkSays(t, "after the restore's re-index", a.retrieveTexts(site, "warp core dilithium crystals engineer"), id, "dilithium")
			someChunkSays(t, "restored version", a.retrieveTexts(site, "flux capacitor gigawatts"), id, 3, "flux capacitor")
			// The store and the chunk rows hold version 3 only.
			if n := a.chunks(id); n != d.ChunkCount {
				t.Fatalf("store holds %d chunks, chunk_count %d", n, d.ChunkCount)
			}
			rows, err := a.d.DB.DocumentChunks(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range rows {
				if c.Version != 3 {
					t.Fatalf("chunk row of version %d after the restore", c.Version)
				}
			}
			if s := storedSources()[0]; s.ChangedSince == nil || !*s.ChangedSince || *s.CurrentRevision != 3 {
				t.Fatalf("stored source after the restore: %+v", s)
			}
		})
	}
}

// TestRestoreIndexesLikeAFreshVectorization: restoring a revision of a
// 100-chunk document is indexed by the same vectorization job as a fresh
// vectorization, in about the same time (both measured here, side by side;
// the bound leaves room for a loaded machine).
func TestRestoreIndexesLikeAFreshVectorization(t *testing.T) {
	a := newApp(t, "sqlite", nil)
	site := a.site("Restore timing")
	var b strings.Builder
	for i := 0; i < 100; i++ { // a section a chunk: each under LORE_CHUNK_SIZE (800 runes)
		fmt.Fprintf(&b, "## Section %d\n\n%s\n\n", i, strings.Repeat(fmt.Sprintf("Step %d of the procedure takes its options and says what to check. ", i), 8))
	}
	first := b.String()
	start := time.Now()
	id := a.newDoc(site, "Procedure", first, "published")
	d := a.waitStatus(id, "completed")
	fresh := time.Since(start)
	if d.ChunkCount != 100 {
		t.Fatalf("%d chunks, want 100", d.ChunkCount)
	}
	a.admin("PUT", fmt.Sprintf("/admin/api/v1/documents/%d", id), map[string]any{"content": "# Short\n\nReplaced."}, nil)
	a.waitStatus(id, "completed")
	start = time.Now()
	a.admin("POST", fmt.Sprintf("/admin/api/v1/documents/%d/revisions/1:restore", id), nil, nil)
	eventually(t, 120*time.Second, "the restore indexed", func() bool {
		d = a.doc(id)
		return d.Version == 3 && d.VectorStatus == "completed"
	})
	restore := time.Since(start)
	t.Logf("100-chunk document (%d chunks): fresh vectorization %v, restore indexed in %v", d.ChunkCount, fresh, restore)
	if restore > 2*fresh+2*time.Second {
		t.Fatalf("restore indexed in %v, fresh vectorization took %v", restore, fresh)
	}
}

// TestRevisionPruningSchedule: the worker creates the pruning schedule at
// start (again at every start, leaving one), and a pass it starts prunes a
// document's revisions to LORE_REVISIONS_KEEP, the current one kept.
func TestRevisionPruningSchedule(t *testing.T) {
	a := newApp(t, "sqlite", map[string]string{"LORE_REVISIONS_KEEP": "2", "LORE_REVISIONS_PRUNE_EVERY": "30m"})
	ctx := context.Background()
	h := a.d.Temporal.ScheduleClient().GetHandle(ctx, workflows.PruneRevisionsID(a.queue))
	t.Cleanup(func() { _ = h.Delete(context.Background()) })
	var desc *client.ScheduleDescription
	eventually(t, 30*time.Second, "the pruning schedule", func() bool {
		var err error
		desc, err = h.Describe(ctx)
		return err == nil
	})
	if iv := desc.Schedule.Spec.Intervals; len(iv) != 1 || iv[0].Every != 30*time.Minute {
		t.Fatalf("schedule intervals %+v", iv)
	}
	// A second worker start updates the same schedule.
	if err := worker.EnsurePruneSchedule(ctx, a.d); err != nil {
		t.Fatalf("second EnsurePruneSchedule: %v", err)
	}
	site := a.site("Pruning")
	id := a.newDoc(site, "Pruned", "v1", "draft")
	for i := 2; i <= 5; i++ {
		a.admin("PUT", fmt.Sprintf("/admin/api/v1/documents/%d", id), map[string]any{"content": fmt.Sprintf("v%d", i)}, nil)
	}
	if n, _ := a.d.DB.CountRevisions(ctx, id); n != 5 {
		t.Fatalf("%d revisions before pruning", n)
	}
	if err := h.Trigger(ctx, client.ScheduleTriggerOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the pass to prune to 2 revisions", func() bool {
		n, _ := a.d.DB.CountRevisions(ctx, id)
		return n == 2
	})
	var pg struct {
		List []struct {
			Revision int64 `json:"revision"`
			Current  bool  `json:"current"`
		} `json:"list"`
	}
	a.admin("GET", fmt.Sprintf("/admin/api/v1/documents/%d/revisions", id), nil, &pg)
	if len(pg.List) != 2 || pg.List[0].Revision != 5 || !pg.List[0].Current || pg.List[1].Revision != 4 {
		t.Fatalf("after pruning: %+v", pg.List)
	}
}
