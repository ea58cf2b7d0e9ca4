package activities

import (
	"context"
	"fmt"

	"github.com/lorekb/lore/internal/blob"
	"github.com/lorekb/lore/internal/vector"
)

// Sites holds the steps of a site deletion.
type Sites struct {
	DB      SiteStore
	Vectors VectorStores
	Blob    blob.Store // nil: no object store, so no files to delete
}

// SiteStore is the database of a site deletion.
type SiteStore interface {
	DeleteSiteDocuments(ctx context.Context, siteID int64, batch int) (int, error)
	DeleteSiteChats(ctx context.Context, siteID int64) (int, error)
	DeleteSiteCollections(ctx context.Context, siteID int64) (int, error)
	DeleteSiteRow(ctx context.Context, siteID int64) error
}

// SiteFilesPrefix is where files that belong to a site are stored; deleting
// the site removes this prefix.
func SiteFilesPrefix(siteID int64) string { return fmt.Sprintf("sites/%d/", siteID) }

// deleteBatch is how many documents (with their view events and chunk rows)
// one activity call removes: 50 calls for a site of 100,000.
const deleteBatch = 2000

// DeleteSiteVectors removes every chunk of the site from every dimension's
// store: the tenant may have changed embedding models since some of the
// site was indexed. (tenantID stays in the signature: workflow histories
// recorded before carry it.)
func (a *Sites) DeleteSiteVectors(ctx context.Context, siteID, _ int64) error {
	return classify(a.Vectors.EachVectorStore(ctx, func(s vector.Store) error { return s.DeleteSite(ctx, siteID) }))
}

// DeleteSiteFiles removes the site's files.
func (a *Sites) DeleteSiteFiles(ctx context.Context, siteID int64) error {
	if a.Blob == nil {
		return nil
	}
	return a.Blob.DeletePrefix(ctx, SiteFilesPrefix(siteID))
}

// DeleteSiteDocuments removes up to one batch of documents (with their view
// events) and returns how many it removed; zero means done.
func (a *Sites) DeleteSiteDocuments(ctx context.Context, siteID int64) (int, error) {
	return a.DB.DeleteSiteDocuments(ctx, siteID, deleteBatch)
}

// DeleteSiteChats removes the site's chat sessions, messages and tool
// results; it returns how many sessions went (the job's result shows it).
func (a *Sites) DeleteSiteChats(ctx context.Context, siteID int64) (int, error) {
	return a.DB.DeleteSiteChats(ctx, siteID)
}

// DeleteSiteCollections removes the site's collections and returns how many.
func (a *Sites) DeleteSiteCollections(ctx context.Context, siteID int64) (int, error) {
	return a.DB.DeleteSiteCollections(ctx, siteID)
}

// DeleteSiteRow removes the site row and what still refers to it.
func (a *Sites) DeleteSiteRow(ctx context.Context, siteID int64) error {
	return a.DB.DeleteSiteRow(ctx, siteID)
}
