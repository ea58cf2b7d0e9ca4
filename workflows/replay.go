package workflows

import (
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// RegisterChatReplay registers the chat run under its name on a workflow
// replayer, the way a worker registers it (without a hub: replay publishes
// nothing), for the replay tests of recorded chat histories.
func RegisterChatReplay(r worker.WorkflowReplayer) {
	r.RegisterWorkflowWithOptions(ChatWorkflow{}.Run, workflow.RegisterOptions{Name: ChatWorkflowName})
}
