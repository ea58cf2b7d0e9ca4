package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/models"
	"github.com/lorekb/lore/workflows"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
)

// Job kinds, stored with each job so :retry can start the same work again
// (the LoreKind search attribute of its workflow).
const (
	JobVectorizeDocument = workflows.KindVectorizeDocument
	JobBatchVectorize    = workflows.KindBatchVectorize
	JobRemoveVectors     = workflows.KindRemoveVectors
	JobDeleteSite        = workflows.KindDeleteSite
	JobReindex           = workflows.KindReindex
	JobImport            = workflows.KindImport
)

// jobIDKey is the fiber local naming the job a request started (the request
// log line shows it).
const jobIDKey = "job_id"

// JobRef is returned by every endpoint that starts a workflow.
type JobRef struct {
	JobID string `json:"job_id"`
}

func (s *Server) jobRoutes() []Route {
	return []Route{
		{Surface: Admin, Method: http.MethodGet, Path: "/jobs", Tag: "jobs", Perm: SiteAdminUp, Query: JobListQuery{},
			Summary: "List jobs (Temporal visibility): admins all, site admins those of their sites", Response: Page[JobView]{}, Handler: s.listJobs},
		{Surface: Admin, Method: http.MethodGet, Path: "/jobs/{id}", Tag: "jobs", Perm: EditorUp,
			Summary: "Job status, progress and result (an editor: the jobs it started)", Response: JobView{}, Handler: s.getJob},
		{Surface: Admin, Method: http.MethodGet, Path: "/jobs/{id}:watch", Tag: "jobs", Perm: EditorUp, Raw: "text/event-stream",
			Summary: "Stream job progress as server-sent events until the job ends (an editor: the jobs it started)", Handler: s.watchJob},
		{Surface: Admin, Method: http.MethodPost, Path: "/jobs/{id}:retry", Tag: "jobs", Perm: SiteAdminUp,
			Summary: "Start a failed, cancelled, terminated or timed-out job again with the same input (409 otherwise)", Response: JobView{}, Handler: s.retryJob},
		{Surface: Admin, Method: http.MethodPost, Path: "/jobs/{id}:cancel", Tag: "jobs", Perm: SiteAdminUp,
			Summary: "Request cancellation of a running job (409 when it is not running)", Response: JobView{}, Handler: s.cancelJob},
		{Surface: Admin, Method: http.MethodGet, Path: "/tasks", Tag: "jobs", Perm: SiteAdminUp, Query: TaskListQuery{},
			Summary: "List jobs in the reference service's task shape (same data as GET /jobs)", Response: Page[Task]{}, Handler: s.listTasks},
		{Surface: Admin, Method: http.MethodGet, Path: "/tasks/{id}", Tag: "jobs", Perm: EditorUp,
			Summary: "A job in the reference service's task shape (same data as GET /jobs/{id})", Response: Task{}, Handler: s.getTask},
	}
}

// temporalClient returns the Temporal client or a 503 when none is configured.
func (s *Server) temporalClient() (client.Client, error) {
	if s.d.Temporal == nil {
		return nil, Unavailable("the workflow engine is not configured (TEMPORAL_ADDRESS)")
	}
	return s.d.Temporal, nil
}

// jobStart is a workflow a handler starts: its id, what it is about, the
// workflow function and its input. signal, when non-empty, makes a running
// workflow of the same id receive it instead of a second run starting.
type jobStart struct {
	id     string
	meta   workflows.JobMeta
	signal string
	wf     any
	input  any
	// eager: the first workflow task comes back in the start response and
	// runs in this process's worker, when it has one on the queue.
	eager bool
}

// startJob starts (or signals-with-start) a workflow with its search
// attributes and memo and records its job row. The requester and request id
// come from the request.
func (s *Server) startJob(c *fiber.Ctx, js jobStart) (string, error) {
	tc, err := s.temporalClient()
	if err != nil {
		return "", err
	}
	p := principal(c)
	if p != nil {
		js.meta.RequestedBy = p.User.Email
	}
	js.meta.RequestID, _ = c.Locals(requestIDKey).(string)
	ctx := c.UserContext()
	run, err := s.launch(ctx, tc, js)
	if err != nil {
		return "", Unavailable("could not start the job: %v", err)
	}
	in, _ := json.Marshal(js.input)
	job := &models.Job{ID: js.id, Kind: js.meta.Kind, WorkflowID: js.id, RunID: run.GetRunID(), Subject: string(in),
		TenantID: js.meta.TenantID, SiteID: js.meta.SiteID, DocumentID: js.meta.DocumentID, Title: js.meta.Title}
	if p != nil {
		job.CreatedBy = p.User.ID
	}
	if err := s.d.DB.SaveJob(ctx, job); err != nil {
		return "", err
	}
	c.Locals(jobIDKey, js.id)
	return js.id, nil
}

func (s *Server) launch(ctx context.Context, tc client.Client, js jobStart) (client.WorkflowRun, error) {
	opts := client.StartWorkflowOptions{
		ID:                    js.id,
		TaskQueue:             s.d.Cfg.TemporalQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		EnableEagerStart:      js.eager,
	}
	return workflows.StartWithMeta(s.starter, js.meta, opts, func(opts client.StartWorkflowOptions) (client.WorkflowRun, error) {
		if js.signal != "" {
			return tc.SignalWithStartWorkflow(ctx, js.id, js.signal, nil, opts, js.wf, js.input)
		}
		opts.WorkflowIDConflictPolicy = enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING
		return tc.ExecuteWorkflow(ctx, opts, js.wf, js.input)
	})
}

// shortID is a few random characters that tell jobs of one subject apart.
func shortID() string { return workflows.ShortID(8) }

// loadJob reads the {id} job and checks the caller may see it: admins every
// job, tenant admins their tenant's, site admins jobs of their sites, editors
// the jobs they started on their sites (an import's progress is theirs to
// follow; what others run on the site is site administration), everyone the
// site-less jobs they started; any other job is 404.
func (s *Server) loadJob(c *fiber.Ctx) (*models.Job, error) {
	id := c.Params("id")
	if id == "" || len(id) > 200 {
		return nil, Invalid("id: invalid job id")
	}
	j, err := s.d.DB.GetJob(c.UserContext(), id)
	if errors.Is(err, db.ErrNotFound) {
		return nil, NotFound("job")
	}
	if err != nil {
		return nil, err
	}
	// A job outside the caller's scope is answered as a missing one (404),
	// whatever its state, so job ids of other sites cannot be probed.
	p := principal(c)
	switch {
	case p.IsPlatform():
	case j.SiteID != 0:
		if !p.SeesSite(j.SiteID) || !p.CanSite(j.SiteID, SiteAdminUp) && j.CreatedBy != p.User.ID {
			return nil, NotFound("job")
		}
	case p.IsAdmin():
		if j.TenantID != p.User.TenantID {
			return nil, NotFound("job")
		}
	case j.CreatedBy != p.User.ID:
		return nil, NotFound("job")
	}
	return j, nil
}

// loadJobView is loadJob with the job's view.
func (s *Server) loadJobView(c *fiber.Ctx) (*models.Job, *JobView, error) {
	j, err := s.loadJob(c)
	if err != nil {
		return nil, nil, err
	}
	v, err := s.jobView(c.UserContext(), j)
	return j, v, err
}

func (s *Server) getJob(c *fiber.Ctx) error {
	_, v, err := s.loadJobView(c)
	if err != nil {
		return err
	}
	return ok(c, v)
}

// retryable lists the states :retry accepts.
var retryable = map[string]bool{"failed": true, "canceled": true, "terminated": true, "timed_out": true}

func (s *Server) retryJob(c *fiber.Ctx) error {
	j, v, err := s.loadJobView(c)
	if err != nil {
		return err
	}
	// An import that completed with failed files may be retried too: it
	// tries those files again (the imported ones keep their documents).
	partial := j.Kind == JobImport && v.Status == "completed" && v.Progress != nil && v.Progress.Failed > 0
	if !retryable[v.Status] && !partial {
		return Conflict("job %s is %s; only a failed, cancelled, terminated or timed-out job can be retried", j.ID, v.Status)
	}
	js := jobStart{id: j.WorkflowID, meta: workflows.JobMeta{Kind: j.Kind, TenantID: j.TenantID, SiteID: j.SiteID,
		DocumentID: j.DocumentID, Title: j.Title}}
	switch j.Kind {
	case JobVectorizeDocument:
		js.input, js.wf, js.signal = decodeInput[workflows.VectorizeInput](j), workflows.VectorizeDocument, workflows.SignalRevectorize
	case JobBatchVectorize:
		js.input, js.wf = decodeInput[workflows.BatchInput](j), workflows.BatchVectorize
	case JobRemoveVectors:
		js.input, js.wf = decodeInput[workflows.RemoveVectorsInput](j), workflows.RemoveDocumentVectors
	case JobDeleteSite:
		js.input, js.wf = decodeInput[workflows.DeleteSiteInput](j), workflows.DeleteSite
	case JobImport:
		// Files already imported keep their documents (import items); the
		// others are tried again.
		js.input, js.wf = decodeInput[workflows.ImportInput](j), workflows.Import
	default:
		return Conflict("job %s is of kind %s, which cannot be retried here", j.ID, j.Kind)
	}
	if _, err := s.startJob(c, js); err != nil {
		return err
	}
	return s.getJob(c)
}

func decodeInput[T any](j *models.Job) T {
	var in T
	_ = json.Unmarshal([]byte(j.Subject), &in)
	return in
}

func (s *Server) cancelJob(c *fiber.Ctx) error {
	j, v, err := s.loadJobView(c)
	if err != nil {
		return err
	}
	if v.Status != "running" {
		return Conflict("job %s is %s; only a running job can be cancelled", j.ID, v.Status)
	}
	if err := s.d.Temporal.CancelWorkflow(c.UserContext(), j.WorkflowID, ""); err != nil {
		var nf *serviceerror.NotFound
		if !errors.As(err, &nf) {
			return Unavailable("workflow engine: %v", err)
		}
	}
	return s.getJob(c)
}
