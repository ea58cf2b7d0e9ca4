package activities

import (
	"context"
	"time"

	"github.com/lorekb/lore/internal/db"
)

// Revisions holds the activities of document revisions.
type Revisions struct {
	DB RevisionStore
	// Retention is what pruning keeps (LORE_REVISIONS_KEEP and
	// LORE_REVISIONS_MAX_AGE).
	Retention db.RevisionRetention
}

// RevisionStore is the database of revision pruning.
type RevisionStore interface {
	PruneRevisions(ctx context.Context, r db.RevisionRetention, now time.Time, after int64, page int) (int, int64, error)
}

// PruneRevisionsPage is one step of a pruning pass: the documents after the
// document id After.
type PruneRevisionsPage struct {
	After int64
}

// PruneRevisionsResult says what a step pruned and where the pass goes on
// (Next 0: the pass is over).
type PruneRevisionsResult struct {
	Deleted int
	Next    int64
}

// pruneDocumentsPerStep bounds one step: one statement over this many
// documents, a few seconds at most on a large database.
const pruneDocumentsPerStep = 500

// PruneRevisions deletes the revisions of a page of documents that the
// retention of LORE_REVISIONS_KEEP and LORE_REVISIONS_MAX_AGE no longer
// keeps (never a document's current one), and those of deleted documents.
// A retry repeats the same deletion, which finds nothing more to delete.
func (a *Revisions) PruneRevisions(ctx context.Context, in PruneRevisionsPage) (PruneRevisionsResult, error) {
	n, next, err := a.DB.PruneRevisions(ctx, a.Retention, time.Now(), in.After, pruneDocumentsPerStep)
	return PruneRevisionsResult{Deleted: n, Next: next}, err
}
