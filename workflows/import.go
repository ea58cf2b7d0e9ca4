package workflows

import (
	"fmt"
	"time"

	"github.com/lorekb/lore/activities"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// ImportID is the workflow ID of an import: the site and a random id.
func ImportID(siteID int64, id string) string { return fmt.Sprintf("import-%d-%s", siteID, id) }

// StepImporting is the step of an import while it converts files.
const StepImporting = "importing files"

// Item states of an import.
const (
	ItemPending   = "pending"
	ItemRunning   = "running"
	ItemCompleted = "completed"
	ItemFailed    = "failed"
)

// ItemResult is the state of one file of an import, in the order the files
// were given.
type ItemResult struct {
	Index        int    `json:"index"`
	Name         string `json:"name"`
	Status       string `json:"status" enum:"pending,running,completed,failed"`
	DocumentID   int64  `json:"document_id,omitempty"`
	Title        string `json:"title,omitempty"`
	Reason       string `json:"reason,omitempty"`
	VectorStatus string `json:"vector_status,omitempty" doc:"completed or failed once the import vectorized the document"`
}

// ImportInput is one import request: what the files share and the files.
type ImportInput struct {
	activities.ImportSpec
	Files       []activities.ImportFile
	Concurrency int // files converted at once
	// UploadPrefix is the folder of the uploaded source files, removed when
	// every file was imported ("" keeps them); after a failure they stay so
	// a retry of the job can try the failed files again.
	UploadPrefix string
}

// importOptions retry a file's activity on transient failures (a worker
// that died, a processor that is down); a file that cannot be converted
// fails at once with a non-retryable error. The heartbeat timeout lets a
// killed worker's files move to another worker within seconds.
var importOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 15 * time.Minute,
	HeartbeatTimeout:    15 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2,
		MaximumInterval: 30 * time.Second, MaximumAttempts: 5},
}

// Import converts each file into a document with bounded concurrency, one
// activity per file, so one bad file fails alone with its reason; the
// documents to vectorize are indexed in groups as they accumulate. Its
// progress (QueryProgress) has the per-file items.
func Import(ctx workflow.Context, in ImportInput) (BatchProgress, error) {
	n := len(in.Files)
	p := BatchProgress{Total: n, Pending: n, FailedIDs: []int64{}, Items: make([]ItemResult, n)}
	for i, f := range in.Files {
		p.Items[i] = ItemResult{Index: i, Name: f.Name, Status: ItemPending}
	}
	p.Step = StepImporting
	if err := ServeProgress(ctx, &p); err != nil {
		return p, err
	}
	limit := max(in.Concurrency, 1)
	inFlight := 0
	wg := workflow.NewWaitGroup(ctx)
	var toIndex []int64
	itemOf := map[int64]int{}
	indexing := 0
	flush := func(ids []int64) {
		indexing++
		wg.Add(1)
		workflow.Go(ctx, func(gctx workflow.Context) {
			defer wg.Done()
			_, failed := indexGroup(gctx, ids)
			bad := map[int64]bool{}
			for _, id := range failed {
				bad[id] = true
			}
			for _, id := range ids {
				it := &p.Items[itemOf[id]]
				it.VectorStatus = "completed"
				if bad[id] {
					it.VectorStatus = "failed"
					p.FailedIDs = append(p.FailedIDs, id)
				}
			}
			indexing--
		})
	}
	for i, f := range in.Files {
		if f.Reject != "" {
			p.Pending--
			p.Failed++
			p.Items[i].Status, p.Items[i].Reason = ItemFailed, f.Reject
			continue
		}
		if err := workflow.Await(ctx, func() bool { return inFlight < limit }); err != nil {
			return p, err // cancelled
		}
		inFlight++
		p.Pending--
		p.Running++
		p.Items[i].Status = ItemRunning
		wg.Add(1)
		workflow.Go(ctx, func(gctx workflow.Context) {
			defer wg.Done()
			var a *activities.Import
			var res activities.ImportFileResult
			err := workflow.ExecuteActivity(workflow.WithActivityOptions(gctx, importOptions), a.ImportFile,
				activities.ImportFileInput{Spec: in.ImportSpec, Index: i, File: f}).Get(gctx, &res)
			inFlight--
			p.Running--
			it := &p.Items[i]
			if err != nil {
				p.Failed++
				it.Status, it.Reason = ItemFailed, RootMessage(err)
				return
			}
			p.Completed++
			it.Status, it.DocumentID, it.Title = ItemCompleted, res.DocumentID, res.Title
			if in.Vectorize {
				itemOf[res.DocumentID] = i
				toIndex = append(toIndex, res.DocumentID)
				if len(toIndex) >= DefaultGroupSize && indexing == 0 {
					ids := toIndex
					toIndex = nil
					flush(ids)
				}
			}
		})
	}
	// Files first; then the documents not yet indexed.
	if err := workflow.Await(ctx, func() bool { return inFlight == 0 }); err != nil {
		return p, err
	}
	if len(toIndex) > 0 {
		flush(toIndex)
		toIndex = nil
	}
	if indexing > 0 {
		p.Step = StepIndexing
	}
	wg.Wait(ctx)
	if in.UploadPrefix != "" && p.Failed == 0 {
		var a *activities.Import
		_ = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, shortOptions), a.RemoveUploads, in.UploadPrefix).Get(ctx, nil)
	}
	p.Done, p.Step = true, StepDone
	return p, nil
}
