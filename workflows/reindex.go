package workflows

import (
	"github.com/lorekb/lore/activities"
	"go.temporal.io/sdk/workflow"
)

// Re-index paging: a page of ids is listed (and marked pending) by one
// activity and indexed in groups; the run continues as new well before its
// history grows large, so a re-index of any size keeps a short history.
const (
	DefaultReindexPage = 1000
	// reindexHistoryLimit is the history length after which a re-index
	// continues as new (one page of 1,000 documents in groups of 100 adds
	// about 70 events; Temporal warns at 10,240).
	reindexHistoryLimit = 4000
	// reindexPagesPerRun bounds the pages of one run whatever the engine
	// reports as its history length.
	reindexPagesPerRun = 40
)

// ReindexInput names what to re-index: a site, or every site of a tenant
// (SiteID 0). AfterID and Progress carry the position across
// continue-as-new.
type ReindexInput struct {
	TenantID    int64
	SiteID      int64
	PageSize    int
	GroupSize   int
	Concurrency int
	AfterID     int64
	Progress    *Progress
	// PagesPerRun overrides reindexPagesPerRun (tests).
	PagesPerRun int
}

// Reindex re-vectorizes every published (or previously vectorized) document
// of a site or tenant, page by page in id order, with the batch's groups and
// concurrency; failures are recorded on their documents and counted. Use it
// after an embedding-model change or when a site's index is in doubt.
func Reindex(ctx workflow.Context, in ReindexInput) (Progress, error) {
	var a *activities.Vectorize
	actx := workflow.WithActivityOptions(ctx, shortOptions)
	page := activities.ReindexPageInput{TenantID: in.TenantID, SiteID: in.SiteID, AfterID: in.AfterID, Limit: in.PageSize}
	if page.Limit <= 0 {
		page.Limit = DefaultReindexPage
	}
	var p Progress
	if in.Progress != nil {
		p = *in.Progress
	} else {
		p = Progress{Step: StepListing, FailedIDs: []int64{}, Counts: map[string]int64{"pages": 0, "runs": 1}}
		if err := workflow.ExecuteActivity(actx, a.CountReindex, page).Get(ctx, &p.Total); err != nil {
			return p, err
		}
		p.Pending = p.Total
	}
	if err := ServeProgress(ctx, &p); err != nil {
		return p, err
	}
	perRun := reindexPagesPerRun
	if in.PagesPerRun > 0 {
		perRun = in.PagesPerRun
	}
	for pages := 1; ; pages++ {
		p.Step = StepListing
		var ids []int64
		if err := workflow.ExecuteActivity(actx, a.ReindexPage, page).Get(ctx, &ids); err != nil {
			return p, err
		}
		if len(ids) == 0 {
			p.Step, p.Done, p.Pending = StepDone, true, 0
			return p, nil
		}
		if p.Pending < len(ids) {
			// Documents were added since the count.
			p.Total += len(ids) - p.Pending
			p.Pending = len(ids)
		}
		p.Step = StepIndexing
		// At least 10 documents a group, so a page adds at most ~100
		// activities to the history.
		if err := indexIDs(ctx, ids, max(in.GroupSize, 10), in.Concurrency, &p); err != nil {
			return p, err // cancelled
		}
		p.Counts["pages"]++
		page.AfterID = ids[len(ids)-1]
		info := workflow.GetInfo(ctx)
		if pages >= perRun || info.GetContinueAsNewSuggested() || info.GetCurrentHistoryLength() > reindexHistoryLimit {
			p.Counts["runs"]++
			next := in
			next.AfterID, next.Progress = page.AfterID, &p
			return p, workflow.NewContinueAsNewError(ctx, Reindex, next)
		}
	}
}
