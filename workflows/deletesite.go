package workflows

import (
	"github.com/lorekb/lore/activities"
	"go.temporal.io/sdk/workflow"
)

// DeleteSiteInput names the site to delete.
type DeleteSiteInput struct {
	SiteID   int64
	TenantID int64
}

// DeleteSiteResult says what a site deletion removed.
type DeleteSiteResult struct {
	SiteID      int64 `json:"site_id"`
	Documents   int   `json:"documents"`
	Chats       int   `json:"chat_sessions"`
	Collections int   `json:"collections"`
	Vectors     bool  `json:"vectors_removed"`
	Files       bool  `json:"files_removed"`
}

// DeleteSite removes everything of a site in retryable steps: vectors, files,
// documents (in batches), chats, collections, then the site row. The API has
// already hidden the site (Deleting=true), so it vanished from both APIs at
// once; a crash half-way resumes at the step it reached, and every step is
// idempotent. Its progress names the step and counts what is gone so far.
func DeleteSite(ctx workflow.Context, in DeleteSiteInput) (DeleteSiteResult, error) {
	var a *activities.Sites
	res := DeleteSiteResult{SiteID: in.SiteID}
	// Total and Completed count the six steps.
	p := Progress{Step: StepVectors, Total: 6, Pending: 6, FailedIDs: []int64{}, Counts: map[string]int64{}}
	next := func(step string) { p.Step, p.Completed, p.Pending = step, p.Completed+1, p.Pending-1 }
	if err := ServeProgress(ctx, &p); err != nil {
		return res, err
	}
	ctx = workflow.WithActivityOptions(ctx, shortOptions)
	if err := workflow.ExecuteActivity(ctx, a.DeleteSiteVectors, in.SiteID, in.TenantID).Get(ctx, nil); err != nil {
		return res, err
	}
	res.Vectors = true
	next(StepFiles)
	if err := workflow.ExecuteActivity(ctx, a.DeleteSiteFiles, in.SiteID).Get(ctx, nil); err != nil {
		return res, err
	}
	res.Files = true
	next(StepDocuments)
	for {
		var n int
		if err := workflow.ExecuteActivity(ctx, a.DeleteSiteDocuments, in.SiteID).Get(ctx, &n); err != nil {
			return res, err
		}
		if n == 0 {
			break
		}
		res.Documents += n
		p.Counts["documents"] = int64(res.Documents)
	}
	next(StepChats)
	if err := workflow.ExecuteActivity(ctx, a.DeleteSiteChats, in.SiteID).Get(ctx, &res.Chats); err != nil {
		return res, err
	}
	p.Counts["chat_sessions"] = int64(res.Chats)
	next(StepCollection)
	if err := workflow.ExecuteActivity(ctx, a.DeleteSiteCollections, in.SiteID).Get(ctx, &res.Collections); err != nil {
		return res, err
	}
	p.Counts["collections"] = int64(res.Collections)
	next(StepSiteRow)
	if err := workflow.ExecuteActivity(ctx, a.DeleteSiteRow, in.SiteID).Get(ctx, nil); err != nil {
		return res, err
	}
	next(StepDone)
	p.Done = true
	return res, nil
}
