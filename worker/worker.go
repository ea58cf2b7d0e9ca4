// Package worker builds the activity structs once, registers every workflow
// and activity, and runs the Temporal worker.
package worker

import (
	"context"
	"sync"

	"github.com/lorekb/lore/internal/deps"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"
)

// Worker is a running Temporal worker of this process.
type Worker struct {
	w    worker.Worker
	done chan struct{}
	once sync.Once
}

// New builds the activities from the process dependencies and registers
// everything on the configured task queue.
func New(ctx context.Context, d *deps.Deps) (*Worker, error) {
	w := worker.New(d.Temporal, d.Cfg.TemporalQueue, worker.Options{
		Interceptors: []interceptor.WorkerInterceptor{d.Metrics.TemporalInterceptor()},
		// Many short chat turns at once: enough pollers that tasks do not
		// queue behind the default two.
		MaxConcurrentWorkflowTaskPollers: 8,
		MaxConcurrentActivityTaskPollers: 8,
	})
	if err := register(ctx, w, d); err != nil {
		return nil, err
	}
	return &Worker{w: w, done: make(chan struct{})}, nil
}

// Run starts polling and blocks until Stop.
func (w *Worker) Run() error {
	if err := w.w.Start(); err != nil {
		return err
	}
	<-w.done
	return nil
}

// Stop stops polling and waits for running activities to finish.
func (w *Worker) Stop() {
	w.once.Do(func() {
		w.w.Stop()
		close(w.done)
	})
}
