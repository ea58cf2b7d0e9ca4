package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/api"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
)

// TestRetrievalTestAndChunkView runs the admins' retrieval test and chunk
// view through the API against a real Temporal dev server and worker: the
// chunks the chat's search would get, with every stage's score, each stage
// switchable, the stored chunks with heading paths and offsets, and bad
// queries refused.
func TestRetrievalTestAndChunkView(t *testing.T) {
	a := newApp(t, "sqlite", nil)
	site := a.site("Retrieval")
	backup := a.newDoc(site, "Backups", "# Backups\n\n## Restoring a backup\n\nStop the server, then copy the archive back into the data directory.\n\n## Scheduling\n\nBackups run nightly.\n", "published")
	other := a.newDoc(site, "Install", "# Install\n\nDownload the package and run the installer.\n", "published")
	a.waitStatus(backup, "completed")
	a.waitStatus(other, "completed")

	var out struct {
		Chunks []api.RetrievedChunk `json:"chunks"`
	}
	a.admin("POST", "/admin/api/v1/documents:retrieve", map[string]any{"site_id": site, "query": "How do I restore a backup?", "top_k": 3}, &out)
	if len(out.Chunks) == 0 {
		t.Fatal("no chunks")
	}
	top := out.Chunks[0]
	if top.DocumentID != backup || top.Heading != "Backups > Restoring a backup" || !strings.Contains(top.Text, "archive") ||
		top.Keyword == nil || top.Rerank == nil || top.Fused <= 0 || top.Relevance != 1 {
		t.Fatalf("top chunk %+v", top)
	}
	// Keyword only: no dense or rerank scores.
	out.Chunks = nil
	a.admin("POST", "/admin/api/v1/documents:retrieve", map[string]any{"site_id": site, "query": "restore backup",
		"stages": map[string]bool{"keyword": true}}, &out)
	if len(out.Chunks) == 0 || out.Chunks[0].Dense != nil || out.Chunks[0].Rerank != nil || out.Chunks[0].Keyword == nil {
		t.Fatalf("keyword only: %+v", out.Chunks)
	}
	// Narrowed to the other document.
	out.Chunks = nil
	a.admin("POST", "/admin/api/v1/documents:retrieve", map[string]any{"site_id": site, "query": "restore backup installer",
		"document_ids": []int64{other}}, &out)
	for _, c := range out.Chunks {
		if c.DocumentID != other {
			t.Fatalf("document filter: %+v", out.Chunks)
		}
	}
	for _, q := range []string{"", "   ", "bad\x01query", strings.Repeat("x", 2001)} {
		if r := a.do("POST", "/admin/api/v1/documents:retrieve", map[string]any{"site_id": site, "query": q}, a.token); r.Status != 422 {
			t.Errorf("query %.20q: %d %s", q, r.Status, r.Raw)
		}
	}
	if r := a.do("POST", "/admin/api/v1/documents:retrieve", map[string]any{"site_id": 999999999, "query": "x"}, a.token); r.Status != 400 {
		t.Errorf("missing site: %d %s", r.Status, r.Raw)
	}

	// The retrieval workflows' histories hold ids and scores, never chunk
	// text: the handler read the text from the database.
	tc := a.d.Temporal
	var runs []string
	eventually(t, 30*time.Second, "the retrieval workflows listed", func() bool {
		res, err := tc.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
			Query: fmt.Sprintf("TaskQueue = '%s' AND WorkflowType = 'Retrieve'", a.queue)})
		if err != nil {
			t.Fatal(err)
		}
		runs = runs[:0]
		for _, e := range res.Executions {
			runs = append(runs, e.Execution.WorkflowId)
		}
		return len(runs) >= 3
	})
	for _, id := range runs {
		it := tc.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			var results []*commonpb.Payload
			results = append(results, ev.GetActivityTaskCompletedEventAttributes().GetResult().GetPayloads()...)
			results = append(results, ev.GetWorkflowExecutionCompletedEventAttributes().GetResult().GetPayloads()...)
			for _, p := range results {
				for _, text := range []string{"archive", "installer", "Restoring a backup", "Backups", "Install"} {
					if strings.Contains(string(p.Data), text) {
						t.Fatalf("workflow %s history carries document text %q: %s", id, text, p.Data)
					}
				}
			}
		}
	}

	// The chunk view reads the database: no workflow, no worker, whatever
	// the vector store.
	a.stopWorker()
	var doc struct {
		ContentVersion int64 `json:"content_version"`
	}
	a.admin("GET", fmt.Sprintf("/admin/api/v1/documents/%d", backup), nil, &doc)
	var view []struct {
		Text string `json:"content"`
		Meta struct {
			Index   int    `json:"chunk_index"`
			Version int64  `json:"content_version"`
			Heading string `json:"heading_path"`
			Start   int    `json:"start"`
			End     int    `json:"end"`
			Format  string `json:"index_format"`
		} `json:"metadata"`
	}
	a.admin("GET", fmt.Sprintf("/admin/api/v1/documents/%d/chunks", backup), nil, &view)
	if len(view) < 2 {
		t.Fatalf("chunk view: %+v", view)
	}
	content := []rune("# Backups\n\n## Restoring a backup\n\nStop the server, then copy the archive back into the data directory.\n\n## Scheduling\n\nBackups run nightly.\n")
	for i, c := range view {
		m := c.Meta
		if m.Index != i || m.Version != doc.ContentVersion || m.Start < 0 || string(content[m.Start:m.End]) != c.Text ||
			m.Format != a.d.IndexFormat() {
			t.Errorf("chunk %d: %+v (content version %d)", i, c, doc.ContentVersion)
		}
	}
	if view[0].Meta.Heading != "Backups > Restoring a backup" {
		t.Errorf("heading path %q", view[0].Meta.Heading)
	}
}
