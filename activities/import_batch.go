package activities

import (
	"context"
	"errors"
	"time"

	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/models"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"golang.org/x/sync/errgroup"
)

// ImportBatchFile is one file of a batch with its index in the import (the
// index keys its document, as with ImportFile).
type ImportBatchFile struct {
	Index int
	File  ImportFile
}

// ImportBatchInput is the input of ImportBatch: several files of one import,
// so the fixed cost of an activity, a row lookup and a transaction is paid
// once per batch instead of once per file.
type ImportBatchInput struct {
	Spec        ImportSpec
	Files       []ImportBatchFile
	Concurrency int // files of the batch converted at once (at least 1)
	// MaxAttempts is the activity's retry limit: on its last attempt a
	// file's transient error becomes that file's failure, so the rest of
	// the batch still lands and the workflow learns each file's reason.
	MaxAttempts int32 `json:",omitempty"`
}

// ImportBatchItem is the outcome of one file of a batch.
type ImportBatchItem struct {
	Index      int
	DocumentID int64  `json:",omitempty"`
	Title      string `json:",omitempty"`
	Created    bool   `json:",omitempty"` // false for an imported file: a previous attempt had created it
	Images     int    `json:",omitempty"`
	Reason     string `json:",omitempty"` // why the file failed ("": it was imported)
}

// ImportBatchResult has one item per file, in the batch's order.
type ImportBatchResult struct {
	Items []ImportBatchItem
}

// ImportBatch imports several files: files whose document an earlier attempt
// created are skipped (one query), the others are fetched and converted up
// to Concurrency at once, and their documents and import items are written
// in one transaction. A file that cannot be imported fails alone with its
// reason; a transient error of any file (a processor or store that is down)
// fails the attempt after the other files' documents were written, so the
// retry only redoes what is missing and never creates a second document.
func (a *Import) ImportBatch(ctx context.Context, in ImportBatchInput) (ImportBatchResult, error) {
	items := make([]ImportBatchItem, len(in.Files))
	indexes := make([]int, len(in.Files))
	for i, f := range in.Files {
		items[i].Index, indexes[i] = f.Index, f.Index
	}
	done, err := a.DB.ImportedDocuments(ctx, in.Spec.ImportID, indexes)
	if err != nil {
		return ImportBatchResult{}, err
	}
	last := in.MaxAttempts > 0 && activity.IsActivity(ctx) && activity.GetInfo(ctx).Attempt >= in.MaxAttempts
	conv, err := a.converter(ctx, in.Spec)
	var live *liveness
	if err == nil {
		live = newLiveness(a.fileTimeout(conv) + fetchSlack)
	}
	stop := heartbeatEvery(ctx, 5*time.Second, func() bool { return live != nil && live.stuck() })
	defer stop()
	if err != nil {
		if !isFileFailure(err) && !last {
			return ImportBatchResult{}, err
		}
		for i, f := range in.Files {
			if d, ok := done[f.Index]; ok {
				items[i].DocumentID, items[i].Title = d.ID, d.Title
			} else {
				items[i].Reason = failureReason(err)
			}
		}
		return ImportBatchResult{Items: items}, nil
	}
	docs := make([]*models.Document, len(in.Files))
	// A goroutine returns only a transient error (the attempt fails after
	// the other files landed); a file's own failure is its item's reason.
	var g errgroup.Group
	g.SetLimit(max(in.Concurrency, 1))
	for i, f := range in.Files {
		if d, ok := done[f.Index]; ok {
			items[i].DocumentID, items[i].Title = d.ID, d.Title
			continue
		}
		g.Go(func() error {
			done := live.begin()
			doc, images, err := a.prepare(ctx, conv, ImportFileInput{Spec: in.Spec, Index: f.Index, File: f.File})
			done()
			switch {
			case err == nil:
				docs[i], items[i].Images = doc, images
			case isFileFailure(err) || last:
				items[i].Reason = failureReason(err)
			default:
				return err
			}
			return nil
		})
	}
	transient := g.Wait()
	var fresh []db.NewImportedDoc
	var at []int
	for i, d := range docs {
		if d != nil {
			fresh = append(fresh, db.NewImportedDoc{Index: in.Files[i].Index, Doc: d})
			at = append(at, i)
		}
	}
	created, err := a.DB.CreateImportedDocuments(ctx, in.Spec.ImportID, fresh)
	if errors.Is(err, db.ErrCollectionNotInSite) || errors.Is(err, db.ErrNotFound) {
		for _, i := range at {
			items[i].Reason = in.Files[i].File.Name + ": the collection is gone or belongs to another site"
			items[i].Images = 0
		}
		err = nil
		created = nil
	}
	if err != nil {
		return ImportBatchResult{}, err
	}
	for k, i := range at {
		if created != nil {
			items[i].DocumentID, items[i].Title, items[i].Created = docs[i].ID, docs[i].Title, created[k]
		}
	}
	if transient != nil {
		return ImportBatchResult{}, transient
	}
	return ImportBatchResult{Items: items}, nil
}

// isFileFailure reports whether err is a file that cannot be imported (not
// worth a retry).
func isFileFailure(err error) bool {
	var appErr *temporal.ApplicationError
	return errors.As(err, &appErr) && appErr.Type() == ErrImportFile
}

// failureReason is the message a failed file shows.
func failureReason(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && appErr.Message() != "" {
		return appErr.Message()
	}
	return err.Error()
}
