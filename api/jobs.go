package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/models"
	"github.com/lorekb/lore/workflows"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
)

// Job kinds, stored with each job so :retry can start the same work again.
const (
	JobVectorizeDocument = "vectorize_document"
	JobBatchVectorize    = "batch_vectorize"
	JobRemoveVectors     = "remove_vectors"
	JobDeleteSite        = "delete_site"
)

// JobView is the status of a job (a Temporal workflow) as the API shows it.
type JobView struct {
	ID         string                   `json:"id"`
	Kind       string                   `json:"kind"`
	WorkflowID string                   `json:"workflow_id"`
	RunID      string                   `json:"run_id"`
	Status     string                   `json:"status"` // running | completed | failed | canceled | terminated | timed_out | continued_as_new
	StartedAt  *time.Time               `json:"started_at"`
	ClosedAt   *time.Time               `json:"closed_at"`
	Progress   *workflows.BatchProgress `json:"progress"`
	Error      string                   `json:"error,omitempty"`
	Temporal   map[string]string        `json:"temporal"`
	Input      json.RawMessage          `json:"input"`
}

// JobRef is returned by every endpoint that starts a workflow.
type JobRef struct {
	JobID string `json:"job_id"`
}

func (s *Server) jobRoutes() []Route {
	return []Route{
		{Surface: Admin, Method: http.MethodGet, Path: "/jobs/{id}", Tag: "jobs", Perm: SiteAdminUp,
			Summary: "Job status and progress", Response: JobView{}, Handler: s.getJob},
		{Surface: Admin, Method: http.MethodGet, Path: "/jobs/{id}:watch", Tag: "jobs", Perm: SiteAdminUp, Raw: "text/event-stream",
			Summary: "Stream job progress as server-sent events until the job ends", Handler: s.watchJob},
		{Surface: Admin, Method: http.MethodPost, Path: "/jobs/{id}:retry", Tag: "jobs", Perm: SiteAdminUp,
			Summary: "Start a finished (failed or cancelled) job again with the same input", Response: JobView{}, Handler: s.retryJob},
		{Surface: Admin, Method: http.MethodPost, Path: "/jobs/{id}:cancel", Tag: "jobs", Perm: SiteAdminUp,
			Summary: "Request cancellation of a running job", Response: JobView{}, Handler: s.cancelJob},
	}
}

// temporalClient returns the Temporal client or a 503 when none is configured.
func (s *Server) temporalClient() (client.Client, error) {
	if s.d.Temporal == nil {
		return nil, Unavailable("the workflow engine is not configured (TEMPORAL_ADDRESS)")
	}
	return s.d.Temporal, nil
}

// startJob starts (or signals-with-start) a workflow and records its job row.
// signal, when non-empty, makes a running workflow of the same id receive it
// instead of a second run starting.
func (s *Server) startJob(c *fiber.Ctx, kind, wfID, signal string, wf any, input any) (string, error) {
	tc, err := s.temporalClient()
	if err != nil {
		return "", err
	}
	opts := client.StartWorkflowOptions{
		ID:                    wfID,
		TaskQueue:             s.d.Cfg.TemporalQueue,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
	}
	ctx := c.UserContext()
	var run client.WorkflowRun
	if signal != "" {
		run, err = tc.SignalWithStartWorkflow(ctx, wfID, signal, nil, opts, wf, input)
	} else {
		opts.WorkflowIDConflictPolicy = enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING
		run, err = tc.ExecuteWorkflow(ctx, opts, wf, input)
	}
	if err != nil {
		return "", Unavailable("could not start the job: %v", err)
	}
	in, _ := json.Marshal(input)
	var by int64
	if p := principal(c); p != nil {
		by = p.User.ID
	}
	job := &models.Job{ID: wfID, Kind: kind, WorkflowID: wfID, RunID: run.GetRunID(), Subject: string(in), CreatedBy: by}
	if err := s.d.DB.SaveJob(ctx, job); err != nil {
		return "", err
	}
	return wfID, nil
}

// newBatchID is the job id of a new batch.
func newBatchID() string { return workflows.BatchVectorizeID(uuid.NewString()) }

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
	if p := principal(c); !p.IsAdmin() && j.CreatedBy != p.User.ID {
		return nil, ErrForbidden
	}
	return j, nil
}

// jobView describes the workflow behind a job and, for batches, queries its
// progress.
func (s *Server) jobView(ctx context.Context, j *models.Job) (*JobView, error) {
	tc, err := s.temporalClient()
	if err != nil {
		return nil, err
	}
	desc, err := tc.DescribeWorkflowExecution(ctx, j.WorkflowID, "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil, NotFound("job workflow")
	}
	if err != nil {
		return nil, Unavailable("workflow engine: %v", err)
	}
	info := desc.GetWorkflowExecutionInfo()
	v := &JobView{ID: j.ID, Kind: j.Kind, WorkflowID: j.WorkflowID, RunID: info.GetExecution().GetRunId(),
		Status: jobStatus(info.GetStatus()), Input: json.RawMessage(j.Subject),
		Temporal: map[string]string{"namespace": s.d.Cfg.TemporalNS,
			"ui": fmt.Sprintf("%s/namespaces/%s/workflows/%s", strings.TrimRight(s.d.Cfg.TemporalUI, "/"), s.d.Cfg.TemporalNS, j.WorkflowID)}}
	if t := info.GetStartTime(); t != nil {
		st := t.AsTime()
		v.StartedAt = &st
	}
	if t := info.GetCloseTime(); t != nil && info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		ct := t.AsTime()
		v.ClosedAt = &ct
	}
	if j.Kind == JobBatchVectorize {
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if res, err := tc.QueryWorkflow(qctx, j.WorkflowID, "", workflows.QueryProgress); err == nil {
			var p workflows.BatchProgress
			if res.Get(&p) == nil {
				v.Progress = &p
			}
		}
	}
	if v.Status == "failed" {
		run := tc.GetWorkflow(ctx, j.WorkflowID, v.RunID)
		if err := run.Get(ctx, nil); err != nil {
			v.Error = workflows.RootMessage(err)
		}
	}
	return v, nil
}

func jobStatus(st enumspb.WorkflowExecutionStatus) string {
	s := strings.TrimPrefix(st.String(), "WorkflowExecutionStatus")
	s = strings.ToLower(strings.TrimPrefix(s, "WORKFLOW_EXECUTION_STATUS_"))
	switch s {
	case "continuedasnew":
		return "continued_as_new"
	case "timedout":
		return "timed_out"
	}
	return s
}

func (s *Server) getJob(c *fiber.Ctx) error {
	j, err := s.loadJob(c)
	if err != nil {
		return err
	}
	v, err := s.jobView(c.UserContext(), j)
	if err != nil {
		return err
	}
	return ok(c, v)
}

// watchJob streams the job view as SSE whenever it changes, every 500 ms at
// most, and ends after the job closes.
func (s *Server) watchJob(c *fiber.Ctx) error {
	j, err := s.loadJob(c)
	if err != nil {
		return err
	}
	first, err := s.jobView(c.UserContext(), j)
	if err != nil {
		return err
	}
	setSSEHeaders(c)
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Hour)
		defer cancel()
		var last []byte
		v := first
		for seq := 1; ; seq++ {
			b, _ := json.Marshal(v)
			if string(b) != string(last) {
				fmt.Fprintf(w, "id: %d\nevent: progress\ndata: %s\n\n", seq, b)
				if w.Flush() != nil {
					return // client went away
				}
				last = b
			}
			if v.Status != "running" {
				fmt.Fprint(w, "event: done\ndata: [DONE]\n\n")
				_ = w.Flush()
				return
			}
			time.Sleep(500 * time.Millisecond)
			nv, err := s.jobView(ctx, j)
			if err != nil {
				fmt.Fprintf(w, "event: error\ndata: %q\n\n", err.Error())
				_ = w.Flush()
				return
			}
			v = nv
		}
	})
	return nil
}

// setSSEHeaders prepares a server-sent event response.
func setSSEHeaders(c *fiber.Ctx) {
	c.Set("Content-Type", "text/event-stream")
	c.Set("Cache-Control", "no-cache")
	c.Set("Connection", "keep-alive")
	c.Set("X-Accel-Buffering", "no")
}

func (s *Server) retryJob(c *fiber.Ctx) error {
	j, err := s.loadJob(c)
	if err != nil {
		return err
	}
	v, err := s.jobView(c.UserContext(), j)
	if err != nil {
		return err
	}
	if v.Status == "running" {
		return Conflict("job %s is still running", j.ID)
	}
	if v.Status == "completed" && j.Kind != JobBatchVectorize && j.Kind != JobVectorizeDocument {
		return BadRequest("job %s completed; nothing to retry", j.ID)
	}
	var startErr error
	switch j.Kind {
	case JobVectorizeDocument:
		var in workflows.VectorizeInput
		_ = json.Unmarshal([]byte(j.Subject), &in)
		_, startErr = s.startJob(c, j.Kind, j.WorkflowID, workflows.SignalRevectorize, workflows.VectorizeDocument, in)
	case JobBatchVectorize:
		var in workflows.BatchInput
		_ = json.Unmarshal([]byte(j.Subject), &in)
		_, startErr = s.startJob(c, j.Kind, j.WorkflowID, "", workflows.BatchVectorize, in)
	case JobRemoveVectors:
		var in workflows.RemoveVectorsInput
		_ = json.Unmarshal([]byte(j.Subject), &in)
		_, startErr = s.startJob(c, j.Kind, j.WorkflowID, "", workflows.RemoveDocumentVectors, in)
	case JobDeleteSite:
		var in workflows.DeleteSiteInput
		_ = json.Unmarshal([]byte(j.Subject), &in)
		_, startErr = s.startJob(c, j.Kind, j.WorkflowID, "", workflows.DeleteSite, in)
	default:
		return BadRequest("job kind %s cannot be retried", j.Kind)
	}
	if startErr != nil {
		return startErr
	}
	return s.getJob(c)
}

func (s *Server) cancelJob(c *fiber.Ctx) error {
	j, err := s.loadJob(c)
	if err != nil {
		return err
	}
	tc, err := s.temporalClient()
	if err != nil {
		return err
	}
	if err := tc.CancelWorkflow(c.UserContext(), j.WorkflowID, ""); err != nil {
		var nf *serviceerror.NotFound
		if !errors.As(err, &nf) {
			return Unavailable("workflow engine: %v", err)
		}
	}
	return s.getJob(c)
}
