package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/models"
	"github.com/lorekb/lore/workflows"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/sdk/converter"
)

// JobView is a job (a Temporal workflow) as the API shows it: what it is
// about, where it is, and what it did. GET /jobs and GET /tasks render the
// same view.
type JobView struct {
	ID          string              `json:"id"`
	Kind        string              `json:"kind" enum:"vectorize_document,batch_vectorize,remove_vectors,delete_site,reindex,import,sync"`
	Title       string              `json:"title" doc:"what the job does, e.g. Vectorize 'Install' (site Handbook)"`
	TenantID    *int64              `json:"tenant_id"`
	SiteID      *int64              `json:"site_id"`
	DocumentID  *int64              `json:"document_id"`
	RequestedBy string              `json:"requested_by" doc:"email of the user whose request started it"`
	RequestID   string              `json:"request_id" doc:"X-Request-ID of that request"`
	WorkflowID  string              `json:"workflow_id"`
	RunID       string              `json:"run_id"`
	Status      string              `json:"status" enum:"running,completed,failed,canceled,terminated,timed_out,continued_as_new"`
	StartedAt   *time.Time          `json:"started_at"`
	ClosedAt    *time.Time          `json:"closed_at"`
	Progress    *workflows.Progress `json:"progress" doc:"counts and current step; null when the engine could not be asked"`
	Result      json.RawMessage     `json:"result" doc:"the workflow's result once completed (what was indexed or removed, with counts)"`
	Error       string              `json:"error,omitempty"`
	Temporal    map[string]string   `json:"temporal"`
	Input       json.RawMessage     `json:"input" doc:"the workflow input (detail only)"`
}

// viewFromInfo renders what the workflow engine knows of a workflow without
// asking it anything more: status, times, search attributes and memo.
func (s *Server) viewFromInfo(info *workflowpb.WorkflowExecutionInfo) *JobView {
	id := info.GetExecution().GetWorkflowId()
	v := &JobView{ID: id, WorkflowID: id, RunID: info.GetExecution().GetRunId(), Status: jobStatus(info.GetStatus()),
		Result: json.RawMessage("null"), Input: json.RawMessage("null"),
		Temporal: map[string]string{"namespace": s.d.Cfg.TemporalNS,
			"ui": fmt.Sprintf("%s/namespaces/%s/workflows/%s", strings.TrimRight(s.d.Cfg.TemporalUI, "/"), s.d.Cfg.TemporalNS, id)}}
	if t := info.GetStartTime(); t != nil {
		st := t.AsTime()
		v.StartedAt = &st
	}
	if t := info.GetCloseTime(); t != nil && info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
		ct := t.AsTime()
		v.ClosedAt = &ct
	}
	attrs := info.GetSearchAttributes().GetIndexedFields()
	decode(attrs[workflows.AttrKind.GetName()], &v.Kind)
	decode(attrs[workflows.AttrRequestedBy.GetName()], &v.RequestedBy)
	v.TenantID = decodeID(attrs[workflows.AttrTenant.GetName()])
	v.SiteID = decodeID(attrs[workflows.AttrSite.GetName()])
	v.DocumentID = decodeID(attrs[workflows.AttrDocument.GetName()])
	memo := info.GetMemo().GetFields()
	decode(memo[workflows.MemoTitle], &v.Title)
	decode(memo[workflows.MemoRequestID], &v.RequestID)
	return v
}

func decode(p *commonpb.Payload, into any) {
	if p != nil {
		_ = converter.GetDefaultDataConverter().FromPayload(p, into)
	}
}

func decodeID(p *commonpb.Payload) *int64 {
	var n int64
	decode(p, &n)
	return nonZero(n)
}

func nonZero(n int64) *int64 {
	if n == 0 {
		return nil
	}
	return &n
}

// jobView describes the workflow behind a job, then adds its progress (by
// query), its result or error, and what the job row knows (input, and the
// subject of jobs started before search attributes existed).
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
	v := s.viewFromInfo(desc.GetWorkflowExecutionInfo())
	overlayRow(v, j)
	s.addOutcome(ctx, v)
	return v, nil
}

// overlayRow adds the job row to a view: the input, and what the job
// concerns when the workflow carries no search attributes (started before
// they existed, or on a namespace without them).
func overlayRow(v *JobView, j *models.Job) {
	v.ID, v.Input = j.ID, json.RawMessage(j.Subject)
	if v.Kind == "" {
		v.Kind = j.Kind
	}
	if v.Title == "" {
		v.Title = j.Title
	}
	if v.SiteID == nil {
		v.SiteID = nonZero(j.SiteID)
	}
	if v.TenantID == nil {
		v.TenantID = nonZero(j.TenantID)
	}
	if v.DocumentID == nil {
		v.DocumentID = nonZero(j.DocumentID)
	}
	if len(v.Input) == 0 {
		v.Input = json.RawMessage("null")
	}
}

// addOutcome asks for the job's progress and, once it closed, reads its
// result or error.
func (s *Server) addOutcome(ctx context.Context, v *JobView) {
	tc := s.d.Temporal
	if v.Status == "completed" && workflows.ResultIsProgress(v.Kind) && s.progressFromResult(ctx, v) {
		return
	}
	wait := 5 * time.Second
	if v.Status != "running" {
		wait = 2 * time.Second // a closed workflow is replayed to answer
	}
	qctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if res, err := tc.QueryWorkflow(qctx, v.WorkflowID, v.RunID, workflows.QueryProgress); err == nil {
		var p workflows.Progress
		if res.Get(&p) == nil {
			v.Progress = &p
		}
	}
	if v.Status == "running" {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var raw json.RawMessage
	err := tc.GetWorkflow(rctx, v.WorkflowID, v.RunID).Get(rctx, &raw)
	switch {
	case err != nil && v.Status != "completed":
		v.Error = workflows.RootMessage(err)
	case err == nil && len(raw) > 0:
		v.Result = raw
	}
}

// progressFromResult reads a completed job's result and, when it is the
// kind's final Progress, shows it as both result and progress: no query, so
// no replay of the history.
func (s *Server) progressFromResult(ctx context.Context, v *JobView) bool {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var raw json.RawMessage
	if s.d.Temporal.GetWorkflow(rctx, v.WorkflowID, v.RunID).Get(rctx, &raw) != nil {
		return false
	}
	var p workflows.Progress
	if json.Unmarshal(raw, &p) != nil || !p.Done {
		return false
	}
	v.Progress, v.Result = &p, raw
	return true
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

// watchJob streams the job view as SSE whenever it changes, every 500 ms at
// most, and ends after the job closes.
func (s *Server) watchJob(c *fiber.Ctx) error {
	j, first, err := s.loadJobView(c)
	if err != nil {
		return err
	}
	s.streamViews(c, first, func(ctx context.Context) (any, bool, error) {
		v, err := s.jobView(ctx, j)
		if err != nil {
			return nil, false, err
		}
		return v, v.Status == "running", nil
	}, first.Status == "running")
	return nil
}

// streamViews writes first, then every changed value next returns, as
// numbered SSE "progress" events every 500 ms at most, until next says the
// subject is no longer live (then a "done" event), next fails (an "error"
// event) or the client goes away.
func (s *Server) streamViews(c *fiber.Ctx, first any, next func(context.Context) (any, bool, error), live bool) {
	setSSEHeaders(c)
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Hour)
		defer cancel()
		var last []byte
		v := first
		for seq := 1; ; seq++ {
			b, _ := json.Marshal(v)
			if string(b) != string(last) {
				writeSSE(w, seq, "progress", b)
				if w.Flush() != nil {
					return // client went away
				}
				last = b
			}
			if !live {
				writeSSE(w, 0, "done", sseDone)
				_ = w.Flush()
				return
			}
			time.Sleep(500 * time.Millisecond)
			nv, still, err := next(ctx)
			if err != nil {
				fmt.Fprintf(w, "event: error\ndata: %q\n\n", err.Error())
				_ = w.Flush()
				return
			}
			v, live = nv, still
		}
	})
}
