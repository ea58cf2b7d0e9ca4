package activities

import (
	"context"
	"errors"
	"log/slog"

	"github.com/lorekb/lore/internal/llm"
	"github.com/lorekb/lore/internal/redact"
	"go.temporal.io/sdk/activity"
)

// Notices of upstream failures, as chat users see them (with an error id).
const (
	modelFailedNotice  = "The model service failed"
	searchFailedNotice = "The search service failed"
)

// upstreamFailure stands in for an error of an upstream service (a
// provider's message can carry its URL with credentials or part of a key):
// the detail goes to the operators' log, redacted, under a new error id, and
// the run (its notice, the stored answer, Temporal's history) only ever sees
// the generic notice with that id. The permanent mark (llm.ErrPermanent)
// survives, so retries are decided as before.
func (a *Chat) upstreamFailure(ctx context.Context, what, notice string, err error) error {
	var permanent error
	if errors.Is(err, llm.ErrPermanent) {
		permanent = llm.ErrPermanent
	}
	f := redact.NewFailure(notice, permanent)
	level := slog.LevelError
	if ctx.Err() != nil {
		level = slog.LevelInfo // stopped: client gone or stream deadline
	}
	attrs := []any{"error_id", f.ID, "err", redact.Text(err.Error())}
	if activity.IsActivity(ctx) {
		info := activity.GetInfo(ctx)
		attrs = append(attrs, "workflow_id", info.WorkflowExecution.ID, "attempt", info.Attempt)
	}
	a.Log.Log(context.WithoutCancel(ctx), level, what+" failed", attrs...)
	return f
}
