package workflows

import (
	"context"
	"errors"
	"testing"

	"github.com/lorekb/lore/activities"
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"
)

// TestPruneRevisionsPagesThroughDocuments: a pass follows the cursor from
// page to page until a page says it was the last, summing what it deleted.
func TestPruneRevisionsPagesThroughDocuments(t *testing.T) {
	env, a := activityEnv[activities.Revisions]()
	var seen []int64
	env.OnActivity(a.PruneRevisions, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.PruneRevisionsPage) (activities.PruneRevisionsResult, error) {
			seen = append(seen, in.After)
			if in.After >= 1000 {
				return activities.PruneRevisionsResult{Deleted: 1}, nil
			}
			return activities.PruneRevisionsResult{Deleted: 2, Next: in.After + 500}, nil
		})
	env.ExecuteWorkflow(PruneRevisions, PruneRevisionsInput{})
	var res PruneRevisionsResult
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 3 || seen[0] != 0 || seen[1] != 500 || seen[2] != 1000 || res.Deleted != 5 {
		t.Fatalf("pages %v, deleted %d", seen, res.Deleted)
	}
}

// TestPruneRevisionsContinuesAsNew: a pass longer than one run's bound goes
// on in a new run from its cursor.
func TestPruneRevisionsContinuesAsNew(t *testing.T) {
	env, a := activityEnv[activities.Revisions]()
	env.OnActivity(a.PruneRevisions, mock.Anything, mock.Anything).Return(
		func(_ context.Context, in activities.PruneRevisionsPage) (activities.PruneRevisionsResult, error) {
			return activities.PruneRevisionsResult{Next: in.After + 1}, nil
		})
	env.ExecuteWorkflow(PruneRevisions, PruneRevisionsInput{After: 10})
	var cont *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); !errors.As(err, &cont) {
		t.Fatalf("want a continue as new, got %v", err)
	}
	var next PruneRevisionsInput
	if err := converter.GetDefaultDataConverter().FromPayloads(cont.Input, &next); err != nil {
		t.Fatal(err)
	}
	if next.After != 10+pruneStepsPerRun {
		t.Fatalf("continues from %d, want %d", next.After, 10+pruneStepsPerRun)
	}
}
