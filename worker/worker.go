// Package worker builds the activity structs once, registers every workflow
// and activity, and runs the Temporal worker.
package worker

import (
	"context"
	"sync"
	"time"

	"github.com/lorekb/lore/internal/deps"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"
)

// Worker is a running Temporal worker of this process.
type Worker struct {
	d    *deps.Deps
	w    worker.Worker
	done chan struct{}
	once sync.Once
}

// New builds the activities from the process dependencies and registers
// everything on the configured task queue.
func New(ctx context.Context, d *deps.Deps) (*Worker, error) {
	opts := Options()
	opts.Interceptors = []interceptor.WorkerInterceptor{d.Metrics.TemporalInterceptor()}
	w := worker.New(d.Temporal, d.Cfg.TemporalQueue, opts)
	if err := register(ctx, w, d); err != nil {
		return nil, err
	}
	return &Worker{d: d, w: w, done: make(chan struct{})}, nil
}

// Options are the worker options of Lore's worker, less its interceptors
// (the bench's bare chat turn runs with the same).
func Options() worker.Options {
	return worker.Options{
		// Many short chat turns at once: enough pollers that tasks do not
		// queue behind the default two.
		MaxConcurrentWorkflowTaskPollers: 8,
		MaxConcurrentActivityTaskPollers: 8,
		// The SDK fails a workflow task whose code has not yielded for
		// this long (default 1 s). On a CPU-starved machine a chat run is
		// slow, not stuck, and a failed task reruns the whole turn (its
		// model calls are local activities of that one task).
		DeadlockDetectionTimeout: 10 * time.Second,
	}
}

// Run starts polling, asks for the re-index of sites whose index is of
// another format (ReindexOutdatedSites), creates or updates the revision
// pruning schedule (EnsurePruneSchedule), and blocks until Stop.
func (w *Worker) Run() error {
	if err := w.w.Start(); err != nil {
		return err
	}
	go w.reindexOutdated()
	go w.ensurePruneSchedule()
	<-w.done
	return nil
}

// reindexOutdated runs ReindexOutdatedSites once, logging what it started;
// a failure is logged and retried by the next worker start.
func (w *Worker) reindexOutdated() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	go func() {
		select {
		case <-w.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	ids, err := ReindexOutdatedSites(ctx, w.d)
	if err != nil {
		w.d.Log.Error("re-index of sites with an older index format not started", "err", err, "started", ids)
		return
	}
	if len(ids) > 0 {
		w.d.Log.Info("re-indexing sites with an older index format", "index_format", w.d.IndexFormat(), "jobs", ids)
	}
}

// Stop stops polling and waits for running activities to finish.
func (w *Worker) Stop() {
	w.once.Do(func() {
		w.w.Stop()
		close(w.done)
	})
}
