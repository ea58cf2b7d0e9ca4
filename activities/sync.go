package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/lorekb/lore/internal/config"
	"github.com/lorekb/lore/internal/datasource/gitsrc"
	"github.com/lorekb/lore/internal/datasource/websrc"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/models"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/temporal"
)

// Sync holds the activities of a data source sync (git and web): it reads
// the source, converts what changed through the import's path and writes
// documents keyed by (data source, item key), so a retried activity never
// writes a second document.
type Sync struct {
	DB      *db.DB
	Cfg     *config.Config // import limits, the data directory of the clones
	Models  TenantModels
	Vectors VectorStores
	// Outbound is the transport to the sources (see deps.Outbound).
	Outbound func() http.RoundTripper
	// Runs tells whether a run's workflow still runs (a Temporal client;
	// nil: it cannot tell).
	Runs   WorkflowDescriber
	Import *Import // the conversion path the import takes
}

// WorkflowDescriber describes a workflow run.
type WorkflowDescriber interface {
	DescribeWorkflowExecution(ctx context.Context, workflowID, runID string) (*workflowservice.DescribeWorkflowExecutionResponse, error)
}

// Kinds of change a plan lists.
const (
	SyncAdd    = "add"
	SyncUpdate = "update"
	SyncRename = "rename"
	SyncDelete = "delete"
	SyncCheck  = "check" // a page to fetch (web): its outcome says what changed
)

// Outcomes of an item.
const (
	SyncAdded     = "added"
	SyncUpdated   = "updated"
	SyncRenamed   = "renamed"
	SyncDeleted   = "deleted"
	SyncUnchanged = "unchanged"
	SyncFailed    = "failed"
	SyncGone      = "gone" // a page that answered 404 or 410 (deleted at the end of the run)
)

// MaxSyncItems bounds the files or pages of one data source.
const MaxSyncItems = 5000

// EditRule is the rule a synced document follows when edited in Lore (shown
// in its provenance; docs/sync.md).
const EditRule = "source wins: an edit made in Lore is kept until the file or page changes at the source; the next sync then replaces it"

// SyncChange is one item of a plan.
type SyncChange struct {
	Key        string
	Op         string
	Version    string `json:",omitempty"` // the Git blob id
	From       string `json:",omitempty"` // a rename's old key
	DocumentID int64  `json:",omitempty"`
}

// SyncItemResult is the outcome of one item.
type SyncItemResult struct {
	Key        string `json:"key"`
	Outcome    string `json:"outcome" enum:"added,updated,renamed,deleted,unchanged,failed,gone"`
	DocumentID int64  `json:"document_id,omitempty"`
	Title      string `json:"title,omitempty"`
	Reason     string `json:"reason,omitempty"`
	Note       string `json:"note,omitempty"`
	// Links are a crawled page's links under the prefix (web, start-page
	// mode): the workflow follows them.
	Links []string `json:"links,omitempty"`
}

// SyncSpec is what every activity of one run shares.
type SyncSpec struct {
	RunID        int64
	JobID        string
	DataSourceID int64
	TenantID     int64
	SiteID       int64
	Type         string
	Ref          string // git: the commit being synced
	CollectionID *int64
	Status       string // draft | published
	Vectorize    bool
	Name         string // the data source's name (author of the documents)
}

// SyncBeginInput starts a run.
type SyncBeginInput struct {
	DataSourceID int64
	JobID        string
	Trigger      string
	Title        string
}

// SyncBeginResult is the run and, when another run holds the data source,
// that run's job id.
type SyncBeginResult struct {
	Spec   SyncSpec
	Holder string
	// Resync: an earlier run of the data source completed (or was held), so
	// this one reads what changed since rather than everything.
	Resync bool `json:",omitempty"`
}

// ErrSyncSource is the application error type of a run that cannot read its
// source (not retried: the run fails with the reason).
const ErrSyncSource = "SyncSourceFailed"

func syncFailure(format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), ErrSyncSource, nil)
}

// SyncBegin records the run (and its job row, so a scheduled run shows at
// /jobs/{id}) and makes it the data source's running sync, unless another
// one holds it. A holder whose workflow no longer runs (terminated) is
// marked failed and the data source taken over.
func (a *Sync) SyncBegin(ctx context.Context, in SyncBeginInput) (SyncBeginResult, error) {
	ds, err := a.DB.GetDataSource(ctx, in.DataSourceID)
	if errors.Is(err, db.ErrNotFound) {
		return SyncBeginResult{}, syncFailure("data source %d no longer exists", in.DataSourceID)
	}
	if err != nil {
		return SyncBeginResult{}, err
	}
	if ds.SiteID == nil || (ds.Type != models.DataSourceGit && ds.Type != models.DataSourceWeb) {
		return SyncBeginResult{}, syncFailure("data source %d is not a git or web data source of a site", ds.ID)
	}
	set, err := a.DB.GetSyncSettings(ctx, ds.ID)
	if errors.Is(err, db.ErrNotFound) {
		set, err = &models.SyncSettings{DataSourceID: ds.ID, DeleteShare: 0.3}, nil
	}
	if err != nil {
		return SyncBeginResult{}, err
	}
	if _, err := a.DB.GetJob(ctx, in.JobID); errors.Is(err, db.ErrNotFound) {
		sub, _ := json.Marshal(map[string]any{"DataSourceID": ds.ID, "Trigger": in.Trigger})
		if err := a.DB.SaveJob(ctx, &models.Job{ID: in.JobID, Kind: "sync", WorkflowID: in.JobID, Subject: string(sub),
			TenantID: ds.TenantID, SiteID: *ds.SiteID, Title: in.Title}); err != nil {
			return SyncBeginResult{}, err
		}
	}
	spec := SyncSpec{JobID: in.JobID, DataSourceID: ds.ID, TenantID: ds.TenantID, SiteID: *ds.SiteID, Type: ds.Type,
		CollectionID: set.CollectionID, Status: models.DocDraft, Name: ds.Name}
	if set.Publish {
		spec.Status = models.DocPublished
		ai, err := a.Models.AIConfig(ctx, ds.TenantID)
		spec.Vectorize = err == nil && ai.VectorizeMode != deps.ModeManual
	}
	run := &models.SyncRun{DataSourceID: ds.ID, TenantID: ds.TenantID, SiteID: *ds.SiteID, JobID: in.JobID, Trigger: in.Trigger}
	for range 3 {
		holder, err := a.DB.BeginSyncRun(ctx, run)
		if err != nil {
			return SyncBeginResult{}, err
		}
		spec.RunID = run.ID
		if holder == nil || holder.JobID == in.JobID {
			_, err := a.DB.LastSyncRun(ctx, ds.ID)
			if err != nil && !errors.Is(err, db.ErrNotFound) {
				return SyncBeginResult{}, err
			}
			return SyncBeginResult{Spec: spec, Resync: err == nil}, nil
		}
		if a.alive(ctx, holder.JobID) {
			return SyncBeginResult{Spec: spec, Holder: holder.JobID}, nil
		}
		holder.Status, holder.Message = models.SyncFailed, "its workflow ended without finishing the run"
		if err := a.DB.FinishSyncRun(ctx, holder); err != nil {
			return SyncBeginResult{}, err
		}
	}
	return SyncBeginResult{}, errors.New("the data source's running sync could not be taken over")
}

// alive reports whether a run's workflow still runs (true when the engine
// cannot tell: the run is then waited for, never taken over).
func (a *Sync) alive(ctx context.Context, jobID string) bool {
	if a.Runs == nil {
		return true
	}
	desc, err := a.Runs.DescribeWorkflowExecution(ctx, jobID, "")
	if err != nil {
		return !strings.Contains(strings.ToLower(err.Error()), "not found")
	}
	return desc.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
}

// SyncPlanInput asks for a run's plan.
type SyncPlanInput struct {
	Spec             SyncSpec
	ConfirmDeletions bool
}

// SyncPlan is what a run will do: git, the changes between the items last
// synced and the branch's head; web, the pages to check.
type SyncPlan struct {
	Ref       string
	Changes   []SyncChange
	Unchanged int
	Existing  int // the source's items before the run
	// Held says why the plan's deletions wait for a confirmation ("" when
	// they do not); HeldDeletions counts them.
	Held          string `json:",omitempty"`
	HeldDeletions int    `json:",omitempty"`
	DeleteShare   float64
	// Web: the known pages (their items), the crawl's bounds and rules.
	Known    []string       `json:",omitempty"`
	Crawl    bool           `json:",omitempty"`
	MaxPages int            `json:",omitempty"`
	Prefix   string         `json:",omitempty"`
	Robots   *websrc.Robots `json:",omitempty"`
	Failed   []SyncItemResult
	// Incomplete: a sitemap of the index could not be read, so a known page
	// it no longer lists is not taken for deleted.
	Incomplete bool `json:",omitempty"`
}

func (a *Sync) source(ctx context.Context, spec SyncSpec) (*models.DataSource, error) {
	ds, err := a.DB.GetDataSource(ctx, spec.DataSourceID)
	if errors.Is(err, db.ErrNotFound) || (err == nil && ds.TenantID != spec.TenantID) {
		return nil, syncFailure("data source %d no longer exists", spec.DataSourceID)
	}
	return ds, err
}

// SyncPlan reads the source and the items last synced and says what to do.
func (a *Sync) SyncPlan(ctx context.Context, in SyncPlanInput) (SyncPlan, error) {
	plan, _, err := a.plan(ctx, in, nil)
	return plan, err
}

// plan is SyncPlan with, for git, the fetch that SyncStart began (nil: it
// fetches now); it returns the data source it read too.
func (a *Sync) plan(ctx context.Context, in SyncPlanInput, pre *prefetch) (SyncPlan, *models.DataSource, error) {
	ds, err := a.source(ctx, in.Spec)
	if err != nil {
		return SyncPlan{}, nil, err
	}
	set, err := a.DB.GetSyncSettings(ctx, ds.ID)
	share := 0.3
	if err == nil && set.DeleteShare > 0 {
		share = set.DeleteShare
	}
	stop := heartbeatEvery(ctx, 5*time.Second, nil)
	defer stop()
	// The items last synced are read while the source is: a re-sync that
	// finds little changed waits on the slower of the two, not on both.
	listed := make(chan struct{})
	var items []models.SyncItem
	var listErr error
	go func() {
		defer close(listed)
		items, listErr = a.DB.SyncItemVersions(ctx, ds.ID)
	}()
	known := func() ([]models.SyncItem, error) {
		<-listed
		return items, listErr
	}
	var plan SyncPlan
	if ds.Type == models.DataSourceWeb {
		plan, err = a.planWeb(ctx, ds, known, share)
	} else {
		plan, err = a.planRepo(ctx, ds, known, share, in.ConfirmDeletions, pre)
	}
	return plan, ds, err
}

// sourceError is a source that cannot be read: a refused address, a bound
// or a missing branch fail the run at once; a network failure is retried.
func (a *Sync) sourceError(_ context.Context, format string, err error) error {
	msg := err.Error()
	if errors.Is(err, gitsrc.ErrTooLarge) || strings.Contains(msg, "address not allowed") || strings.Contains(msg, "refused the credentials") ||
		strings.Contains(msg, "not found") || strings.Contains(msg, "couldn't find remote ref") {
		return syncFailure(format, err)
	}
	return fmt.Errorf(format, err)
}

// guard holds the plan's deletions when they are more than the allowed
// share of the source's documents and nobody confirmed them.
func (p *SyncPlan) guard(confirmed bool) {
	n := 0
	for _, c := range p.Changes {
		if c.Op == SyncDelete {
			n++
		}
	}
	if confirmed || n == 0 || float64(n) <= p.DeleteShare*float64(p.Existing) {
		return
	}
	p.Held, p.HeldDeletions = MassDeletionMessage(n, p.Existing, p.DeleteShare), n
	kept := p.Changes[:0]
	for _, c := range p.Changes {
		if c.Op != SyncDelete {
			kept = append(kept, c)
		}
	}
	p.Changes = kept
}

// MassDeletionMessage says why a run's deletions wait.
func MassDeletionMessage(n, of int, share float64) string {
	return fmt.Sprintf("mass-deletion guard: this run would delete %d of the source's %d documents, more than the %.0f%% one run may delete; nothing was deleted. Confirm with POST /data-sources/{id}:sync {\"confirm_deletions\": true}",
		n, of, share*100)
}

// SyncFinishInput is a run's outcome.
type SyncFinishInput struct {
	RunID   int64
	Status  string
	Ref     string
	Message string
	Counts  map[string]int
	Items   []SyncItemResult
}

// MaxRunItems bounds the per-item results a run keeps (the changed and
// failed ones; unchanged items are only counted).
const MaxRunItems = 2000

// SyncFinish records a run's outcome: the data source is free for the next.
func (a *Sync) SyncFinish(ctx context.Context, in SyncFinishInput) error {
	items := make([]SyncItemResult, 0, min(len(in.Items), MaxRunItems))
	for _, it := range in.Items {
		if it.Outcome != SyncUnchanged && len(items) < MaxRunItems {
			it.Links = nil
			items = append(items, it)
		}
	}
	b, _ := json.Marshal(items)
	run := &models.SyncRun{ID: in.RunID, Status: in.Status, Ref: in.Ref, Message: in.Message, Items: string(b),
		Added: in.Counts[SyncAdded], Updated: in.Counts[SyncUpdated] + in.Counts[SyncRenamed], Deleted: in.Counts[SyncDeleted],
		Unchanged: in.Counts[SyncUnchanged], Failed: in.Counts[SyncFailed]}
	return a.DB.FinishSyncRun(ctx, run)
}

// SyncSkip records a scheduled run that found another one running.
func (a *Sync) SyncSkip(ctx context.Context, runID int64, message string) error {
	return a.DB.FinishSyncRun(ctx, &models.SyncRun{ID: runID, Status: models.SyncSkipped, Message: message, Items: "[]"})
}
