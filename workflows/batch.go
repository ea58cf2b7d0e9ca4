package workflows

import (
	"go.temporal.io/sdk/workflow"
)

// QueryProgress is the query name of a batch job's progress.
const QueryProgress = "progress"

// BatchInput lists the documents of a batch vectorization.
type BatchInput struct {
	DocumentIDs []int64
	Concurrency int
}

// BatchProgress is the live state of a batch, readable by QueryProgress.
type BatchProgress struct {
	Total     int     `json:"total"`
	Completed int     `json:"completed"`
	Failed    int     `json:"failed"`
	Running   int     `json:"running"`
	Pending   int     `json:"pending"`
	FailedIDs []int64 `json:"failed_ids"`
	Done      bool    `json:"done"`
}

// BatchVectorize indexes many documents with bounded concurrency, continuing
// past individual failures (each failure is recorded on its document).
func BatchVectorize(ctx workflow.Context, in BatchInput) (BatchProgress, error) {
	p := BatchProgress{Total: len(in.DocumentIDs), Pending: len(in.DocumentIDs), FailedIDs: []int64{}}
	if err := workflow.SetQueryHandler(ctx, QueryProgress, func() (BatchProgress, error) { return p, nil }); err != nil {
		return p, err
	}
	limit := max(in.Concurrency, 1)
	wg := workflow.NewWaitGroup(ctx)
	for _, id := range in.DocumentIDs {
		if err := workflow.Await(ctx, func() bool { return p.Running < limit }); err != nil {
			return p, err // cancelled
		}
		p.Pending--
		p.Running++
		wg.Add(1)
		workflow.Go(ctx, func(gctx workflow.Context) {
			defer wg.Done()
			_, err := indexOne(gctx, id)
			p.Running--
			if err != nil {
				p.Failed++
				p.FailedIDs = append(p.FailedIDs, id)
			} else {
				p.Completed++
			}
		})
	}
	wg.Wait(ctx)
	p.Done = true
	return p, nil
}
