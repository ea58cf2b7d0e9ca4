package worker

import (
	"context"

	"github.com/lorekb/lore/activities"
	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/workflows"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// register registers every workflow and activity of Lore on w.
func register(ctx context.Context, w worker.Worker, d *deps.Deps) error {
	_ = ctx
	w.RegisterWorkflow(workflows.VectorizeDocument)
	w.RegisterWorkflow(workflows.BatchVectorize)
	w.RegisterWorkflow(workflows.RemoveDocumentVectors)
	w.RegisterWorkflow(workflows.DeleteSite)
	w.RegisterWorkflow(workflows.Reindex)
	// The chat run publishes its events to this process's hub as well.
	w.RegisterWorkflowWithOptions(workflows.ChatWorkflow{Hub: d.Hub}.Run,
		workflow.RegisterOptions{Name: workflows.ChatWorkflowName})
	w.RegisterWorkflow(workflows.KefuSync)
	w.RegisterWorkflow(workflows.Import)
	w.RegisterActivity(activities.NewImport(d))
	w.RegisterWorkflow(workflows.SyncDataSource)
	w.RegisterActivity(activities.NewSync(d))
	w.RegisterWorkflow(workflows.Retrieve)
	w.RegisterWorkflow(workflows.SearchRetrieve)
	w.RegisterActivity(activities.NewVectorize(d))
	w.RegisterWorkflow(workflows.PruneRevisions)
	w.RegisterActivity(activities.NewRevisions(d))
	w.RegisterActivity(activities.NewSites(d))
	w.RegisterActivity(activities.NewChat(d))
	// Messenger's methods register under their names, DeliverReply among
	// them; one value shares the API clients.
	w.RegisterActivity(activities.NewMessenger(d))
	return nil
}
