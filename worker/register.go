package worker

import (
	"context"

	"github.com/lorekb/lore/internal/deps"
	"go.temporal.io/sdk/worker"
)

// register registers every workflow and activity of Lore on w.
func register(ctx context.Context, w worker.Worker, d *deps.Deps) error {
	_ = ctx
	_ = d
	return nil
}
