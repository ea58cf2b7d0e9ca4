package activities

import (
	"context"
	"fmt"

	"github.com/lorekb/lore/models"
)

// SyncStartInput begins a run and, for a git re-sync whose plan is small,
// plans and applies it in the same activity.
type SyncStartInput struct {
	Begin            SyncBeginInput
	ConfirmDeletions bool `json:",omitempty"`
	// MaxChanges and MaxDeletions bound a plan applied here (MaxChanges 0:
	// begin only); a larger one is left to the workflow's batches.
	MaxChanges   int `json:",omitempty"`
	MaxDeletions int `json:",omitempty"`
	Concurrency  int `json:",omitempty"`
	// Finish records the run's outcome too when the plan was applied here
	// and nothing is left to index; Waited is the run it waited for (for
	// the outcome's message).
	Finish bool   `json:",omitempty"`
	Waited string `json:",omitempty"`
}

// SyncStartResult is the run, its plan when it was planned here and, when
// Applied, the outcome of each of the plan's changes (deletions included).
type SyncStartResult struct {
	SyncBeginResult
	Plan    *SyncPlan        `json:",omitempty"`
	Applied bool             `json:",omitempty"`
	Items   []SyncItemResult `json:",omitempty"`
	// Finished: the run's outcome is recorded (SyncFinish) and the data
	// source free.
	Finished bool `json:",omitempty"`
}

// SyncStart is SyncBegin followed, for a git re-sync, by the plan and, when
// it has at most MaxChanges changes and MaxDeletions deletions, by their
// application and, with Finish, the run's record: a re-sync that finds
// little changed is then one local activity, which reads the data source
// and its items once and fetches while the run is being taken. A plan or apply that fails here is left to
// the workflow's own steps, which retry it and record the reason (they find
// and keep what this one wrote).
func (a *Sync) SyncStart(ctx context.Context, in SyncStartInput) (SyncStartResult, error) {
	// The fetch waits on the remote, the bookkeeping on the database: they
	// run together.
	var pre *prefetch
	if in.MaxChanges > 0 {
		pre = a.prefetch(ctx, in.Begin.DataSourceID)
	}
	defer pre.wait()
	begin, err := a.SyncBegin(ctx, in.Begin)
	if err != nil {
		return SyncStartResult{}, err
	}
	out := SyncStartResult{SyncBeginResult: begin}
	if begin.Holder != "" || !begin.Resync || begin.Spec.Type != models.DataSourceGit || in.MaxChanges <= 0 {
		return out, nil
	}
	plan, ds, err := a.plan(ctx, SyncPlanInput{Spec: begin.Spec, ConfirmDeletions: in.ConfirmDeletions}, pre)
	if err != nil {
		return out, nil
	}
	out.Plan = &plan
	var changes []SyncChange
	var dels []string
	for _, c := range plan.Changes {
		if c.Op == SyncDelete {
			dels = append(dels, c.Key)
		} else {
			changes = append(changes, c)
		}
	}
	if len(changes) > in.MaxChanges || len(dels) > in.MaxDeletions {
		return out, nil
	}
	spec := begin.Spec
	spec.Ref = plan.Ref
	var items []SyncItemResult
	if len(changes) > 0 {
		res, err := a.apply(ctx, SyncApplyInput{Spec: spec, Changes: changes, Concurrency: in.Concurrency}, ds)
		if err != nil {
			return out, nil
		}
		items = res.Items
	}
	if len(dels) > 0 {
		res, err := a.SyncDelete(ctx, SyncDeleteInput{Spec: spec, Keys: dels})
		if err != nil {
			return out, nil
		}
		items = append(items, res.Items...)
	}
	out.Applied, out.Items = true, items
	if in.Finish && !indexes(spec, items) {
		out.Finished = a.SyncFinish(ctx, startedOutcome(spec, plan, items, in.Waited)) == nil
	}
	return out, nil
}

// indexes reports whether a run's written documents are to be indexed (the
// workflow does that before it records the run).
func indexes(spec SyncSpec, items []SyncItemResult) bool {
	for _, it := range items {
		if spec.Vectorize && (it.Outcome == SyncAdded || it.Outcome == SyncUpdated) && it.DocumentID > 0 {
			return true
		}
	}
	return false
}

// startedOutcome is the record of a run applied whole by SyncStart, as the
// workflow would make it: the plan's failures and the items' outcomes,
// held when the guard held the deletions.
func startedOutcome(spec SyncSpec, plan SyncPlan, items []SyncItemResult, waited string) SyncFinishInput {
	run := append(append([]SyncItemResult(nil), plan.Failed...), items...)
	counts := map[string]int{SyncUnchanged: plan.Unchanged}
	for _, it := range run {
		counts[it.Outcome]++
	}
	return FinishedRun(spec.RunID, spec.Ref, counts, run, plan.Held, waited)
}

// FinishedRun is the record of a run that reached its end: completed, or held
// by the mass-deletion guard (held says why), with the wait for an earlier
// run it began with (waited, its job id) in front of the message.
func FinishedRun(runID int64, ref string, counts map[string]int, items []SyncItemResult, held, waited string) SyncFinishInput {
	out := SyncFinishInput{RunID: runID, Status: models.SyncCompleted, Ref: ref, Counts: counts, Items: items}
	if held != "" {
		out.Status, out.Message = models.SyncHeld, held
	}
	if waited != "" {
		out.Message = JoinMessages(WaitedMessage(waited), out.Message)
	}
	return out
}

// WaitedMessage says a run waited for another one.
func WaitedMessage(jobID string) string { return fmt.Sprintf("waited for sync %s to finish", jobID) }

// JoinMessages joins two parts of a message ("; ", an empty one left out).
func JoinMessages(a, b string) string {
	if a == "" {
		return b
	}
	if b == "" {
		return a
	}
	return a + "; " + b
}
