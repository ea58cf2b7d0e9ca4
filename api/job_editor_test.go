package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/lorekb/lore/models"
	"github.com/lorekb/lore/workflows"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"
)

// closedJobs is a workflow engine that knows every workflow as a completed
// one, so a job the API lets through answers its view.
type closedJobs struct{ fakeTemporal }

func (*closedJobs) DescribeWorkflowExecution(_ context.Context, id, _ string) (*workflowservice.DescribeWorkflowExecutionResponse, error) {
	title, _ := converter.GetDefaultDataConverter().ToPayload("job " + id)
	return &workflowservice.DescribeWorkflowExecutionResponse{WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{
		Execution: &commonpb.WorkflowExecution{WorkflowId: id, RunId: "run-" + id},
		Status:    enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED,
		Memo:      &commonpb.Memo{Fields: map[string]*commonpb.Payload{workflows.MemoTitle: title}},
	}}, nil
}

func (*closedJobs) QueryWorkflow(context.Context, string, string, string, ...any) (converter.EncodedValue, error) {
	return nil, errors.New("no query handler")
}

// TestEditorFollowsOwnJobs: an editor reads and watches the jobs it started
// on its site (the console's import progress), and no other job: not a site
// admin's on the same site, not one of another site, each answered as a
// missing job. Cancel, retry and the job lists stay the site admin's.
func TestEditorFollowsOwnJobs(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	h.d.Temporal = &closedJobs{}
	mine, other := kbSite(h, "Editor's"), kbSite(h, "Someone else's")
	editor, editorID := h.tenantUser(models.RoleEditor, mine.TenantID, mine.ID)
	siteAdmin, siteAdminID := h.tenantUser(models.RoleSiteAdmin, mine.TenantID, mine.ID)
	job := func(id string, by int64, site *models.Site) string {
		if err := h.d.DB.SaveJob(context.Background(), &models.Job{ID: id, Kind: JobImport, WorkflowID: id,
			Subject: "{}", CreatedBy: by, SiteID: site.ID, TenantID: site.TenantID}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	own := job("import-editor", editorID, mine)
	colleague := job("import-site-admin", siteAdminID, mine)
	foreign := job("import-other-site", editorID, other) // started before the editor lost the site

	for _, path := range []string{"/jobs/" + own, "/tasks/" + own} {
		r := h.must(200, "GET", adminPath+path, nil, editor)
		if !strings.Contains(string(r.Data), `"`+own+`"`) {
			t.Errorf("GET %s as its editor: %s", path, r.Raw)
		}
	}
	w := h.do("GET", adminPath+"/jobs/"+own+":watch", nil, editor)
	if w.Status != 200 || !strings.HasPrefix(w.Header.Get("Content-Type"), "text/event-stream") ||
		!strings.Contains(string(w.Raw), "event: progress") || !strings.Contains(string(w.Raw), `"status":"completed"`) ||
		!strings.Contains(string(w.Raw), "event: done") {
		t.Errorf("watch as its editor: %d %q", w.Status, w.Raw)
	}
	h.must(200, "GET", adminPath+"/jobs/"+colleague, nil, siteAdmin)
	h.must(200, "GET", adminPath+"/jobs/"+own, nil, siteAdmin)

	missing := h.do("GET", adminPath+"/jobs/no-such-job", nil, editor)
	for _, id := range []string{colleague, foreign} {
		for _, path := range []string{"/jobs/" + id, "/jobs/" + id + ":watch", "/tasks/" + id} {
			r := h.do("GET", adminPath+path, nil, editor)
			if r.Status != http.StatusNotFound || !sameAnswer(r, missing) {
				t.Errorf("GET %s as an editor: %d %s; a missing job: %d %s", path, r.Status, r.Raw, missing.Status, missing.Raw)
			}
		}
	}
	for _, c := range []struct{ method, path string }{
		{"POST", "/jobs/" + own + ":cancel"}, {"POST", "/jobs/" + own + ":retry"}, {"GET", "/jobs"}, {"GET", "/tasks"},
	} {
		if r := h.do(c.method, adminPath+c.path, nil, editor); r.Status != http.StatusForbidden {
			t.Errorf("%s %s as an editor: %d %s", c.method, c.path, r.Status, r.Raw)
		}
	}
}
