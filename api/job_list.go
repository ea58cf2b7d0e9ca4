package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/models"
	"github.com/lorekb/lore/workflows"
	"github.com/uptrace/bun"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
)

// JobListQuery filters GET /jobs.
type JobListQuery struct {
	PageQuery
	Kind   string `query:"kind" validate:"omitempty,oneof=vectorize_document batch_vectorize remove_vectors delete_site reindex import sync"`
	SiteID int64  `query:"site_id" validate:"min=0"`
	Status string `query:"status" validate:"omitempty,oneof=running completed failed canceled terminated timed_out continued_as_new"`
	Since  string `query:"since" doc:"RFC 3339 time: jobs started at or after it" validate:"max=64"`
}

// maxJobWindow bounds how deep a page of jobs may lie (visibility pages by
// token, so page n costs n reads): narrow with filters beyond it.
const maxJobWindow = 10000

// jobFilter is a visibility query over Lore's jobs.
type jobFilter struct {
	kinds    []string
	siteID   int64
	statuses []string // Temporal ExecutionStatus names
	since    time.Time
	none     bool  // matches nothing (a caller with no sites, a status no job has)
	tenant   int64 // a tenant admin's tenant: only its jobs (0: any)
}

// temporalStatus maps the job statuses of the API to visibility's names.
var temporalStatus = map[string]string{"running": "Running", "completed": "Completed", "failed": "Failed",
	"canceled": "Canceled", "terminated": "Terminated", "timed_out": "TimedOut", "continued_as_new": "ContinuedAsNew"}

func (s *Server) listJobs(c *fiber.Ctx) error {
	var q JobListQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	f := jobFilter{kinds: workflows.JobKinds, siteID: q.SiteID}
	if q.Kind != "" {
		f.kinds = []string{q.Kind}
	}
	if q.Status != "" {
		f.statuses = []string{temporalStatus[q.Status]}
	}
	if q.Since != "" {
		t, err := time.Parse(time.RFC3339, q.Since)
		if err != nil {
			return Invalid("since: invalid value %q (RFC 3339 time expected, e.g. 2026-01-02T15:04:05Z)", truncate(q.Since, 40))
		}
		f.since = t
	}
	views, total, notice, err := s.queryJobs(c, f, &q.PageQuery)
	if err != nil {
		return err
	}
	return pagedNotice(c, views, total, q.PageQuery, notice)
}

// queryJobs lists one page of jobs through Temporal visibility, limited to
// what the caller may see, with the job rows' input and (for running and
// failed jobs) their progress or error. On a namespace without Lore's search
// attributes it lists the job rows instead (jobsFromRows) and returns a
// notice that says so.
func (s *Server) queryJobs(c *fiber.Ctx, f jobFilter, page *PageQuery) ([]*JobView, int, string, error) {
	if err := page.Defaults(20, 100); err != nil {
		return nil, 0, "", err
	}
	if !page.Paged() {
		page.Page, page.Size = 1, 1000
	}
	if page.Page*page.Size > maxJobWindow {
		return nil, 0, "", Invalid("page: only the first %d jobs can be paged through; narrow the list with filters (site_id, kind, status, since)", maxJobWindow)
	}
	tc, err := s.temporalClient()
	if err != nil {
		return nil, 0, "", err
	}
	p := principal(c)
	var sites []int64
	if f.siteID > 0 {
		if err := requireSite(c, f.siteID, SiteAdminUp); err != nil {
			return nil, 0, "", err
		}
	} else if p.IsAdmin() && !p.IsPlatform() {
		f.tenant = p.User.TenantID
	} else if !p.IsAdmin() {
		sites = p.SiteFilter()
		if len(sites) == 1 && sites[0] == -1 {
			f.none = true
		}
	}
	if f.none {
		return []*JobView{}, 0, "", nil
	}
	query := f.visibilityQuery(sites)
	ctx := c.UserContext()
	cnt, err := tc.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: s.d.Cfg.TemporalNS, Query: query})
	if err != nil {
		if attrsMissing(err) {
			return s.jobsFromRows(ctx, f, sites, page)
		}
		return nil, 0, "", visibilityError(err)
	}
	var token []byte
	var views []*JobView
	for n := 1; n <= page.Page; n++ {
		resp, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: s.d.Cfg.TemporalNS,
			PageSize: int32(page.Size), NextPageToken: token, Query: query})
		if err != nil {
			if attrsMissing(err) {
				return s.jobsFromRows(ctx, f, sites, page)
			}
			return nil, 0, "", visibilityError(err)
		}
		if n == page.Page {
			for _, info := range resp.GetExecutions() {
				views = append(views, s.viewFromInfo(info))
			}
		}
		token = resp.GetNextPageToken()
		if len(token) == 0 {
			break
		}
	}
	if err := s.withRows(ctx, views); err != nil {
		return nil, 0, "", err
	}
	s.addOutcomes(ctx, views)
	return views, int(cnt.GetCount()), "", nil
}

// attrsMissing reports a visibility query refused because the namespace
// does not know Lore's search attributes.
func attrsMissing(err error) bool {
	return workflows.IsUnknownSearchAttr(err) || strings.Contains(err.Error(), "not defined")
}

// jobsFromRows lists one page of jobs from the job rows, newest first, for a
// namespace without Lore's search attributes (a Temporal server Lore did not
// set up): kind, site, tenant and since are columns of the rows; the status
// lives in the engine only, so a status filter is not applied (the notice
// says so). Each job's status, progress and outcome come from the engine;
// a job whose workflow the engine no longer holds (past its retention) is
// left out, as visibility would leave it out.
func (s *Server) jobsFromRows(ctx context.Context, f jobFilter, sites []int64, page *PageQuery) ([]*JobView, int, string, error) {
	var rows []models.Job
	q := s.d.DB.NewSelect().Model(&rows).Where("kind IN (?)", bun.List(f.kinds))
	switch {
	case f.siteID > 0:
		q = q.Where("site_id = ?", f.siteID)
	case len(sites) > 0:
		q = q.Where("site_id IN (?)", bun.List(sites))
	}
	if f.tenant > 0 {
		q = q.Where("tenant_id = ?", f.tenant)
	}
	if !f.since.IsZero() {
		q = q.Where("created_at >= ?", f.since.UTC())
	}
	total, err := q.Order("created_at DESC", "id DESC").Limit(int64(page.Size)).Offset(int64((page.Page - 1) * page.Size)).ScanAndCount(ctx)
	if err != nil {
		return nil, 0, "", db.Classify(err)
	}
	views := make([]*JobView, len(rows))
	errs := make([]error, len(rows))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range rows {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			views[i], errs[i] = s.jobView(ctx, &rows[i])
		}()
	}
	wg.Wait()
	out := make([]*JobView, 0, len(views))
	for i, v := range views {
		var e *Error
		switch {
		case errs[i] == nil:
			out = append(out, v)
		case errors.As(errs[i], &e) && e.Status == http.StatusNotFound:
			total--
		default:
			return nil, 0, "", errs[i]
		}
	}
	notice := fmt.Sprintf("Listed from Lore's job records: the Temporal namespace %s has no Lore search attributes (run `lore temporal setup`)", s.d.Cfg.TemporalNS)
	if len(f.statuses) > 0 {
		notice += "; the status filter is not applied"
	}
	return out, max(int(total), len(out)), notice, nil
}

// pagedNotice writes a list page whose msg is notice when there is one (why
// the list is not what was asked).
func pagedNotice[T any](c *fiber.Ctx, list []T, total int, p PageQuery, notice string) error {
	if notice == "" {
		return paged(c, list, total, p)
	}
	c.Set("X-Lore-Notice", notice)
	if list == nil {
		list = []T{}
	}
	return c.JSON(Envelope{Code: 0, Msg: notice, Data: Page[T]{List: list, Pagination: p.pagination(total)}})
}

// visibilityQuery is the list filter in Temporal's SQL-like syntax. Every
// value is an id, a validated enum or a formatted time, never free text.
func (f jobFilter) visibilityQuery(sites []int64) string {
	quoted := make([]string, len(f.kinds))
	for i, k := range f.kinds {
		quoted[i] = "'" + k + "'"
	}
	parts := []string{fmt.Sprintf("%s IN (%s)", workflows.AttrKind.GetName(), strings.Join(quoted, ","))}
	switch {
	case f.siteID > 0:
		parts = append(parts, fmt.Sprintf("%s = %d", workflows.AttrSite.GetName(), f.siteID))
	case len(sites) > 0:
		sort.Slice(sites, func(i, j int) bool { return sites[i] < sites[j] })
		ids := make([]string, len(sites))
		for i, id := range sites {
			ids[i] = fmt.Sprint(id)
		}
		parts = append(parts, fmt.Sprintf("%s IN (%s)", workflows.AttrSite.GetName(), strings.Join(ids, ",")))
	}
	if f.tenant > 0 {
		parts = append(parts, fmt.Sprintf("%s = %d", workflows.AttrTenant.GetName(), f.tenant))
	}
	if len(f.statuses) > 0 {
		st := make([]string, len(f.statuses))
		for i, x := range f.statuses {
			st[i] = "'" + x + "'"
		}
		parts = append(parts, fmt.Sprintf("ExecutionStatus IN (%s)", strings.Join(st, ",")))
	}
	if !f.since.IsZero() {
		parts = append(parts, fmt.Sprintf("StartTime >= '%s'", f.since.UTC().Format(time.RFC3339Nano)))
	}
	return strings.Join(parts, " AND ")
}

// visibilityError explains a refused list: unregistered search attributes
// are an operator's fix, not a retry.
func visibilityError(err error) error {
	if attrsMissing(err) {
		return Unavailable("Temporal search attributes are not registered on this namespace: run `lore temporal setup` (%v)", err)
	}
	return Unavailable("workflow engine: %v", err)
}

// withRows adds what the job rows know to views from visibility: the input,
// and the subject of jobs started before search attributes existed.
func (s *Server) withRows(ctx context.Context, views []*JobView) error {
	ids := make([]string, len(views))
	for i, v := range views {
		ids[i] = v.ID
	}
	rows, err := s.d.DB.GetJobs(ctx, ids)
	if err != nil {
		return err
	}
	for _, v := range views {
		if j, ok := rows[v.ID]; ok {
			overlayRow(v, &j)
		}
	}
	return nil
}

// addOutcomes asks running jobs for their progress and failed ones for their
// error, a few at a time.
func (s *Server) addOutcomes(ctx context.Context, views []*JobView) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, v := range views {
		if v.Status != "running" && v.Status != "failed" {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			s.addOutcome(ctx, v)
		}()
	}
	wg.Wait()
}

// Task is a job in the reference service's task shape (CatWiki's
// /admin/v1/tasks): the same JobView, rendered for clients written against
// it. id is the job id (a string: tasks are workflows here, not rows);
// title and kind are Lore's additions.
type Task struct {
	ID        string          `json:"id" doc:"the job id; GET /jobs/{id}, :watch, :retry and :cancel take it"`
	TaskType  string          `json:"task_type" enum:"import_parsing,vectorize,remove_vectors,delete_site"`
	Status    string          `json:"status" enum:"pending,running,completed,failed,canceled"`
	Progress  float64         `json:"progress" doc:"0.0 - 100.0"`
	JobID     string          `json:"job_id" doc:"the Temporal workflow id"`
	SiteID    *int64          `json:"site_id"`
	TenantID  int64           `json:"tenant_id"`
	Payload   json.RawMessage `json:"payload"`
	Result    json.RawMessage `json:"result"`
	Error     *string         `json:"error"`
	CreatedBy string          `json:"created_by"`
	CreatedAt *time.Time      `json:"created_at"`
	UpdatedAt *time.Time      `json:"updated_at"`
	Title     string          `json:"title"`
	Kind      string          `json:"kind"`
}

// TaskListQuery filters GET /tasks (the reference's page, size, is_pager and
// site_id, plus type and status).
type TaskListQuery struct {
	PageQuery
	SiteID   int64  `query:"site_id" validate:"min=0"`
	TaskType string `query:"task_type" validate:"omitempty,oneof=import_parsing vectorize remove_vectors delete_site"`
	Status   string `query:"status" doc:"pending matches nothing: a started workflow is running" validate:"omitempty,oneof=pending running completed failed canceled"`
}

// taskKinds maps the reference's task types to job kinds.
var taskKinds = map[string][]string{
	"import_parsing": {workflows.KindImport},
	"vectorize":      {workflows.KindVectorizeDocument, workflows.KindBatchVectorize, workflows.KindReindex},
	"remove_vectors": {workflows.KindRemoveVectors},
	"delete_site":    {workflows.KindDeleteSite},
}

// taskStatuses maps the reference's task statuses to Temporal's.
var taskStatuses = map[string][]string{"running": {"Running"}, "completed": {"Completed"},
	"failed": {"Failed", "Terminated", "TimedOut"}, "canceled": {"Canceled"}}

func (s *Server) listTasks(c *fiber.Ctx) error {
	var q TaskListQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	f := jobFilter{kinds: workflows.JobKinds, siteID: q.SiteID, none: q.Status == "pending"}
	if q.TaskType != "" {
		f.kinds = taskKinds[q.TaskType]
	}
	if q.Status != "" {
		f.statuses = taskStatuses[q.Status]
	}
	views, total, notice, err := s.queryJobs(c, f, &q.PageQuery)
	if err != nil {
		return err
	}
	out := make([]Task, len(views))
	for i, v := range views {
		out[i] = taskOf(v)
	}
	return pagedNotice(c, out, total, q.PageQuery, notice)
}

func (s *Server) getTask(c *fiber.Ctx) error {
	_, v, err := s.loadJobView(c)
	if err != nil {
		return err
	}
	return ok(c, taskOf(v))
}

// taskOf renders a job view as a task.
func taskOf(v *JobView) Task {
	t := Task{ID: v.ID, JobID: v.WorkflowID, SiteID: v.SiteID, Payload: v.Input, Result: v.Result,
		CreatedBy: v.RequestedBy, CreatedAt: v.StartedAt, UpdatedAt: v.ClosedAt, Title: v.Title, Kind: v.Kind}
	if v.TenantID != nil {
		t.TenantID = *v.TenantID
	}
	if t.UpdatedAt == nil {
		t.UpdatedAt = v.StartedAt
	}
	if v.Error != "" {
		e := v.Error
		t.Error = &e
	}
	t.TaskType = v.Kind
	for typ, kinds := range taskKinds {
		for _, k := range kinds {
			if k == v.Kind {
				t.TaskType = typ
			}
		}
	}
	switch v.Status {
	case "running", "completed", "canceled":
		t.Status = v.Status
	case "continued_as_new":
		t.Status = "running"
	default:
		t.Status = "failed"
	}
	switch {
	case v.Status == "completed":
		t.Progress = 100
	case v.Progress != nil && v.Progress.Total > 0:
		t.Progress = float64(int(1000*float64(v.Progress.Completed+v.Progress.Failed)/float64(v.Progress.Total))) / 10
	}
	return t
}

// EnsureSearchAttributes registers on the namespace those of Lore's search
// attributes it lacks, so that GET /jobs and /tasks can filter through
// visibility on a Temporal server Lore did not set up. A namespace that does
// not allow it (a hosted one, a caller without operator rights) or that has
// an attribute of another type is left as it is: the lists then read the job
// rows. What happened is logged once.
func EnsureSearchAttributes(ctx context.Context, d *deps.Deps) {
	if d.Temporal == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	ns := d.Cfg.TemporalNS
	have, err := d.Temporal.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
	if err != nil {
		d.Log.Warn("could not read the namespace's search attributes; job lists read Lore's job rows until `lore temporal setup` is run", "namespace", ns, "err", err)
		return
	}
	req := &operatorservice.AddSearchAttributesRequest{Namespace: ns, SearchAttributes: map[string]enumspb.IndexedValueType{}}
	for name, want := range workflows.SearchAttributeTypes {
		got, found := have.GetCustomAttributes()[name]
		switch {
		case !found:
			req.SearchAttributes[name] = want
		case got != want:
			d.Log.Warn("a search attribute exists with another type; job lists read Lore's job rows", "namespace", ns, "attribute", name, "type", got.String(), "want", want.String())
			return
		}
	}
	if len(req.SearchAttributes) == 0 {
		return
	}
	if _, err := d.Temporal.OperatorService().AddSearchAttributes(ctx, req); err != nil {
		d.Log.Warn("could not register Lore's search attributes; job lists read Lore's job rows until `lore temporal setup` is run", "namespace", ns, "err", err)
		return
	}
	d.Log.Info("registered Lore's search attributes", "namespace", ns, "count", len(req.SearchAttributes))
}
