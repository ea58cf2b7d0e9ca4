package telemetry

import (
	"context"
	"errors"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func greet(ctx context.Context, name string) (string, error) {
	switch name {
	case "":
		return "", temporal.NewNonRetryableApplicationError("empty name", "InvalidInput", nil)
	case "panic":
		panic("greet: boom")
	}
	return "hello " + name, nil
}

func greetWorkflow(ctx workflow.Context, name string) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	var out string
	err := workflow.ExecuteActivity(ctx, "Greet", name).Get(ctx, &out)
	return out, err
}

func restartWorkflow(ctx workflow.Context, n int) error {
	if n > 0 {
		return workflow.NewContinueAsNewError(ctx, "Restart", n-1)
	}
	return nil
}

func withMetrics(m *Metrics) worker.Options {
	return worker.Options{Interceptors: []interceptor.WorkerInterceptor{m.TemporalInterceptor()}}
}

func TestActivityInterceptorCountsOutcomes(t *testing.T) {
	m := New()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.SetWorkerOptions(withMetrics(m))
	env.RegisterActivityWithOptions(greet, activity.RegisterOptions{Name: "Greet"})

	v, err := env.ExecuteActivity("Greet", "ada")
	if err != nil {
		t.Fatal(err)
	}
	var got string
	if err := v.Get(&got); err != nil || got != "hello ada" {
		t.Fatalf("result %q, %v", got, err)
	}
	if _, err := env.ExecuteActivity("Greet", ""); err == nil {
		t.Fatal("want an error for an empty name")
	}
	if _, err := env.ExecuteActivity("Greet", "panic"); err == nil {
		t.Fatal("want an error from a panicking activity")
	}

	if v := counter(t, m, "lore_activity_total", map[string]string{"activity": "Greet", "outcome": "success"}); v != 1 {
		t.Errorf("success = %v, want 1", v)
	}
	if v := counter(t, m, "lore_activity_total", map[string]string{"activity": "Greet", "outcome": "failure"}); v != 2 {
		t.Errorf("failure = %v, want 2 (error + panic)", v)
	}
	if n, _ := histCount(t, m, "lore_activity_duration_seconds", map[string]string{"activity": "Greet"}); n != 3 {
		t.Errorf("duration samples = %d, want 3", n)
	}
}

func TestWorkflowInterceptorCountsCloses(t *testing.T) {
	m := New()
	var s testsuite.WorkflowTestSuite

	run := func(wf any, name string, args ...any) error {
		env := s.NewTestWorkflowEnvironment()
		env.SetWorkerOptions(withMetrics(m))
		env.RegisterActivityWithOptions(greet, activity.RegisterOptions{Name: "Greet"})
		env.RegisterWorkflowWithOptions(wf, workflow.RegisterOptions{Name: name})
		env.ExecuteWorkflow(name, args...)
		if !env.IsWorkflowCompleted() {
			t.Fatalf("%s did not complete", name)
		}
		return env.GetWorkflowError()
	}
	if err := run(greetWorkflow, "Greeting", "ada"); err != nil {
		t.Fatal(err)
	}
	if err := run(greetWorkflow, "Greeting", ""); err == nil {
		t.Fatal("want the workflow to fail when its activity fails")
	}
	if err := run(restartWorkflow, "Restart", 1); !workflow.IsContinueAsNewError(err) {
		t.Fatalf("want continue-as-new, got %v", err)
	}

	for outcome, want := range map[string]float64{"completed": 1, "failed": 1} {
		if v := counter(t, m, "lore_workflow_total", map[string]string{"workflow": "Greeting", "outcome": outcome}); v != want {
			t.Errorf("Greeting %s = %v, want %v", outcome, v, want)
		}
	}
	if v := counter(t, m, "lore_workflow_total", map[string]string{"workflow": "Restart", "outcome": "continued_as_new"}); v != 1 {
		t.Errorf("Restart continued_as_new = %v, want 1", v)
	}
	if n, _ := histCount(t, m, "lore_workflow_duration_seconds", map[string]string{"workflow": "Greeting"}); n != 2 {
		t.Errorf("workflow duration samples = %d, want 2", n)
	}
	// The activities inside the workflows went through the same interceptor.
	if v := counter(t, m, "lore_activity_total", map[string]string{"activity": "Greet", "outcome": "success"}); v != 1 {
		t.Errorf("activity success = %v, want 1", v)
	}
	if v := counter(t, m, "lore_activity_total", map[string]string{"activity": "Greet", "outcome": "failure"}); v != 1 {
		t.Errorf("activity failure = %v, want 1", v)
	}
}

// TestWorkflowReplayNotCounted replays the history of an already completed
// run (what a worker does after a restart or a cache eviction): the workflow
// code runs again, through the interceptor, but must not be counted again.
func TestWorkflowReplayNotCounted(t *testing.T) {
	m := New()
	ran := 0
	noop := func(ctx workflow.Context) error { ran++; return nil }

	rep, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{
		Interceptors: []interceptor.WorkerInterceptor{m.TemporalInterceptor()},
	})
	if err != nil {
		t.Fatal(err)
	}
	rep.RegisterWorkflowWithOptions(noop, workflow.RegisterOptions{Name: "Noop"})
	if err := rep.ReplayWorkflowHistory(nil, completedHistory("Noop")); err != nil {
		t.Fatal(err)
	}
	if ran != 1 {
		t.Fatalf("workflow ran %d times during replay, want 1", ran)
	}
	if s := sample(t, m, "lore_workflow_total", map[string]string{"workflow": "Noop", "outcome": "completed"}); s != nil {
		t.Errorf("replayed run was counted: %v", s.GetCounter().GetValue())
	}

	// The same workflow executed live is counted, so the check above is not
	// passing merely because the interceptor never ran.
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(withMetrics(m))
	env.RegisterWorkflowWithOptions(noop, workflow.RegisterOptions{Name: "Noop"})
	env.ExecuteWorkflow("Noop")
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if v := counter(t, m, "lore_workflow_total", map[string]string{"workflow": "Noop", "outcome": "completed"}); v != 1 {
		t.Errorf("live run counted %v times, want 1", v)
	}
}

// completedHistory is the event history of a run of a workflow that takes no
// input and returns nil in its first workflow task.
func completedHistory(workflowType string) *historypb.History {
	now := time.Now().Add(-time.Minute)
	ts := func(i int) *timestamppb.Timestamp {
		return timestamppb.New(now.Add(time.Duration(i) * time.Millisecond))
	}
	return &historypb.History{Events: []*historypb.HistoryEvent{
		{EventId: 1, EventTime: ts(1), EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
			Attributes: &historypb.HistoryEvent_WorkflowExecutionStartedEventAttributes{WorkflowExecutionStartedEventAttributes: &historypb.WorkflowExecutionStartedEventAttributes{
				WorkflowType: &commonpb.WorkflowType{Name: workflowType},
				TaskQueue:    &taskqueuepb.TaskQueue{Name: "replay"},
			}}},
		{EventId: 2, EventTime: ts(2), EventType: enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
			Attributes: &historypb.HistoryEvent_WorkflowTaskScheduledEventAttributes{WorkflowTaskScheduledEventAttributes: &historypb.WorkflowTaskScheduledEventAttributes{
				TaskQueue: &taskqueuepb.TaskQueue{Name: "replay"},
			}}},
		{EventId: 3, EventTime: ts(3), EventType: enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED,
			Attributes: &historypb.HistoryEvent_WorkflowTaskStartedEventAttributes{WorkflowTaskStartedEventAttributes: &historypb.WorkflowTaskStartedEventAttributes{
				ScheduledEventId: 2,
			}}},
		{EventId: 4, EventTime: ts(4), EventType: enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
			Attributes: &historypb.HistoryEvent_WorkflowTaskCompletedEventAttributes{WorkflowTaskCompletedEventAttributes: &historypb.WorkflowTaskCompletedEventAttributes{
				ScheduledEventId: 2, StartedEventId: 3,
			}}},
		{EventId: 5, EventTime: ts(5), EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
			Attributes: &historypb.HistoryEvent_WorkflowExecutionCompletedEventAttributes{WorkflowExecutionCompletedEventAttributes: &historypb.WorkflowExecutionCompletedEventAttributes{
				WorkflowTaskCompletedEventId: 4,
			}}},
	}}
}

func TestOutcomeClassification(t *testing.T) {
	if got := activityOutcome(activity.ErrResultPending); got != OutcomePending {
		t.Errorf("pending: %s", got)
	}
	if got := activityOutcome(temporal.NewCanceledError()); got != OutcomeCanceled {
		t.Errorf("canceled: %s", got)
	}
	if got := activityOutcome(context.Canceled); got != OutcomeCanceled {
		t.Errorf("context canceled: %s", got)
	}
	if got := activityOutcome(errors.New("x")); got != OutcomeFailure {
		t.Errorf("plain error: %s", got)
	}
	if got := workflowOutcome(temporal.NewCanceledError()); got != OutcomeCanceled {
		t.Errorf("workflow canceled: %s", got)
	}
}
