package workflows

import (
	"errors"

	"github.com/lorekb/lore/activities"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// SignalRevectorize asks a running VectorizeDocument workflow for one more
// pass. The API sends it with SignalWithStart: when no run exists one starts,
// when one runs the requests coalesce into a single extra pass after it, so
// there is never a parallel run for one document.
const SignalRevectorize = "revectorize"

// VectorizeInput names the document to vectorize.
type VectorizeInput struct {
	DocumentID int64
}

// VectorizeDocument runs the indexing activity for one document, again for as
// long as new requests arrived during the previous pass.
func VectorizeDocument(ctx workflow.Context, in VectorizeInput) (activities.IndexResult, error) {
	ch := workflow.GetSignalChannel(ctx, SignalRevectorize)
	drain := func() bool {
		got := false
		for ch.ReceiveAsync(nil) {
			got = true
		}
		return got
	}
	p := Progress{Step: StepIndexing, Total: 1, Running: 1, FailedIDs: []int64{}, Counts: map[string]int64{}}
	if err := ServeProgress(ctx, &p); err != nil {
		return activities.IndexResult{}, err
	}
	for {
		drain()
		p.Counts["passes"]++
		res, err := indexOne(ctx, in.DocumentID)
		if !drain() {
			p.Step, p.Done, p.Running = StepDone, true, 0
			if err != nil {
				p.Failed, p.FailedIDs = 1, []int64{in.DocumentID}
			} else {
				p.Completed, p.Counts["chunks"] = 1, int64(res.Chunks)
			}
			return res, err
		}
	}
}

// indexOne indexes one document and records a final failure on it.
func indexOne(ctx workflow.Context, docID int64) (activities.IndexResult, error) {
	var a *activities.Vectorize
	var res activities.IndexResult
	ref := activities.DocRef{DocumentID: docID}
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, indexOptions), a.IndexDocument, ref).Get(ctx, &res)
	if err != nil {
		reason := RootMessage(err)
		if ferr := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, shortOptions), a.MarkFailed, ref, reason).Get(ctx, nil); ferr != nil {
			return res, ferr
		}
	}
	return res, err
}

// RemoveVectorsInput names the document whose vectors go.
type RemoveVectorsInput struct {
	DocumentID int64
	TenantID   int64
}

// RemoveDocumentVectors deletes a document's vectors and resets its status.
func RemoveDocumentVectors(ctx workflow.Context, in RemoveVectorsInput) error {
	var a *activities.Vectorize
	p := Progress{Step: StepRemoving, Total: 1, Running: 1, FailedIDs: []int64{}}
	if err := ServeProgress(ctx, &p); err != nil {
		return err
	}
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, shortOptions), a.RemoveVectors,
		activities.DocRef{DocumentID: in.DocumentID, TenantID: in.TenantID}).Get(ctx, nil)
	p.Step, p.Done, p.Running = StepDone, true, 0
	if err == nil {
		p.Completed = 1
	}
	return err
}

// RootMessage is the message of the first application error in a Temporal
// error chain (without the SDK's type annotations), which is what an admin wants to read as vector_error.
func RootMessage(err error) string {
	msg := err.Error()
	for e := err; e != nil; e = errors.Unwrap(e) {
		var appErr *temporal.ApplicationError
		if errors.As(e, &appErr) && appErr.Message() != "" {
			return appErr.Message() // the outermost application error says what failed
		}
	}
	return msg
}
