package workflows

import "go.temporal.io/sdk/workflow"

// indexQueue indexes the documents a run writes, in groups of
// DefaultGroupSize in the background while the run goes on (one group at a
// time), and the rest at the end (drain). Import and sync share it.
type indexQueue struct {
	wg       workflow.WaitGroup // also the run's other background work
	pending  []int64
	indexing int
	// indexed records a group's outcome, in workflow code.
	indexed func(ids, failed []int64)
}

// add queues documents, starting a group when enough wait and none runs.
func (q *indexQueue) add(ctx workflow.Context, ids ...int64) {
	q.pending = append(q.pending, ids...)
	if len(q.pending) >= DefaultGroupSize && q.indexing == 0 {
		group := q.pending
		q.pending = nil
		q.flush(ctx, group)
	}
}

// flush indexes a group in the background.
func (q *indexQueue) flush(ctx workflow.Context, ids []int64) {
	q.indexing++
	q.wg.Add(1)
	workflow.Go(ctx, func(gctx workflow.Context) {
		defer q.wg.Done()
		_, failed := indexGroup(gctx, ids)
		q.indexed(ids, failed)
		q.indexing--
	})
}

// drain indexes what is still queued, shows StepIndexing in step while
// groups run, and waits for all background work.
func (q *indexQueue) drain(ctx workflow.Context, step *string) {
	if len(q.pending) > 0 {
		q.flush(ctx, q.pending)
		q.pending = nil
	}
	if q.indexing > 0 {
		*step = StepIndexing
	}
	q.wg.Wait(ctx)
}
