package telemetry

import (
	"context"
	"errors"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/lorekb/lore/internal/gctune"
)

// TemporalInterceptor returns a worker interceptor that records activity
// outcomes and latency (lore_activity_total, lore_activity_duration_seconds)
// and workflow closes (lore_workflow_total, lore_workflow_duration_seconds).
// It also makes the loggers of workflows and activities add the request_id
// of the request that started the workflow (see RequestIDPropagator), logs
// every workflow close (info; error with the reason when it failed) and every
// failed activity attempt (warn), each with the workflow id, which is the job
// id.
// Add it to worker.Options.Interceptors. Workflow metrics are written only
// when the workflow is not replaying, so a worker restart or a cache eviction
// that replays history never counts a run twice.
func (m *Metrics) TemporalInterceptor() interceptor.WorkerInterceptor {
	if m == nil {
		return &interceptor.WorkerInterceptorBase{}
	}
	return &workerInterceptor{m: m}
}

type workerInterceptor struct {
	interceptor.WorkerInterceptorBase
	m *Metrics
}

func (w *workerInterceptor) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &activityInbound{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, m: w.m}
}

func (w *workerInterceptor) InterceptWorkflow(ctx workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &workflowInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, m: w.m}
}

type activityInbound struct {
	interceptor.ActivityInboundInterceptorBase
	m *Metrics
}

func (a *activityInbound) Init(outbound interceptor.ActivityOutboundInterceptor) error {
	return a.Next.Init(&activityOutbound{ActivityOutboundInterceptorBase: interceptor.ActivityOutboundInterceptorBase{Next: outbound}})
}

type activityOutbound struct {
	interceptor.ActivityOutboundInterceptorBase
}

func (a *activityOutbound) GetLogger(ctx context.Context) log.Logger {
	return withRequestID(a.Next.GetLogger(ctx), RequestID(ctx))
}

// withRequestID tags a logger with the request's id, when there is one.
func withRequestID(l log.Logger, id string) log.Logger {
	if id != "" {
		return log.With(l, "request_id", id)
	}
	return l
}

func (a *activityInbound) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	gctune.PregrowStack() // the SDK runs each (local) activity on a fresh goroutine
	name := activity.GetInfo(ctx).ActivityType.Name
	start := time.Now()
	// A panic skips the assignment below and is recorded as a failure; it is
	// not recovered here, so the SDK still turns it into a panic error.
	outcome := OutcomeFailure
	defer func() {
		a.m.activityTotal.WithLabelValues(name, outcome).Inc()
		a.m.activityDuration.WithLabelValues(name).Observe(time.Since(start).Seconds())
	}()
	res, err := a.Next.ExecuteActivity(ctx, in)
	outcome = activityOutcome(err)
	if outcome == OutcomeFailure {
		info := activity.GetInfo(ctx)
		activity.GetLogger(ctx).Warn("activity attempt failed", "job_id", info.WorkflowExecution.ID,
			"attempt", info.Attempt, "err", err)
	}
	return res, err
}

func activityOutcome(err error) string {
	switch {
	case err == nil:
		return OutcomeSuccess
	case errors.Is(err, activity.ErrResultPending):
		return OutcomePending
	case temporal.IsCanceledError(err), errors.Is(err, context.Canceled):
		return OutcomeCanceled
	}
	return OutcomeFailure
}

type workflowInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	m *Metrics
}

func (w *workflowInbound) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	return w.Next.Init(&workflowOutbound{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: outbound}})
}

type workflowOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
}

func (w *workflowOutbound) GetLogger(ctx workflow.Context) log.Logger {
	return withRequestID(w.Next.GetLogger(ctx), WorkflowRequestID(ctx))
}

func (w *workflowInbound) ExecuteWorkflow(ctx workflow.Context, in *interceptor.ExecuteWorkflowInput) (any, error) {
	gctune.PregrowStack() // a workflow's root coroutine is a fresh goroutine too
	res, err := w.Next.ExecuteWorkflow(ctx, in)
	// A panic never gets here: the SDK fails the workflow task and retries it,
	// which is not a workflow outcome.
	if !workflow.IsReplaying(ctx) {
		info := workflow.GetInfo(ctx)
		name := info.WorkflowType.Name
		outcome := workflowOutcome(err)
		w.m.workflowTotal.WithLabelValues(name, outcome).Inc()
		d := workflow.Now(ctx).Sub(info.WorkflowStartTime)
		if d >= 0 {
			w.m.workflowDuration.WithLabelValues(name).Observe(d.Seconds())
		}
		// The SDK's workflow logger skips replay, so each close is logged once.
		l := workflow.GetLogger(ctx)
		if outcome == OutcomeFailed {
			l.Error("workflow failed", "job_id", info.WorkflowExecution.ID, "workflow", name, "ms", d.Milliseconds(), "err", err)
		} else {
			l.Info("workflow closed", "job_id", info.WorkflowExecution.ID, "workflow", name, "outcome", outcome, "ms", d.Milliseconds())
		}
	}
	return res, err
}

func workflowOutcome(err error) string {
	switch {
	case err == nil:
		return OutcomeCompleted
	case workflow.IsContinueAsNewError(err):
		return OutcomeContinuedAsNew
	case temporal.IsCanceledError(err):
		return OutcomeCanceled
	}
	return OutcomeFailed
}
