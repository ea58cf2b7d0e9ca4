package workflows

import (
	"time"

	"github.com/lorekb/lore/activities"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// DefaultGroupSize is how many documents one batch activity indexes.
const DefaultGroupSize = 100

// BatchInput lists the documents of a batch vectorization.
type BatchInput struct {
	DocumentIDs []int64
	Concurrency int // group activities in flight
	GroupSize   int
}

// groupOptions retry a group a few times; a group that still fails is split
// into per-document runs, so one bad document cannot fail its neighbours.
var groupOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 15 * time.Minute,
	HeartbeatTimeout:    20 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2,
		MaximumInterval: 30 * time.Second, MaximumAttempts: 3},
}

// BatchVectorize indexes many documents in groups with bounded concurrency,
// continuing past individual failures (each failure is recorded on its
// document).
func BatchVectorize(ctx workflow.Context, in BatchInput) (BatchProgress, error) {
	p := BatchProgress{Step: StepIndexing, Total: len(in.DocumentIDs), Pending: len(in.DocumentIDs), FailedIDs: []int64{}}
	if err := ServeProgress(ctx, &p); err != nil {
		return p, err
	}
	if err := indexIDs(ctx, in.DocumentIDs, in.GroupSize, in.Concurrency, &p); err != nil {
		return p, err // cancelled
	}
	p.Done, p.Step = true, StepDone
	return p, nil
}

// maxFailedIDs bounds the failed ids a progress lists (Failed counts them
// all), so a large job's progress and result stay small.
const maxFailedIDs = 1000

// indexIDs indexes ids in groups of size with at most limit groups in
// flight, keeping p current, and returns once every group is done (or at
// once when the workflow is cancelled).
func indexIDs(ctx workflow.Context, ids []int64, size, limit int, p *Progress) error {
	if size <= 0 {
		size = DefaultGroupSize
	}
	limit = max(limit, 1)
	inFlight := 0
	wg := workflow.NewWaitGroup(ctx)
	for start := 0; start < len(ids); start += size {
		group := ids[start:min(start+size, len(ids))]
		if err := workflow.Await(ctx, func() bool { return inFlight < limit }); err != nil {
			return err
		}
		inFlight++
		p.Pending -= len(group)
		p.Running += len(group)
		wg.Add(1)
		workflow.Go(ctx, func(gctx workflow.Context) {
			defer wg.Done()
			completed, failed := indexGroup(gctx, group)
			inFlight--
			p.Running -= len(group)
			p.Completed += completed
			p.Failed += len(failed)
			p.FailedIDs = append(p.FailedIDs, failed[:min(len(failed), max(maxFailedIDs-len(p.FailedIDs), 0))]...)
		})
	}
	wg.Wait(ctx)
	return nil
}

// indexGroup indexes a group with one activity, or document by document when
// the group keeps failing. It returns how many completed and which failed.
func indexGroup(ctx workflow.Context, ids []int64) (int, []int64) {
	var a *activities.Vectorize
	var res activities.GroupResult
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, groupOptions), a.IndexDocuments,
		activities.DocGroup{DocumentIDs: ids}).Get(ctx, &res)
	if err == nil {
		return len(res.Completed) + len(res.Missing), nil
	}
	completed := 0
	var failed []int64
	for _, id := range ids {
		if _, err := indexOne(ctx, id); err != nil {
			failed = append(failed, id)
		} else {
			completed++
		}
	}
	return completed, failed
}
