package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lorekb/lore/api"
	"github.com/lorekb/lore/models"
	"github.com/lorekb/lore/workflows"
	"go.temporal.io/api/workflowservice/v1"
)

// jobView is a job as the API shows it.
type jobView = api.JobView

type jobPage struct {
	List       []jobView `json:"list"`
	Pagination struct {
		Total int `json:"total"`
	} `json:"pagination"`
}

func (a *app) job(id string) jobView {
	var j jobView
	a.admin("GET", "/admin/api/v1/jobs/"+id, nil, &j)
	return j
}

func (a *app) waitJob(id, status string) jobView {
	a.t.Helper()
	var j jobView
	eventually(a.t, 90*time.Second, "job "+id+" "+status, func() bool {
		j = a.job(id)
		return j.Status == status
	})
	return j
}

// listed polls GET path until a job with id is in the list (visibility is
// eventually consistent) and returns the page.
func (a *app) listed(path, token, id string) jobPage {
	a.t.Helper()
	var pg jobPage
	eventually(a.t, 30*time.Second, id+" listed by "+path, func() bool {
		r := a.do("GET", path, nil, token)
		r.into(a.t, &pg)
		for _, j := range pg.List {
			if j.ID == id {
				return true
			}
		}
		return false
	})
	return pg
}

func TestJobsAreNamedFindableAndExplained(t *testing.T) {
	a := newApp(t, "sqlite", nil)
	ctx := context.Background()
	site := a.site("Handbook")
	other := a.site("Elsewhere")

	// A create that starts a vectorization says which job.
	var created struct {
		ID    int64   `json:"id"`
		JobID *string `json:"job_id"`
	}
	a.admin("POST", "/admin/api/v1/documents", map[string]any{"site_id": site, "title": "Install guide",
		"content": guide, "status": "published"}, &created)
	if created.JobID == nil || *created.JobID != fmt.Sprintf("vectorize-doc-%d", created.ID) {
		t.Fatalf("create answered job_id %v", created.JobID)
	}
	var draft struct {
		JobID *string `json:"job_id"`
	}
	a.admin("POST", "/admin/api/v1/documents", map[string]any{"site_id": site, "title": "Draft", "content": "x"}, &draft)
	if draft.JobID != nil {
		t.Fatalf("a draft started job %q", *draft.JobID)
	}
	j := a.waitJob(*created.JobID, "completed")
	if j.Title != "Vectorize 'Install guide' (site Handbook)" || j.Kind != "vectorize_document" ||
		j.SiteID == nil || *j.SiteID != site || j.DocumentID == nil || *j.DocumentID != created.ID ||
		j.RequestedBy != "admin@e2e.test" || j.RequestID == "" {
		t.Fatalf("job view %+v", j)
	}
	var res struct {
		Chunks int `json:"chunks"`
	}
	if err := json.Unmarshal(j.Result, &res); err != nil || res.Chunks == 0 || res.Chunks != a.chunks(created.ID) {
		t.Fatalf("result %s (%v), %d chunks stored", j.Result, err, a.chunks(created.ID))
	}
	if j.Progress == nil || !j.Progress.Done || j.Progress.Completed != 1 || j.Progress.Step != "done" {
		t.Fatalf("progress %+v", j.Progress)
	}

	// Verbs on a finished job answer 409 with the reason; unknown ids 404.
	for _, verb := range []string{":cancel", ":retry"} {
		r := a.do("POST", "/admin/api/v1/jobs/"+*created.JobID+verb, nil, a.token)
		if r.Status != 409 || !strings.Contains(r.Msg, "completed") {
			t.Errorf("%s on a completed job: %d %s", verb, r.Status, r.Raw)
		}
	}
	for _, p := range []string{"/jobs/no-such-job", "/tasks/no-such-job", "/jobs/no-such-job:watch"} {
		if r := a.do("GET", "/admin/api/v1"+p, nil, a.token); r.Status != 404 {
			t.Errorf("GET %s: %d", p, r.Status)
		}
	}

	// The workflow carries its search attributes: Temporal visibility finds
	// it by site, as the Web UI's filter does.
	eventually(t, 30*time.Second, "visibility by LoreSiteId", func() bool {
		resp, err := a.d.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: "default", Query: fmt.Sprintf("LoreSiteId = %d AND LoreKind = 'vectorize_document'", site)})
		if err != nil {
			t.Fatal(err)
		}
		return len(resp.Executions) == 1 && resp.Executions[0].Execution.WorkflowId == *created.JobID
	})

	// GET /jobs lists it with its filters; bad filter values are 422.
	pg := a.listed(fmt.Sprintf("/admin/api/v1/jobs?site_id=%d", site), a.token, *created.JobID)
	if pg.Pagination.Total != 1 || pg.List[0].Title != j.Title {
		t.Fatalf("site list %+v", pg)
	}
	since := url.QueryEscape(time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	for q, want := range map[string]int{"kind=vectorize_document&status=completed": 1, "kind=delete_site": 0,
		"status=failed": 0, "since=" + since: 0} {
		var got jobPage
		a.admin("GET", fmt.Sprintf("/admin/api/v1/jobs?site_id=%d&%s", site, q), nil, &got)
		if got.Pagination.Total != want || len(got.List) != want {
			t.Errorf("jobs?%s: %d listed (total %d), want %d", q, len(got.List), got.Pagination.Total, want)
		}
	}
	for _, q := range []string{"kind=zzz", "status=zzz", "since=yesterday", "site_id=abc", "size=1000", "page=0"} {
		if r := a.do("GET", "/admin/api/v1/jobs?"+q, nil, a.token); r.Status != 422 {
			t.Errorf("jobs?%s: %d %s", q, r.Status, r.Raw)
		}
	}
	if r := a.do("GET", "/admin/api/v1/tasks?task_type=zzz", nil, a.token); r.Status != 422 {
		t.Errorf("tasks?task_type=zzz: %d", r.Status)
	}

	// The reference's task shape renders the same job.
	var tasks struct {
		List []struct {
			ID       string  `json:"id"`
			TaskType string  `json:"task_type"`
			Status   string  `json:"status"`
			Progress float64 `json:"progress"`
			JobID    string  `json:"job_id"`
			SiteID   int64   `json:"site_id"`
			Payload  struct {
				DocumentID int64 `json:"DocumentID"`
			} `json:"payload"`
		} `json:"list"`
	}
	a.admin("GET", fmt.Sprintf("/admin/api/v1/tasks?site_id=%d&task_type=vectorize&status=completed", site), nil, &tasks)
	if len(tasks.List) != 1 || tasks.List[0].ID != *created.JobID || tasks.List[0].Progress != 100 ||
		tasks.List[0].SiteID != site || tasks.List[0].Payload.DocumentID != created.ID {
		t.Fatalf("tasks %+v", tasks.List)
	}
	var task struct {
		ID       string `json:"id"`
		TaskType string `json:"task_type"`
		Status   string `json:"status"`
	}
	a.admin("GET", "/admin/api/v1/tasks/"+*created.JobID, nil, &task)
	if task.ID != *created.JobID || task.TaskType != "vectorize" || task.Status != "completed" {
		t.Fatalf("task %+v", task)
	}

	// A site admin sees the jobs of their sites only: another site's are
	// 404, as missing ones.
	mine := a.siteAdmin("mine@e2e.test", other)
	if r := a.do("GET", fmt.Sprintf("/admin/api/v1/jobs?site_id=%d", site), nil, mine); r.Status != 404 {
		t.Errorf("site_admin listing another site's jobs: %d", r.Status)
	}
	if r := a.do("GET", "/admin/api/v1/jobs/"+*created.JobID, nil, mine); r.Status != 404 {
		t.Errorf("site_admin reading another site's job: %d", r.Status)
	}
	otherDoc := a.newDoc(other, "Theirs", guide, "published")
	otherJob := fmt.Sprintf("vectorize-doc-%d", otherDoc)
	a.waitJob(otherJob, "completed")
	pg = a.listed("/admin/api/v1/jobs", mine, otherJob)
	for _, x := range pg.List {
		if x.SiteID == nil || *x.SiteID != other {
			t.Errorf("site_admin of site %d was shown job %s of site %v", other, x.ID, x.SiteID)
		}
	}
	// Removed from the site, the same site admin (same token) can no longer
	// read, watch, retry or cancel the job it could see a moment ago.
	if r := a.do("GET", "/admin/api/v1/jobs/"+otherJob, nil, mine); r.Status != 200 {
		t.Fatalf("site_admin reading their site's job: %d %s", r.Status, r.Raw)
	}
	var sa models.User
	if err := a.d.DB.NewSelect().Model(&sa).Where("email = ?", "mine@e2e.test").Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.admin("PUT", fmt.Sprintf("/admin/api/v1/users/%d", sa.ID), map[string]any{"managed_site_ids": []int64{}}, nil)
	for _, call := range [][2]string{{"GET", ""}, {"GET", ":watch"}, {"POST", ":retry"}, {"POST", ":cancel"}} {
		if r := a.do(call[0], "/admin/api/v1/jobs/"+otherJob+call[1], nil, mine); r.Status != 404 {
			t.Errorf("site_admin removed from the site: %s job%s: %d", call[0], call[1], r.Status)
		}
	}

	// Unpublishing answers with the job that removes the vectors.
	var upd struct {
		JobID *string `json:"job_id"`
	}
	a.admin("PUT", fmt.Sprintf("/admin/api/v1/documents/%d", otherDoc), map[string]any{"status": "draft"}, &upd)
	if upd.JobID == nil || *upd.JobID != fmt.Sprintf("remove-vectors-doc-%d", otherDoc) {
		t.Fatalf("unpublish answered job_id %v", upd.JobID)
	}
	if rj := a.waitJob(*upd.JobID, "completed"); rj.Title != "Remove vectors of 'Theirs' (site Elsewhere)" {
		t.Fatalf("remove job %+v", rj)
	}

	// A batch is named after its site; a batch over two sites is refused.
	var br struct {
		JobID string `json:"job_id"`
	}
	a.admin("POST", "/admin/api/v1/documents:batchVectorize", map[string]any{"document_ids": []int64{created.ID}}, &br)
	if !strings.HasPrefix(br.JobID, fmt.Sprintf("batch-vectorize-site-%d-", site)) {
		t.Fatalf("batch id %q", br.JobID)
	}
	if bj := a.waitJob(br.JobID, "completed"); bj.Title != "Vectorize 1 documents (site Handbook)" || bj.Progress == nil || bj.Progress.Completed != 1 {
		t.Fatalf("batch job %+v", bj)
	}
	if r := a.do("POST", "/admin/api/v1/documents:batchVectorize", map[string]any{"document_ids": []int64{created.ID, otherDoc}}, a.token); r.Status != 422 {
		t.Errorf("batch over two sites: %d %s", r.Status, r.Raw)
	}

	// A site delete reports its steps and what it removed.
	var del struct {
		JobID string `json:"job_id"`
	}
	a.admin("DELETE", fmt.Sprintf("/admin/api/v1/sites/%d", site), nil, &del)
	dj := a.waitJob(del.JobID, "completed")
	var removed struct {
		Documents int `json:"documents"`
	}
	if err := json.Unmarshal(dj.Result, &removed); err != nil || removed.Documents != 2 || dj.Title != "Delete site 'Handbook'" ||
		dj.Progress == nil || dj.Progress.Step != "done" || dj.Progress.Completed != 6 {
		t.Fatalf("delete job %+v result %s", dj, dj.Result)
	}
}

// syncBuffer is a log sink the test reads while the app writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// lines returns the JSON log lines with msg.
func (s *syncBuffer) lines(msg string) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(s.b.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

func TestRequestIDFollowsTheJobIntoWorkflowAndActivityLogs(t *testing.T) {
	// An embedding endpoint that refuses the key: the activity fails (a
	// permanent error) and so does the workflow, each logging why.
	emb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"message":"bad key","type":"invalid_request_error"}}`))
	}))
	defer emb.Close()
	logs := &syncBuffer{}
	a := newAppLogging(t, "sqlite", map[string]string{"EMBED_PROVIDER": "openai", "EMBED_BASE_URL": emb.URL + "/v1",
		"EMBED_API_KEY": "wrong", "EMBED_MODEL": "m", "EMBED_DIMENSION": "8"}, logs)
	site := a.site("Logs")
	body, _ := json.Marshal(map[string]any{"site_id": site, "title": "Traced", "content": guide, "status": "published"})
	req := httptest.NewRequest("POST", "/admin/api/v1/documents", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+a.token)
	req.Header.Set("X-Request-ID", "req-trace-42")
	res, err := a.srv.App().Test(req, -1)
	if err != nil || res.StatusCode != 201 {
		t.Fatalf("create: %v %v", res, err)
	}
	var created struct {
		Data struct {
			ID    int64  `json:"id"`
			JobID string `json:"job_id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(res.Body).Decode(&created); err != nil {
		t.Fatal(err)
	}
	job := created.Data.JobID
	j := a.waitJob(job, "failed")
	if j.RequestID != "req-trace-42" {
		t.Fatalf("job view request_id %q", j.RequestID)
	}
	// One info line for the request, with its route template, user, tenant
	// and the job it started.
	var reqLine map[string]any
	for _, l := range logs.lines("request") {
		if l["request_id"] == "req-trace-42" {
			reqLine = l
		}
	}
	if reqLine == nil || reqLine["level"] != "INFO" || reqLine["route"] != "/admin/api/v1/documents" || reqLine["method"] != "POST" ||
		reqLine["status"] != float64(201) || reqLine["job_id"] != job || reqLine["user_id"] == nil || reqLine["tenant"] == nil {
		t.Fatalf("request line %v", reqLine)
	}
	// The activity's failed attempt and the workflow's failure carry the
	// request id and the job id.
	eventually(t, 30*time.Second, "workflow failure logged", func() bool {
		for _, l := range logs.lines("workflow failed") {
			if l["request_id"] == "req-trace-42" && l["job_id"] == job && l["err"] != nil {
				return true
			}
		}
		return false
	})
	found := false
	for _, l := range logs.lines("activity attempt failed") {
		found = found || (l["request_id"] == "req-trace-42" && l["job_id"] == job && strings.Contains(fmt.Sprint(l["err"]), "401"))
	}
	if !found {
		t.Fatalf("no activity failure line with the request id: %v", logs.lines("activity attempt failed"))
	}
}

// TestCompletedJobProgressIsTheResult holds what a completed job's view
// relies on: the import, batch vectorize and re-index workflows return as
// their result exactly the progress their query serves, so the view reads it
// from the result (no query, which would replay the history on a worker).
func TestCompletedJobProgressIsTheResult(t *testing.T) {
	a := newApp(t, "sqlite", nil)
	ctx := context.Background()
	site := a.site("Progress")
	var doc struct {
		ID int64 `json:"id"`
	}
	a.admin("POST", "/admin/api/v1/documents", map[string]any{"site_id": site, "title": "Install guide",
		"content": guide, "status": "published"}, &doc)
	var br, ref struct {
		JobID string `json:"job_id"`
	}
	a.admin("POST", "/admin/api/v1/documents:batchVectorize", map[string]any{"document_ids": []int64{doc.ID}}, &br)
	a.admin("POST", "/admin/api/v1/documents:reindex", map[string]any{"site_id": site}, &ref)
	r := a.multipart("/admin/api/v1/documents:import", map[string]string{"site_id": fmt.Sprint(site)}, "files",
		[]upload{{"notes.md", []byte("# Notes\n\nSome notes.")}, {"broken.docx", []byte("not a docx")}}, a.token)
	var imp struct {
		ID string `json:"id"`
	}
	r.into(t, &imp)
	for kind, id := range map[string]string{"batch_vectorize": br.JobID, "reindex": ref.JobID, "import": imp.ID} {
		a.waitJob(id, "completed")
		var view struct {
			Kind     string             `json:"kind"`
			Progress workflows.Progress `json:"progress"`
			Result   json.RawMessage    `json:"result"`
		}
		a.admin("GET", "/admin/api/v1/jobs/"+id, nil, &view)
		res, err := a.d.Temporal.QueryWorkflow(ctx, id, "", workflows.QueryProgress)
		if err != nil {
			t.Fatalf("%s: query: %v", kind, err)
		}
		var queried workflows.Progress
		if err := res.Get(&queried); err != nil {
			t.Fatal(err)
		}
		var fromResult workflows.Progress
		if err := json.Unmarshal(view.Result, &fromResult); err != nil {
			t.Fatalf("%s: result %s: %v", kind, view.Result, err)
		}
		if view.Kind != kind || !workflows.ResultIsProgress(kind) || !queried.Done ||
			!reflect.DeepEqual(view.Progress, queried) || !reflect.DeepEqual(fromResult, queried) {
			t.Errorf("%s: view kind %q progress %+v, result %s; the query answers %+v", kind, view.Kind, view.Progress, view.Result, queried)
		}
	}
}
