package activities

import (
	"context"

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
}

// SyncStartResult is the run, its plan when it was planned here and, when
// Applied, the outcome of each of the plan's changes (deletions included).
type SyncStartResult struct {
	SyncBeginResult
	Plan    *SyncPlan        `json:",omitempty"`
	Applied bool             `json:",omitempty"`
	Items   []SyncItemResult `json:",omitempty"`
}

// SyncStart is SyncBegin followed, for a git re-sync, by the plan and, when
// it has at most MaxChanges changes and MaxDeletions deletions, by their
// application: a re-sync that finds little changed is then one local
// activity, which reads the data source and its items once and fetches
// while the run is being taken. A plan or apply that fails here is left to
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
	plan, err := a.plan(ctx, SyncPlanInput{Spec: begin.Spec, ConfirmDeletions: in.ConfirmDeletions}, pre)
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
		res, err := a.SyncApply(ctx, SyncApplyInput{Spec: spec, Changes: changes, Concurrency: in.Concurrency})
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
	return out, nil
}
