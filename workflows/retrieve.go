package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/lorekb/lore/activities"
)

// inspectOptions run an admin's interactive look into the vector store: the
// admin waits, so a few quick retries, then the error.
var inspectOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 30 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval: 200 * time.Millisecond, BackoffCoefficient: 2, MaximumInterval: 2 * time.Second, MaximumAttempts: 3,
	},
}

// Retrieve runs the retrieval pipeline for an admin's retrieval test. It is
// a workflow (not a call from the handler) because only workers touch the
// vector store.
func Retrieve(ctx workflow.Context, in activities.RetrieveInput) (activities.RetrieveOutput, error) {
	var a *activities.Chat
	var out activities.RetrieveOutput
	err := workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, inspectOptions), a.Retrieve, in).Get(ctx, &out)
	return out, err
}
