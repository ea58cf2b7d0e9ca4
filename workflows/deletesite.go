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

// DeleteSite removes everything of a site in retryable steps: vectors, files,
// documents (in batches), chats, collections, then the site row. The API has
// already hidden the site (Deleting=true), so it vanished from both APIs at
// once; a crash half-way resumes at the step it reached, and every step is
// idempotent.
func DeleteSite(ctx workflow.Context, in DeleteSiteInput) error {
	var a *activities.Sites
	ctx = workflow.WithActivityOptions(ctx, shortOptions)
	if err := workflow.ExecuteActivity(ctx, a.DeleteSiteVectors, in.SiteID, in.TenantID).Get(ctx, nil); err != nil {
		return err
	}
	if err := workflow.ExecuteActivity(ctx, a.DeleteSiteFiles, in.SiteID).Get(ctx, nil); err != nil {
		return err
	}
	for {
		var n int
		if err := workflow.ExecuteActivity(ctx, a.DeleteSiteDocuments, in.SiteID).Get(ctx, &n); err != nil {
			return err
		}
		if n == 0 {
			break
		}
	}
	for _, step := range []any{a.DeleteSiteChats, a.DeleteSiteCollections, a.DeleteSiteRow} {
		if err := workflow.ExecuteActivity(ctx, step, in.SiteID).Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}
