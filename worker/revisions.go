package worker

import (
	"context"
	"errors"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/workflows"
)

// EnsurePruneSchedule creates the Temporal Schedule that starts the
// revision pruning pass (workflows.PruneRevisions) every
// LORE_REVISIONS_PRUNE_EVERY, or brings an existing one to this
// configuration: every worker start calls it, and any number of workers
// leave one schedule. A pass still running when the next is due is not
// doubled (overlap: skip).
func EnsurePruneSchedule(ctx context.Context, d *deps.Deps) error {
	if d.Temporal == nil {
		return nil
	}
	id := workflows.PruneRevisionsID(d.Cfg.TemporalQueue)
	spec := client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{{Every: d.Cfg.RevisionsPruneEvery}}}
	action := &client.ScheduleWorkflowAction{ID: id, Workflow: workflows.PruneRevisions,
		Args: []any{workflows.PruneRevisionsInput{}}, TaskQueue: d.Cfg.TemporalQueue,
		WorkflowRunTimeout: time.Hour}
	sc := d.Temporal.ScheduleClient()
	_, err := sc.Create(ctx, client.ScheduleOptions{ID: id, Spec: spec, Action: action,
		Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP})
	if !errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		return err
	}
	return workflows.UpdateSchedule(ctx, sc, id, spec, action)
}

// ensurePruneSchedule runs EnsurePruneSchedule once; a failure is logged
// and retried by the next worker start (revisions are then kept longer,
// never lost).
func (w *Worker) ensurePruneSchedule() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := EnsurePruneSchedule(ctx, w.d); err != nil {
		w.d.Log.Error("revision pruning schedule not created", "err", err)
	}
}
