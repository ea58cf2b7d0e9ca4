package worker

import (
	"context"

	"github.com/lorekb/lore/activities"
	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/workflows"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// importActivities are the import activities of the worker, with the
// per-file conversion budget of LORE_IMPORT_FILE_TIMEOUT.
func importActivities(d *deps.Deps) *activities.Import {
	return &activities.Import{D: d, Sources: d.DataSource, FileTimeout: d.Cfg.ImportFileTimeout}
}

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
	w.RegisterActivity(importActivities(d))
	w.RegisterWorkflow(workflows.SyncDataSource)
	w.RegisterActivity(&activities.Sync{D: d, Import: importActivities(d)})
	w.RegisterWorkflow(workflows.Retrieve)
	w.RegisterWorkflow(workflows.SearchRetrieve)
	w.RegisterActivity(&activities.Vectorize{D: d})
	w.RegisterWorkflow(workflows.PruneRevisions)
	w.RegisterActivity(&activities.Revisions{D: d})
	w.RegisterActivity(&activities.Sites{D: d})
	w.RegisterActivity(&activities.Chat{D: d, Hub: d.Hub})
	// Messenger's methods register under their names, DeliverReply among
	// them; one value shares the API clients.
	w.RegisterActivity(&activities.Messenger{D: d})
	return nil
}
