package workflows

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lorekb/lore/activities"
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
)

// activityEnv is a workflow test environment with the activities of A
// registered; a is the nil *A whose methods name them in OnActivity.
func activityEnv[A any]() (env *testsuite.TestWorkflowEnvironment, a *A) {
	var s testsuite.WorkflowTestSuite
	env = s.NewTestWorkflowEnvironment()
	env.RegisterActivity(a)
	return env, a
}

func TestVectorizeCoalescesRequestsDuringARun(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	var a *activities.Vectorize
	calls := 0
	env.RegisterActivity(a)
	env.OnActivity(a.IndexDocument, mock.Anything, activities.DocRef{DocumentID: 7}).Return(
		func(ctx context.Context, in activities.DocRef) (activities.IndexResult, error) {
			calls++
			if calls == 1 {
				// Three requests arrive while the first pass runs: they
				// coalesce into one more pass.
				for i := 0; i < 3; i++ {
					env.SignalWorkflow(SignalRevectorize, nil)
				}
			}
			return activities.IndexResult{Chunks: 3, Version: int64(calls)}, nil
		})
	env.ExecuteWorkflow(VectorizeDocument, VectorizeInput{DocumentID: 7})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Fatalf("IndexDocument ran %d times, want 2 (first pass + one coalesced pass)", calls)
	}
}

func TestVectorizeSingleRequestRunsOnce(t *testing.T) {
	env, a := activityEnv[activities.Vectorize]()
	env.OnActivity(a.IndexDocument, mock.Anything, mock.Anything).Return(activities.IndexResult{Chunks: 1}, nil).Once()
	env.ExecuteWorkflow(VectorizeDocument, VectorizeInput{DocumentID: 1})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	env.AssertExpectations(t)
}

func TestVectorizeFailureIsRecordedOnTheDocument(t *testing.T) {
	env, a := activityEnv[activities.Vectorize]()
	env.OnActivity(a.IndexDocument, mock.Anything, mock.Anything).Return(activities.IndexResult{},
		temporal.NewNonRetryableApplicationError("embedding endpoint said 401", "Permanent", nil))
	var reason string
	env.OnActivity(a.MarkFailed, mock.Anything, activities.DocRef{DocumentID: 9}, mock.Anything).Return(
		func(ctx context.Context, in activities.DocRef, r string) error { reason = r; return nil })
	env.ExecuteWorkflow(VectorizeDocument, VectorizeInput{DocumentID: 9})
	if env.GetWorkflowError() == nil {
		t.Fatal("workflow should fail")
	}
	if reason != "embedding endpoint said 401" {
		t.Fatalf("recorded reason %q", reason)
	}
}

func TestBatchContinuesPastFailuresWithBoundedConcurrency(t *testing.T) {
	env, a := activityEnv[activities.Vectorize]()
	var mu sync.Mutex
	running, peak, groups, singles := 0, 0, 0, 0
	bad := func(id int64) bool { return id == 5 || id == 10 } // both in the first group
	env.OnActivity(a.IndexDocuments, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.DocGroup) (activities.GroupResult, error) {
			mu.Lock()
			running++
			groups++
			peak = max(peak, running)
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			mu.Lock()
			running--
			mu.Unlock()
			for _, id := range in.DocumentIDs {
				if bad(id) {
					return activities.GroupResult{}, temporal.NewNonRetryableApplicationError("bad doc", "Permanent", nil)
				}
			}
			return activities.GroupResult{Completed: in.DocumentIDs, Chunks: 2 * len(in.DocumentIDs)}, nil
		})
	// A failing group is split into per-document runs.
	env.OnActivity(a.IndexDocument, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.DocRef) (activities.IndexResult, error) {
			mu.Lock()
			singles++
			mu.Unlock()
			if bad(in.DocumentID) {
				return activities.IndexResult{}, temporal.NewNonRetryableApplicationError("bad doc", "Permanent", nil)
			}
			return activities.IndexResult{Chunks: 2}, nil
		})
	env.OnActivity(a.MarkFailed, mock.Anything, mock.Anything, mock.Anything).Return(nil)
	ids := make([]int64, 42)
	for i := range ids {
		ids[i] = int64(i + 1)
	}
	// The mid-run query runs when the first activity completes (on the test
	// environment's main loop, before the workflow goes on), so it always
	// happens mid-run. A delayed callback fired only when no activity was
	// running, which under load could be never before the workflow ended.
	var (
		mid     BatchProgress
		midErr  = errors.New("no activity completed")
		queried bool
	)
	env.SetOnActivityCompletedListener(func(*activity.Info, converter.EncodedValue, error) {
		if queried {
			return
		}
		queried = true
		v, err := env.QueryWorkflow(QueryProgress)
		if midErr = err; err == nil {
			midErr = v.Get(&mid)
		}
	})
	env.ExecuteWorkflow(BatchVectorize, BatchInput{DocumentIDs: ids, Concurrency: 2, GroupSize: 10})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var p BatchProgress
	if err := env.GetWorkflowResult(&p); err != nil {
		t.Fatal(err)
	}
	if p.Total != 42 || p.Completed != 40 || p.Failed != 2 || p.Running != 0 || p.Pending != 0 || !p.Done {
		t.Fatalf("progress %+v", p)
	}
	if groups != 5 || singles != 10 {
		t.Fatalf("%d group activities, %d single-document fallbacks (want 5 and 10)", groups, singles)
	}
	if peak > 2 {
		t.Fatalf("peak concurrency %d > 2", peak)
	}
	if midErr != nil || mid.Total != 42 || mid.Done {
		t.Fatalf("mid-run query: %+v (%v)", mid, midErr)
	}
}

var _ = errors.New
