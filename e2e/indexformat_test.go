package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/vector"
	"github.com/lorekb/lore/models"
	"github.com/lorekb/lore/worker"
)

// restart stops the whole process (API and worker) and starts it again on
// the same database and data directory with env changed.
func (a *app) restart(env map[string]string) {
	a.t.Helper()
	a.stop()
	for k, v := range env {
		a.env[k] = v
	}
	a.restarted = true
	a.start()
}

// chunkRows reads the document's chunk rows.
func (a *app) chunkRows(docID int64) []models.Chunk {
	a.t.Helper()
	rows, err := a.d.DB.DocumentChunks(context.Background(), docID)
	if err != nil {
		a.t.Fatal(err)
	}
	return rows
}

// checkChunks requires the document's chunk rows to be n (n < 0: any
// number above 0), all of format, and the vector store to hold exactly as
// many chunks: no chunk of an older format or cut left beside the new ones.
func (a *app) checkChunks(docID int64, n int, format string) int {
	a.t.Helper()
	rows := a.chunkRows(docID)
	if len(rows) == 0 || n >= 0 && len(rows) != n {
		a.t.Fatalf("document %d: %d chunk rows, want %d", docID, len(rows), n)
	}
	for _, r := range rows {
		if r.IndexFormat != format {
			a.t.Fatalf("document %d chunk %d: format %q, want %q", docID, r.Index, r.IndexFormat, format)
		}
	}
	if stored := a.chunks(docID); stored != len(rows) {
		a.t.Fatalf("document %d: the vector store holds %d chunks, the database %d rows (old chunks left?)", docID, stored, len(rows))
	}
	return len(rows)
}

// TestIndexFormatChangeReindexesSites changes what an index is made of and
// watches the worker bring every site to the new format: first a site whose
// chunks are marked with an older analyzer format (a worker restart re-indexes
// that site once, and only it), then a chunking change (LORE_CHUNK_SIZE) that
// cuts fewer chunks per document: after the re-index each document holds only
// its new chunks, in the store and in the database.
func TestIndexFormatChangeReindexesSites(t *testing.T) {
	a := newApp(t, "sqlite", map[string]string{"LORE_CHUNK_SIZE": "200"})
	ctx := context.Background()
	long := "# Backups\n\n" + strings.Repeat("Backups are copied to the archive directory every night by the scheduler. ", 40) +
		"\n\n## Restoring\n\nStop the server, then copy the archive back into the data directory.\n"
	site := a.site("Format A")
	other := a.site("Format B")
	doc := a.newDoc(site, "Backups", long, "published")
	doc2 := a.newDoc(other, "Backups too", long, "published")
	a.waitStatus(doc, "completed")
	a.waitStatus(doc2, "completed")
	small := vector.IndexFormat(200, 100)
	if a.d.IndexFormat() != small {
		t.Fatalf("format %q, want %q", a.d.IndexFormat(), small)
	}
	before := a.checkChunks(doc, -1, small)
	a.checkChunks(doc2, before, small)

	// An older analyzer wrote site A's chunks: a worker start re-indexes it.
	if _, err := a.d.DB.NewUpdate().Model((*models.Chunk)(nil)).Set("index_format = ?", "a1.f1.h3.c200+100").
		Where("site_id = ?", site).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	a.stopWorker()
	a.startWorker()
	jobA := worker.FormatReindexID(site, small)
	if !strings.HasPrefix(jobA, fmt.Sprintf("reindex-site-%d-f", site)) {
		t.Fatalf("job id %q", jobA)
	}
	eventually(t, 60*time.Second, "the format re-index job of site A", func() bool {
		return a.do("GET", "/admin/api/v1/jobs/"+jobA, nil, a.token).Status == 200
	})
	j := a.waitJob(jobA, "completed")
	if j.Kind != "reindex" || j.SiteID == nil || *j.SiteID != site || j.RequestedBy != "system" ||
		!strings.Contains(j.Title, "Format A") || j.Progress == nil || j.Progress.Completed != 1 {
		t.Fatalf("job view %+v (progress %+v)", j, j.Progress)
	}
	a.checkChunks(doc, before, small)
	if r := a.do("GET", "/admin/api/v1/jobs/"+worker.FormatReindexID(other, small), nil, a.token); r.Status != 404 {
		t.Fatalf("site B is of the current format, yet: %d %s", r.Status, r.Raw)
	}
	row, err := a.d.DB.GetJob(ctx, jobA)
	if err != nil {
		t.Fatal(err)
	}
	// Once done, another start asks for nothing more.
	a.stopWorker()
	a.startWorker()
	time.Sleep(2 * time.Second)
	again, err := a.d.DB.GetJob(ctx, jobA)
	if err != nil || again.RunID != row.RunID {
		t.Fatalf("second start: %+v %v (run was %s)", again, err, row.RunID)
	}
	if ids, err := worker.ReindexOutdatedSites(ctx, a.d); err != nil || len(ids) != 0 {
		t.Fatalf("nothing left to re-index, got %v %v", ids, err)
	}

	// A chunking change: every site is re-indexed, and each document keeps
	// only its new, fewer chunks.
	a.restart(map[string]string{"LORE_CHUNK_SIZE": "800"})
	big := vector.IndexFormat(800, 100)
	for _, s := range []int64{site, other} {
		id := worker.FormatReindexID(s, big)
		eventually(t, 60*time.Second, "the re-index job of site "+fmt.Sprint(s), func() bool {
			return a.do("GET", "/admin/api/v1/jobs/"+id, nil, a.token).Status == 200
		})
		a.waitJob(id, "completed")
	}
	after := a.checkChunks(doc, -1, big)
	if after >= before {
		t.Fatalf("chunk size 800 cut %d chunks, 200 cut %d", after, before)
	}
	a.checkChunks(doc2, after, big)
	if d := a.doc(doc); d.VectorStatus != "completed" || d.ChunkCount != after {
		t.Fatalf("document after the re-index: %+v", d)
	}
	var out struct {
		Chunks []struct {
			DocumentID int64  `json:"document_id"`
			Text       string `json:"text"`
		} `json:"chunks"`
	}
	a.admin("POST", "/admin/api/v1/documents:retrieve", map[string]any{"site_id": site, "query": "restore the archive"}, &out)
	if len(out.Chunks) == 0 || out.Chunks[0].DocumentID != doc || out.Chunks[0].Text == "" {
		t.Fatalf("retrieval after the re-index: %+v", out.Chunks)
	}
}
