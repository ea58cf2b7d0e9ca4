package workflows

import (
	"context"
	"errors"
	"testing"

	"github.com/lorekb/lore/activities"
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// reindexEnv runs Reindex over documents 1..n with mocked activities and
// returns the indexed ids in order.
func reindexEnv(t *testing.T, n int, in ReindexInput) (*testsuite.TestWorkflowEnvironment, *[]int64) {
	env, a := activityEnv[activities.Vectorize]()
	env.OnActivity(a.CountReindex, mock.Anything, mock.Anything).Return(n, nil)
	env.OnActivity(a.ReindexPage, mock.Anything, mock.Anything).Return(
		func(_ context.Context, p activities.ReindexPageInput) ([]int64, error) {
			var ids []int64
			for id := p.AfterID + 1; id <= int64(n) && len(ids) < p.Limit; id++ {
				ids = append(ids, id)
			}
			return ids, nil
		})
	var indexed []int64
	env.OnActivity(a.IndexDocuments, mock.Anything, mock.Anything).Return(
		func(_ context.Context, g activities.DocGroup) (activities.GroupResult, error) {
			indexed = append(indexed, g.DocumentIDs...)
			for _, id := range g.DocumentIDs {
				if id == 42 {
					return activities.GroupResult{}, errors.New("group with a bad document")
				}
			}
			return activities.GroupResult{Completed: g.DocumentIDs}, nil
		})
	env.OnActivity(a.IndexDocument, mock.Anything, mock.Anything).Return(
		func(_ context.Context, r activities.DocRef) (activities.IndexResult, error) {
			if r.DocumentID == 42 {
				return activities.IndexResult{}, errors.New("bad document")
			}
			return activities.IndexResult{Chunks: 1}, nil
		})
	env.OnActivity(a.MarkFailed, mock.Anything, mock.Anything, mock.Anything).Return(nil)
	return env, &indexed
}

func TestReindexPagesThroughEveryDocument(t *testing.T) {
	env, indexed := reindexEnv(t, 250, ReindexInput{})
	env.ExecuteWorkflow(Reindex, ReindexInput{TenantID: 1, SiteID: 3, PageSize: 100, GroupSize: 20, Concurrency: 2})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var p Progress
	if err := env.GetWorkflowResult(&p); err != nil {
		t.Fatal(err)
	}
	if p.Total != 250 || p.Completed != 249 || p.Failed != 1 || len(p.FailedIDs) != 1 || p.FailedIDs[0] != 42 ||
		!p.Done || p.Pending != 0 || p.Running != 0 || p.Counts["pages"] != 3 {
		t.Fatalf("progress %+v", p)
	}
	seen := map[int64]bool{}
	for _, id := range *indexed {
		seen[id] = true
	}
	if len(seen) != 250 {
		t.Fatalf("%d distinct documents indexed", len(seen))
	}
}

func TestReindexContinuesAsNewWithItsPosition(t *testing.T) {
	env, _ := reindexEnv(t, 250, ReindexInput{})
	env.ExecuteWorkflow(Reindex, ReindexInput{TenantID: 1, PageSize: 100, GroupSize: 50, Concurrency: 1, PagesPerRun: 1})
	err := env.GetWorkflowError()
	var can *workflow.ContinueAsNewError
	if !errors.As(err, &can) {
		t.Fatalf("want continue-as-new after the first page, got %v", err)
	}
	var next ReindexInput
	if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &next); err != nil {
		t.Fatal(err)
	}
	if next.AfterID != 100 || next.Progress == nil || next.Progress.Completed+next.Progress.Failed != 100 || next.Progress.Total != 250 ||
		next.Progress.Counts["runs"] != 2 || next.TenantID != 1 {
		t.Fatalf("next run %+v progress %+v", next, next.Progress)
	}
	// The next run picks up after document 100 and finishes the job.
	env2, indexed := reindexEnv(t, 250, ReindexInput{})
	next.PagesPerRun = 0
	env2.ExecuteWorkflow(Reindex, next)
	var p Progress
	if err := env2.GetWorkflowResult(&p); err != nil {
		t.Fatal(err)
	}
	if (*indexed)[0] != 101 || p.Completed+p.Failed != 250 || !p.Done {
		t.Fatalf("second run started at %d, progress %+v", (*indexed)[0], p)
	}
}
