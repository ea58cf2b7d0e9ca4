package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/lorekb/lore/activities"
)

// SearchRetrieve runs the retrieval pipeline for an agent's search (the MCP
// search tool): the retrieval test's activity, as a local activity like the
// chat's own search, so that a call costs the start and the completion of
// one workflow task and no activity round trips. Like Retrieve it is a
// workflow because only workers touch the vector store.
func SearchRetrieve(ctx workflow.Context, in activities.RetrieveInput) (activities.RetrieveOutput, error) {
	var a *activities.Chat
	var out activities.RetrieveOutput
	err := workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, searchOptions), a.Retrieve, in).Get(ctx, &out)
	return out, err
}
