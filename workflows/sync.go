package workflows

import (
	"fmt"
	"time"

	"github.com/lorekb/lore/activities"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// KindSync is the job kind of a data source sync (one of JobKinds).
const KindSync = "sync"

// Sync triggers.
const (
	TriggerManual   = "manual"
	TriggerSchedule = "schedule"
)

// SyncID is the workflow id of a sync started on request; a scheduled run's
// id is the schedule's (SyncScheduleID) and the time it fired.
func SyncID(dataSourceID int64, short string) string {
	return fmt.Sprintf("sync-ds-%d-%s", dataSourceID, short)
}

// SyncScheduleID is the id of a data source's Temporal Schedule.
func SyncScheduleID(dataSourceID int64) string { return fmt.Sprintf("sync-ds-%d", dataSourceID) }

// Steps of a sync.
const (
	StepSyncWaiting  = "waiting for the running sync"
	StepSyncPlanning = "reading the source"
	StepSyncApplying = "converting what changed"
	StepSyncDeleting = "deleting what left the source"
)

// SyncInput starts a sync of one data source.
type SyncInput struct {
	DataSourceID     int64
	Trigger          string
	ConfirmDeletions bool   `json:",omitempty"`
	Title            string `json:",omitempty"`
	Concurrency      int    `json:",omitempty"` // git batches at once
}

// Batch sizes of a sync.
const (
	syncBatchFiles      = 32
	syncFileConcurrency = 4 // files of a batch read and converted at once
	syncBatchPages      = 10
	syncDeleteBatch     = 100
	syncWaitPoll        = 5 * time.Second
	syncWaitMax         = 720 // polls: an hour
)

// syncOptions retry a batch on transient failures (a killed worker: the
// heartbeat timeout hands its batch to another worker within seconds).
var syncOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 30 * time.Minute,
	HeartbeatTimeout:    20 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2,
		MaximumInterval: 30 * time.Second, MaximumAttempts: 5, NonRetryableErrorTypes: []string{activities.ErrSyncSource}},
}

// syncLocalOptions run the short bookkeeping of a run (taking the data
// source, recording the outcome) as local activities: a few database rows,
// without a round trip through the task queue, which is most of what a sync
// with little to do costs.
var syncLocalOptions = workflow.LocalActivityOptions{
	StartToCloseTimeout: time.Minute,
	RetryPolicy:         shortOptions.RetryPolicy,
}

// syncLocalPlanOptions and syncLocalApplyOptions run a git re-sync's plan
// and, when it has at most one batch of changes, their application as local
// activities in the run's first workflow task: a re-sync that finds little
// changed then costs one workflow task and no task queue round trip, where
// those round trips were most of its time. A first sync (a clone) plans
// in an activity, heartbeating. A worker lost during a local activity
// loses the workflow task: the next worker runs it again, and the apply
// finds what an earlier attempt wrote, as SyncApply's does.
var (
	syncLocalPlanOptions = workflow.LocalActivityOptions{
		StartToCloseTimeout: 30 * time.Minute,
		RetryPolicy:         syncOptions.RetryPolicy,
	}
	syncLocalApplyOptions = workflow.LocalActivityOptions{
		StartToCloseTimeout: 10 * time.Minute,
		RetryPolicy:         syncOptions.RetryPolicy,
	}
	// syncStartOptions: SyncStart fails only where SyncBegin does (what its
	// plan and apply meet is left to the workflow's steps), so it retries as
	// the bookkeeping does, with the time a plan takes.
	syncStartOptions = workflow.LocalActivityOptions{
		StartToCloseTimeout: syncLocalPlanOptions.StartToCloseTimeout,
		RetryPolicy:         syncLocalOptions.RetryPolicy,
	}
)

// Versions of the sync workflow's shape: a run recorded before a change
// replays the shape it ran.
const (
	// versionSyncLocal plans a git re-sync and applies a plan of one batch
	// as local activities.
	versionSyncLocal = "sync-local"
	// versionSyncStart begins a run, and plans and applies a git re-sync of
	// at most one batch, in one local activity (SyncStart); from its version
	// 2, that activity records the run too when nothing is left to index.
	versionSyncStart = "sync-start"
	// SyncVersion is the latest shape (the recorded histories that the
	// replay test keeps are named after it).
	SyncVersion = 3
)

// syncRun is the state of one sync execution.
type syncRun struct {
	in    SyncInput
	spec  activities.SyncSpec
	p     *Progress
	items []activities.SyncItemResult
	queue indexQueue
	local bool // versionSyncLocal: small work runs as local activities
}

// SyncDataSource keeps a site in sync with a data source (git or web): one
// run at a time per data source (a run on request waits for the running
// one, a scheduled run skips), then the plan (what changed since the items
// last synced), the changes in batches (converted through the import's
// path, documents keyed by data source and item), the deletions unless
// the mass-deletion guard holds them, and the run's record with per-item
// results.
func SyncDataSource(ctx workflow.Context, in SyncInput) (Progress, error) {
	p := Progress{Step: StepQueued, FailedIDs: []int64{}, Counts: map[string]int64{}, Items: []ItemResult{}}
	if err := ServeProgress(ctx, &p); err != nil {
		return p, err
	}
	var a *activities.Sync
	short := workflow.WithLocalActivityOptions(ctx, syncLocalOptions)
	jobID := workflow.GetInfo(ctx).WorkflowExecution.ID
	// v2 begins, and plans and applies a small git re-sync, in one local
	// activity, and v3 records it there too; the shapes before it begin
	// alone.
	startV := workflow.GetVersion(ctx, versionSyncStart, workflow.DefaultVersion, 2)
	var begin activities.SyncBeginResult
	var started activities.SyncStartResult
	waited := ""
	for poll := 0; ; poll++ {
		var err error
		if startV >= 1 {
			err = workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, syncStartOptions), a.SyncStart, activities.SyncStartInput{
				Begin:            activities.SyncBeginInput{DataSourceID: in.DataSourceID, JobID: jobID, Trigger: in.Trigger, Title: in.Title},
				ConfirmDeletions: in.ConfirmDeletions, MaxChanges: syncBatchFiles, MaxDeletions: syncDeleteBatch, Concurrency: syncFileConcurrency,
				Finish: startV >= 2, Waited: waited,
			}).Get(ctx, &started)
			begin = started.SyncBeginResult
		} else {
			err = workflow.ExecuteLocalActivity(short, a.SyncBegin, activities.SyncBeginInput{DataSourceID: in.DataSourceID, JobID: jobID,
				Trigger: in.Trigger, Title: in.Title}).Get(ctx, &begin)
		}
		if err != nil {
			return p, err
		}
		if begin.Holder == "" {
			break
		}
		if in.Trigger == TriggerSchedule {
			msg := fmt.Sprintf("skipped: sync %s of this data source was still running", begin.Holder)
			_ = workflow.ExecuteLocalActivity(short, a.SyncSkip, begin.Spec.RunID, msg).Get(ctx, nil)
			p.Step, p.Done = msg, true
			return p, nil
		}
		if poll >= syncWaitMax {
			msg := fmt.Sprintf("sync %s of this data source still runs after an hour; this one gave up waiting", begin.Holder)
			_ = workflow.ExecuteLocalActivity(short, a.SyncSkip, begin.Spec.RunID, msg).Get(ctx, nil)
			return p, temporal.NewNonRetryableApplicationError(msg, activities.ErrSyncSource, nil)
		}
		waited = begin.Holder
		p.Step = StepSyncWaiting + " (" + begin.Holder + ")"
		if err := workflow.Sleep(ctx, syncWaitPoll); err != nil {
			return p, err
		}
	}
	r := &syncRun{in: in, spec: begin.Spec, p: &p}
	r.queue = indexQueue{wg: workflow.NewWaitGroup(ctx), indexed: r.indexed}
	// v2 runs a git re-sync's small work as local activities as v1 does.
	r.local = (startV >= 1 || workflow.GetVersion(ctx, versionSyncLocal, workflow.DefaultVersion, 1) >= 1) && r.spec.Type == "git"
	p.Step = StepSyncPlanning
	plan, err := r.plan(ctx, started.Plan, begin.Resync)
	if err != nil {
		return p, r.fail(ctx, RootMessage(err))
	}
	r.spec.Ref = plan.Ref
	p.Counts[activities.SyncUnchanged] = int64(plan.Unchanged)
	for _, f := range plan.Failed {
		r.record(f)
	}
	var dels []string
	held := plan.Held
	switch {
	case started.Applied:
		r.applied(ctx, plan, started.Items)
	case r.spec.Type == "web":
		dels, held, err = r.web(ctx, plan)
	default:
		dels, err = r.git(ctx, plan)
	}
	if err != nil {
		return p, r.fail(ctx, RootMessage(err))
	}
	if len(dels) > 0 {
		p.Step = StepSyncDeleting
		if err := r.delete(ctx, dels); err != nil {
			return p, r.fail(ctx, RootMessage(err))
		}
	}
	r.queue.drain(ctx, &p.Step)
	if !started.Finished {
		fin := activities.FinishedRun(r.spec.RunID, r.spec.Ref, r.counts(), r.items, held, waited)
		if err := workflow.ExecuteLocalActivity(short, a.SyncFinish, fin).Get(ctx, nil); err != nil {
			return p, err
		}
	}
	p.Done, p.Step = true, StepDone
	if held != "" {
		p.Step = "held: " + held
	}
	return p, nil
}

// fail records a run that could not finish and frees the data source.
func (r *syncRun) fail(ctx workflow.Context, msg string) error {
	var a *activities.Sync
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	_ = workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(dctx, syncLocalOptions), a.SyncFinish, activities.SyncFinishInput{RunID: r.spec.RunID,
		Status: "failed", Ref: r.spec.Ref, Message: msg, Counts: r.counts(), Items: r.items}).Get(dctx, nil)
	return temporal.NewNonRetryableApplicationError(msg, activities.ErrSyncSource, nil)
}

// counts is the run's count of items by outcome, as its record keeps it.
func (r *syncRun) counts() map[string]int {
	counts := make(map[string]int, len(r.p.Counts))
	for k, v := range r.p.Counts {
		counts[k] = int(v)
	}
	return counts
}

// record adds an item's outcome to the run and its progress, and queues
// a written document for indexing.
func (r *syncRun) record(it activities.SyncItemResult) {
	it.Links = nil // followed already; the run keeps outcomes only
	r.items = append(r.items, it)
	r.p.Counts[it.Outcome]++
	if it.Outcome == activities.SyncUnchanged {
		return
	}
	st := ItemCompleted
	if it.Outcome == activities.SyncFailed {
		st = ItemFailed
		r.p.Failed++
	} else {
		r.p.Completed++
	}
	r.p.Items = append(r.p.Items, ItemResult{Index: len(r.p.Items), Name: it.Key, Status: st, DocumentID: it.DocumentID,
		Title: it.Title, Reason: activities.JoinMessages(it.Reason, it.Note)})
}

// written queues the documents of a batch for indexing.
func (r *syncRun) written(ctx workflow.Context, res []activities.SyncItemResult) {
	if !r.spec.Vectorize {
		return
	}
	var ids []int64
	for _, it := range res {
		if (it.Outcome == activities.SyncAdded || it.Outcome == activities.SyncUpdated) && it.DocumentID > 0 {
			ids = append(ids, it.DocumentID)
		}
	}
	r.queue.add(ctx, ids...)
}

// indexed records a group's failures.
func (r *syncRun) indexed(_, failed []int64) {
	r.p.FailedIDs = append(r.p.FailedIDs, failed[:min(len(failed), max(maxFailedIDs-len(r.p.FailedIDs), 0))]...)
}

// apply runs one batch (a local activity when local is set); a batch that
// fails for good fails its items with the reason, and the run goes on.
func (r *syncRun) apply(ctx workflow.Context, in activities.SyncApplyInput, local bool) []activities.SyncItemResult {
	var a *activities.Sync
	var res activities.SyncApplyResult
	in.MaxAttempts = syncOptions.RetryPolicy.MaximumAttempts
	var f workflow.Future
	if local {
		f = workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, syncLocalApplyOptions), a.SyncApply, in)
	} else {
		f = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, syncOptions), a.SyncApply, in)
	}
	if err := f.Get(ctx, &res); err != nil {
		out := make([]activities.SyncItemResult, len(in.Changes))
		for i, c := range in.Changes {
			out[i] = activities.SyncItemResult{Key: c.Key, Outcome: activities.SyncFailed, Reason: RootMessage(err)}
		}
		return out
	}
	return res.Items
}

// plan is the run's plan: the one SyncStart made, or one made now (a git
// re-sync as a local activity when local, else an activity, heartbeating).
func (r *syncRun) plan(ctx workflow.Context, made *activities.SyncPlan, resync bool) (activities.SyncPlan, error) {
	if made != nil {
		return *made, nil
	}
	var a *activities.Sync
	in := activities.SyncPlanInput{Spec: r.spec, ConfirmDeletions: r.in.ConfirmDeletions}
	var planned workflow.Future
	if r.local && resync {
		planned = workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, syncLocalPlanOptions), a.SyncPlan, in)
	} else {
		opts := syncOptions
		opts.StartToCloseTimeout = time.Hour
		planned = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, opts), a.SyncPlan, in)
	}
	var plan activities.SyncPlan
	err := planned.Get(ctx, &plan)
	return plan, err
}

// applied records the outcomes of a plan that SyncStart applied whole.
func (r *syncRun) applied(ctx workflow.Context, plan activities.SyncPlan, items []activities.SyncItemResult) {
	r.p.Total = len(plan.Changes)
	r.p.Step = StepSyncApplying
	for _, it := range items {
		r.record(it)
	}
	r.written(ctx, items)
}

// git applies a plan's adds, updates and renames in batches, Concurrency at
// once, and returns the keys to delete.
func (r *syncRun) git(ctx workflow.Context, plan activities.SyncPlan) ([]string, error) {
	var changes []activities.SyncChange
	var dels []string
	for _, c := range plan.Changes {
		if c.Op == activities.SyncDelete {
			dels = append(dels, c.Key)
		} else {
			changes = append(changes, c)
		}
	}
	r.p.Total, r.p.Pending = len(plan.Changes), len(plan.Changes)
	r.p.Step = StepSyncApplying
	if r.local && len(changes) > 0 && len(changes) <= syncBatchFiles {
		r.p.Pending -= len(changes)
		res := r.apply(ctx, activities.SyncApplyInput{Spec: r.spec, Changes: changes, Concurrency: syncFileConcurrency}, true)
		for _, it := range res {
			r.record(it)
		}
		r.written(ctx, res)
		r.p.Pending -= len(dels)
		return dels, nil
	}
	limit := max(r.in.Concurrency, 1)
	inFlight := 0
	for start := 0; start < len(changes); start += syncBatchFiles {
		batch := changes[start:min(start+syncBatchFiles, len(changes))]
		if err := workflow.Await(ctx, func() bool { return inFlight < limit }); err != nil {
			return nil, err
		}
		inFlight++
		r.p.Pending -= len(batch)
		r.p.Running += len(batch)
		r.queue.wg.Add(1)
		workflow.Go(ctx, func(gctx workflow.Context) {
			defer r.queue.wg.Done()
			res := r.apply(gctx, activities.SyncApplyInput{Spec: r.spec, Changes: batch, Concurrency: syncFileConcurrency}, false)
			inFlight--
			r.p.Running -= len(batch)
			for _, it := range res {
				r.record(it)
			}
			r.written(gctx, res)
		})
	}
	if err := workflow.Await(ctx, func() bool { return inFlight == 0 }); err != nil {
		return nil, err
	}
	r.p.Pending -= len(dels)
	return dels, nil
}

// web checks the plan's pages in batches, one batch at a time (a polite
// rate), following the links of crawled pages under the prefix up to
// max_pages, and returns the keys to delete: the pages gone (404, 410) and,
// when the walk was complete, the known pages it no longer reached. The
// mass-deletion guard applies to them.
func (r *syncRun) web(ctx workflow.Context, plan activities.SyncPlan) ([]string, string, error) {
	queue := append([]activities.SyncChange(nil), plan.Changes...)
	seen := map[string]bool{}
	for _, c := range queue {
		seen[c.Key] = true
	}
	r.p.Step = StepSyncApplying
	complete := !plan.Incomplete
	var gone []string
	for next := 0; next < len(queue); {
		batch := queue[next:min(next+syncBatchPages, len(queue))]
		next += len(batch)
		r.p.Total = len(queue)
		res := r.apply(ctx, activities.SyncApplyInput{Spec: r.spec, Changes: batch, Robots: plan.Robots, Crawl: plan.Crawl}, false)
		for _, it := range res {
			switch it.Outcome {
			case activities.SyncGone:
				gone = append(gone, it.Key)
				continue // counted as deleted once deleted
			case activities.SyncFailed:
				if plan.Crawl {
					complete = false // its links were not followed
				}
			}
			r.record(it)
			for _, l := range it.Links {
				if seen[l] || !plan.Robots.Allowed(l) {
					continue
				}
				if len(queue) >= plan.MaxPages {
					complete = false
					break
				}
				seen[l] = true
				queue = append(queue, activities.SyncChange{Key: l, Op: activities.SyncCheck})
			}
		}
		r.written(ctx, res)
	}
	dels := gone
	if complete {
		for _, k := range plan.Known {
			if !seen[k] {
				dels = append(dels, k)
			}
		}
	}
	if !r.in.ConfirmDeletions && len(dels) > 0 && float64(len(dels)) > plan.DeleteShare*float64(plan.Existing) {
		return nil, activities.MassDeletionMessage(len(dels), plan.Existing, plan.DeleteShare), nil
	}
	return dels, "", nil
}

// delete removes the documents of the keys in batches.
func (r *syncRun) delete(ctx workflow.Context, keys []string) error {
	var a *activities.Sync
	for start := 0; start < len(keys); start += syncDeleteBatch {
		batch := keys[start:min(start+syncDeleteBatch, len(keys))]
		var res activities.SyncApplyResult
		if err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, syncOptions), a.SyncDelete,
			activities.SyncDeleteInput{Spec: r.spec, Keys: batch}).Get(ctx, &res); err != nil {
			return err
		}
		for _, it := range res.Items {
			r.record(it)
		}
	}
	return nil
}
