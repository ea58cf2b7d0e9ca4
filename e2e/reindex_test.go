package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/models"
)

type vectorStats struct {
	SiteID    int64          `json:"site_id"`
	Documents int            `json:"documents"`
	ByStatus  map[string]int `json:"by_status"`
	Chunks    int64          `json:"chunks"`
	Outdated  int            `json:"outdated"`
	Active    int            `json:"active"`
	LastError *struct {
		DocumentID int64  `json:"document_id"`
		Error      string `json:"error"`
	} `json:"last_error"`
}

func TestReindexSiteAndVectorStatsAtAGlance(t *testing.T) {
	a := newApp(t, "sqlite", map[string]string{"LORE_BATCH_VECTORIZE_GROUP": "10"})
	ctx := context.Background()
	site := a.site("Big")
	other := a.site("Small")
	now := time.Now().UTC()
	const n = 60
	docs := make([]models.Document, n+1)
	for i := range docs {
		docs[i] = models.Document{TenantID: 1, SiteID: site, Title: fmt.Sprintf("Doc %d", i), Status: models.DocPublished,
			Content: fmt.Sprintf("# Page %d\n\n%s", i, guide), VectorStatus: models.VecNone, ContentVersion: 1, Tags: "[]",
			CreatedAt: now, UpdatedAt: now}
	}
	docs[n].Status = models.DocDraft // never vectorized: not re-indexed
	if _, err := a.d.DB.NewInsert().Model(&docs).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	var st vectorStats
	a.admin("GET", fmt.Sprintf("/admin/api/v1/sites/%d/vector-stats", site), nil, &st)
	if st.Documents != n+1 || st.ByStatus["none"] != n+1 || st.Chunks != 0 || st.ByStatus["completed"] != 0 || st.LastError != nil {
		t.Fatalf("before: %+v", st)
	}

	var ref struct {
		JobID string `json:"job_id"`
	}
	a.admin("POST", "/admin/api/v1/documents:reindex", map[string]any{"site_id": site}, &ref)
	if !strings.HasPrefix(ref.JobID, fmt.Sprintf("reindex-site-%d-", site)) {
		t.Fatalf("job id %q", ref.JobID)
	}
	// The live view follows the job until nothing is queued or indexing.
	status, evs := a.streamAuth("GET", fmt.Sprintf("/admin/api/v1/sites/%d/vector-stats:watch", site))
	if status != 200 || len(evs) < 2 || evs[len(evs)-1].Data != "[DONE]" {
		t.Fatalf("watch: %d %+v", status, evs)
	}
	var last vectorStats
	if err := json.Unmarshal([]byte(evs[len(evs)-2].Data), &last); err != nil || last.Active != 0 {
		t.Fatalf("last event %s (%v)", evs[len(evs)-2].Data, err)
	}
	j := a.waitJob(ref.JobID, "completed")
	var res struct {
		Total, Completed, Failed int
		Done                     bool
	}
	if err := json.Unmarshal(j.Result, &res); err != nil || res.Total != n || res.Completed != n || res.Failed != 0 || !res.Done ||
		j.Title != "Re-index site 'Big'" || j.Kind != "reindex" {
		t.Fatalf("job %+v result %s", j, j.Result)
	}
	a.admin("GET", fmt.Sprintf("/admin/api/v1/sites/%d/vector-stats", site), nil, &st)
	if st.ByStatus["completed"] != n || st.ByStatus["none"] != 1 || st.Chunks == 0 || st.Active != 0 {
		t.Fatalf("after: %+v", st)
	}
	var chunks int64
	for _, d := range docs[:n] {
		chunks += int64(a.chunks(d.ID))
	}
	if chunks != st.Chunks {
		t.Fatalf("stats say %d chunks, the store holds %d", st.Chunks, chunks)
	}
	// A failure shows as the last error; outdated documents are counted.
	if err := a.d.DB.FailVectorize(ctx, docs[3].ID, "embedding endpoint said 401"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.d.DB.NewUpdate().Model((*models.Document)(nil)).Set("vector_status = ?", models.VecOutdated).
		Where("id IN (?)", bunIn([]int64{docs[4].ID, docs[5].ID})).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	a.admin("GET", fmt.Sprintf("/admin/api/v1/sites/%d/vector-stats", site), nil, &st)
	if st.Outdated != 2 || st.LastError == nil || st.LastError.DocumentID != docs[3].ID || st.LastError.Error != "embedding endpoint said 401" {
		t.Fatalf("failure and outdated: %+v", st)
	}

	// Scope: a site admin re-indexes and reads their own site only; a whole
	// tenant is for admins.
	mine := a.siteAdmin("reindexer@e2e.test", other)
	// Another site is answered as a missing one (404); a whole tenant is
	// beyond the role (403).
	for _, c := range []struct {
		method, path string
		body         any
		status       int
	}{
		{"POST", "/admin/api/v1/documents:reindex", map[string]any{"site_id": site}, 404},
		{"POST", "/admin/api/v1/documents:reindex", map[string]any{}, 403},
		{"GET", fmt.Sprintf("/admin/api/v1/sites/%d/vector-stats", site), nil, 404},
		{"GET", fmt.Sprintf("/admin/api/v1/sites/%d/vector-stats:watch", site), nil, 404},
	} {
		if r := a.do(c.method, c.path, c.body, mine); r.Status != c.status {
			t.Errorf("%s %s as another site's admin: %d, want %d", c.method, c.path, r.Status, c.status)
		}
	}
	if r := a.do("POST", "/admin/api/v1/documents:reindex", map[string]any{"site_id": -1}, a.token); r.Status != 422 {
		t.Errorf("site_id -1: %d", r.Status)
	}
	if r := a.do("POST", "/admin/api/v1/documents:reindex", map[string]any{"site_id": 99999999999}, a.token); r.Status != 404 {
		t.Errorf("unknown site: %d", r.Status)
	}
	a.admin("POST", "/admin/api/v1/documents:reindex", map[string]any{}, &ref)
	if !strings.HasPrefix(ref.JobID, "reindex-tenant-1-") {
		t.Fatalf("tenant job id %q", ref.JobID)
	}
	tj := a.waitJob(ref.JobID, "completed")
	// Every published document of the tenant again (the failed and the
	// outdated ones included); the draft stays out.
	if err := json.Unmarshal(tj.Result, &res); err != nil || res.Total != n || res.Completed != n || res.Failed != 0 {
		t.Fatalf("tenant job result %s", tj.Result)
	}

	// A new embedding model makes the vectors outdated; in automatic mode
	// the tenant's re-index starts with it.
	var cfg struct {
		Outdated  int     `json:"outdated_documents"`
		ReindexID *string `json:"reindex_job_id"`
	}
	a.admin("PUT", "/admin/api/v1/system-configs/ai-config", map[string]any{"embedding": map[string]any{"provider": "local", "dimension": 384}}, &cfg)
	if cfg.Outdated != n || cfg.ReindexID == nil || !strings.HasPrefix(*cfg.ReindexID, "reindex-tenant-1-") {
		t.Fatalf("ai-config change: %+v", cfg)
	}
	a.waitJob(*cfg.ReindexID, "completed")
	a.admin("GET", fmt.Sprintf("/admin/api/v1/sites/%d/vector-stats", site), nil, &st)
	if st.ByStatus["completed"] != n || st.Outdated != 0 {
		t.Fatalf("after the model change's re-index: %+v", st)
	}
}
