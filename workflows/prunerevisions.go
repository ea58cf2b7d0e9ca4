package workflows

import (
	"github.com/lorekb/lore/activities"
	"go.temporal.io/sdk/workflow"
)

// PruneRevisionsID is the id of the Temporal Schedule that starts the
// revision pruning pass; the task queue is part of it, so deployments (and
// test servers) sharing a namespace each keep their own.
func PruneRevisionsID(taskQueue string) string { return "prune-revisions-" + taskQueue }

// PruneRevisionsInput is where a pass continued as new resumes.
type PruneRevisionsInput struct {
	After int64
}

// PruneRevisionsResult counts what a pass (or its part before a continue
// as new) deleted.
type PruneRevisionsResult struct {
	Deleted int `json:"deleted"`
}

// pruneStepsPerRun bounds the history of one run: past it the pass
// continues as new from its cursor.
const pruneStepsPerRun = 200

// PruneRevisions is one pass over every document with stored revisions, a
// page of documents per activity, deleting the revisions the retention no
// longer keeps (activities.Revisions.PruneRevisions). A Temporal Schedule
// the worker creates starts it every LORE_REVISIONS_PRUNE_EVERY.
func PruneRevisions(ctx workflow.Context, in PruneRevisionsInput) (PruneRevisionsResult, error) {
	var a *activities.Revisions
	ctx = workflow.WithActivityOptions(ctx, shortOptions)
	res := PruneRevisionsResult{}
	after := in.After
	for step := 0; step < pruneStepsPerRun; step++ {
		var page activities.PruneRevisionsResult
		if err := workflow.ExecuteActivity(ctx, a.PruneRevisions, activities.PruneRevisionsPage{After: after}).Get(ctx, &page); err != nil {
			return res, err
		}
		res.Deleted += page.Deleted
		if page.Next == 0 {
			return res, nil
		}
		after = page.Next
	}
	return res, workflow.NewContinueAsNewError(ctx, PruneRevisions, PruneRevisionsInput{After: after})
}
