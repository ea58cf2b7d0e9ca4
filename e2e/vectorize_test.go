package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/db/dbtest"
	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/models"
)

type docView struct {
	ID           int64  `json:"id"`
	VectorStatus string `json:"vector_status"`
	VectorError  string `json:"vector_error"`
	ChunkCount   int    `json:"chunk_count"`
	Version      int64  `json:"content_version"`
}

func (a *app) doc(id int64) docView {
	var d docView
	a.admin("GET", fmt.Sprintf("/admin/api/v1/documents/%d", id), nil, &d)
	return d
}

func (a *app) site(name string) int64 {
	var s struct {
		ID int64 `json:"id"`
	}
	a.admin("POST", "/admin/api/v1/sites", map[string]any{"name": name}, &s)
	return s.ID
}

func (a *app) newDoc(siteID int64, title, content, status string) int64 {
	var d struct {
		ID int64 `json:"id"`
	}
	a.admin("POST", "/admin/api/v1/documents", map[string]any{"site_id": siteID, "title": title, "content": content, "status": status}, &d)
	return d.ID
}

func (a *app) waitStatus(id int64, status string) docView {
	a.t.Helper()
	var d docView
	eventually(a.t, 60*time.Second, fmt.Sprintf("document %d to be %s", id, status), func() bool {
		d = a.doc(id)
		return d.VectorStatus == status
	})
	return d
}

func (a *app) chunks(docID int64) int {
	_, store, err := a.d.TenantVectors(context.Background(), 1)
	if err != nil {
		a.t.Fatal(err)
	}
	n, err := store.CountDocument(context.Background(), docID)
	if err != nil {
		a.t.Fatal(err)
	}
	return n
}

var guide = strings.Repeat("## Install\n\nRun the installer and follow the prompts. The installer checks the system.\n\n## Configure\n\nSet LORE_DATA_DIR to keep data in another directory. Restart after changes.\n\n", 12)

func TestVectorizeLifecycle(t *testing.T) {
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			a := newApp(t, dialect, nil)
			site := a.site("Docs " + dialect)
			// automatic mode (default): publishing starts vectorization.
			id := a.newDoc(site, "Install guide", guide, "published")
			d := a.waitStatus(id, "completed")
			if d.ChunkCount == 0 || a.chunks(id) != d.ChunkCount {
				t.Fatalf("chunk_count %d, store holds %d", d.ChunkCount, a.chunks(id))
			}
			// an edit re-vectorizes; the store then holds only the new version.
			a.admin("PUT", fmt.Sprintf("/admin/api/v1/documents/%d", id), map[string]any{"content": "# Short\n\nOnly one paragraph now."}, nil)
			eventually(t, 60*time.Second, "re-vectorized edit", func() bool {
				d = a.doc(id)
				return d.VectorStatus == "completed" && d.ChunkCount == 1
			})
			if n := a.chunks(id); n != 1 {
				t.Fatalf("store holds %d chunks after the edit, want 1 (stale versions dropped)", n)
			}
			// explicit :vectorize returns the job; the job endpoint reports it.
			var vr struct {
				JobID        string `json:"job_id"`
				VectorStatus string `json:"vector_status"`
			}
			a.admin("POST", fmt.Sprintf("/admin/api/v1/documents/%d:vectorize", id), nil, &vr)
			if vr.JobID != fmt.Sprintf("vectorize-doc-%d", id) {
				t.Fatalf("job id %q", vr.JobID)
			}
			a.waitStatus(id, "completed")
			eventually(t, 30*time.Second, "job completed", func() bool {
				var j struct {
					Status string `json:"status"`
				}
				a.admin("GET", "/admin/api/v1/jobs/"+vr.JobID, nil, &j)
				return j.Status == "completed"
			})
			// empty content: completed with zero chunks, never stuck.
			empty := a.newDoc(site, "Empty", "", "published")
			if d := a.waitStatus(empty, "completed"); d.ChunkCount != 0 {
				t.Fatalf("empty document has %d chunks", d.ChunkCount)
			}
			// :removeVector resets the status and empties the store.
			var rv struct {
				VectorStatus string `json:"vector_status"`
			}
			a.admin("POST", fmt.Sprintf("/admin/api/v1/documents/%d:removeVector", id), nil, &rv)
			if rv.VectorStatus != "none" || a.chunks(id) != 0 {
				t.Fatalf("after removeVector: %s, %d chunks", rv.VectorStatus, a.chunks(id))
			}
			// bad input
			if r := a.do("POST", "/admin/api/v1/documents/999999:vectorize", nil, a.token); r.Status != 404 {
				t.Fatalf("missing document: %d %s", r.Status, r.Raw)
			}
			if r := a.do("POST", "/admin/api/v1/documents:batchVectorize", map[string]any{"document_ids": []int64{}}, a.token); r.Status != 422 {
				t.Fatalf("empty batch: %d %s", r.Status, r.Raw)
			}
			many := make([]int64, 5001)
			if r := a.do("POST", "/admin/api/v1/documents:batchVectorize", map[string]any{"document_ids": many}, a.token); r.Status != 422 || !strings.Contains(r.Msg, "at most") {
				t.Fatalf("oversized batch: %d %s", r.Status, r.Raw)
			}
			// deleting a published document removes its vectors.
			id2 := a.newDoc(site, "Second", guide, "published")
			a.waitStatus(id2, "completed")
			a.admin("DELETE", fmt.Sprintf("/admin/api/v1/documents/%d", id2), nil, nil)
			eventually(t, 30*time.Second, "vectors of the deleted document removed", func() bool { return a.chunks(id2) == 0 })
		})
	}
}

func TestManualModeAndBatchSurvivesWorkerStop(t *testing.T) {
	a := newApp(t, "postgres", nil)
	ctx := context.Background()
	cfg, _ := json.Marshal(deps.AIConfig{VectorizeMode: deps.ModeManual})
	now := time.Now().UTC()
	if _, err := a.d.DB.NewInsert().Model(&models.SystemConfig{TenantID: 1, ConfigKey: deps.AIConfigKey, Value: string(cfg), CreatedAt: now, UpdatedAt: now}).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	site := a.site("Batch site")
	// manual mode: publishing does not vectorize.
	first := a.newDoc(site, "Manual", guide, "published")
	time.Sleep(500 * time.Millisecond)
	if d := a.doc(first); d.VectorStatus != "none" {
		t.Fatalf("manual mode vectorized on publish: %s", d.VectorStatus)
	}
	const n = 200
	docs := make([]models.Document, n)
	for i := range docs {
		docs[i] = models.Document{TenantID: 1, SiteID: site, Title: fmt.Sprintf("Doc %d", i), Status: models.DocPublished,
			Content: fmt.Sprintf("# Page %d\n\n%s", i, guide), VectorStatus: models.VecNone, ContentVersion: 1, Tags: "[]",
			CreatedAt: now, UpdatedAt: now}
	}
	if _, err := a.d.DB.NewInsert().Model(&docs).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, n)
	for i := range docs {
		ids[i] = docs[i].ID
	}
	var br struct {
		JobID        string `json:"job_id"`
		SuccessCount int    `json:"success_count"`
	}
	a.admin("POST", "/admin/api/v1/documents:batchVectorize", map[string]any{"document_ids": ids}, &br)
	if br.SuccessCount != n || !strings.HasPrefix(br.JobID, "batch-vectorize-") {
		t.Fatalf("batch: %+v", br)
	}
	type job struct {
		Status   string `json:"status"`
		Progress struct {
			Completed, Failed, Total int
		} `json:"progress"`
	}
	var j job
	eventually(t, 120*time.Second, "batch under way", func() bool {
		a.admin("GET", "/admin/api/v1/jobs/"+br.JobID, nil, &j)
		return j.Progress.Completed >= 20
	})
	a.stopWorker() // the worker goes away mid-batch
	time.Sleep(time.Second)
	a.startWorker()
	eventually(t, 180*time.Second, "batch completed after the worker restart", func() bool {
		a.admin("GET", "/admin/api/v1/jobs/"+br.JobID, nil, &j)
		return j.Status == "completed"
	})
	if j.Progress.Completed != n || j.Progress.Failed != 0 {
		t.Fatalf("progress %+v", j.Progress)
	}
	var total int
	if err := a.d.DB.NewSelect().Model((*models.Document)(nil)).ColumnExpr("COALESCE(SUM(chunk_count),0)").
		Where("id IN (?)", bunIn(ids)).Scan(ctx, &total); err != nil {
		t.Fatal(err)
	}
	notDone, _ := a.d.DB.NewSelect().Model((*models.Document)(nil)).Where("id IN (?)", bunIn(ids)).
		Where("vector_status <> ?", models.VecCompleted).Count(ctx)
	_, store, _ := a.d.TenantVectors(ctx, 1)
	stored := 0
	for _, id := range ids {
		c, _ := store.CountDocument(ctx, id)
		stored += c
	}
	if notDone != 0 || total == 0 || stored != total {
		t.Fatalf("not completed: %d; chunk_count sum %d, store holds %d (duplicates or losses)", notDone, total, stored)
	}
}
