package activities

import (
	"context"

	"github.com/lorekb/lore/internal/db"
)

// ReindexPageInput asks for the next page of a re-index.
type ReindexPageInput struct {
	TenantID int64
	SiteID   int64 // 0: every site of the tenant
	AfterID  int64 // the last id of the previous page
	Limit    int
}

// CountReindex counts the documents a re-index covers (its progress total).
func (a *Vectorize) CountReindex(ctx context.Context, in ReindexPageInput) (int, error) {
	return a.DB.CountReindex(ctx, db.ReindexScope{TenantID: in.TenantID, SiteID: in.SiteID})
}

// ReindexPage returns the ids of the next page of a re-index and marks them
// pending, so the site's vector stats show the page queued. Listing and
// marking are idempotent: a retry returns the same page.
func (a *Vectorize) ReindexPage(ctx context.Context, in ReindexPageInput) ([]int64, error) {
	ids, err := a.DB.ReindexPage(ctx, db.ReindexScope{TenantID: in.TenantID, SiteID: in.SiteID}, in.AfterID, in.Limit)
	if err != nil || len(ids) == 0 {
		return ids, err
	}
	if _, err := a.DB.MarkVectorPending(ctx, ids); err != nil {
		return nil, err
	}
	return ids, nil
}
