package workflows

import "go.temporal.io/sdk/workflow"

// QueryProgress is the query name of every job's progress: each job workflow
// answers it with a Progress, so one job view reads every kind.
const QueryProgress = "progress"

// Steps a job's progress names while it runs.
const (
	StepQueued     = "queued"
	StepIndexing   = "indexing"
	StepRemoving   = "removing vectors"
	StepDone       = "done"
	StepVectors    = "deleting vectors"
	StepFiles      = "deleting files"
	StepDocuments  = "deleting documents"
	StepChats      = "deleting chats"
	StepCollection = "deleting collections"
	StepSiteRow    = "deleting the site"
	StepListing    = "listing documents"
)

// Progress is the live state of a job: counts of the items it works through
// (documents for the vectorize kinds, files for an import), the step it is
// at, and per-kind counters (what was removed or indexed).
type Progress struct {
	Step      string           `json:"step"`
	Total     int              `json:"total"`
	Completed int              `json:"completed"`
	Failed    int              `json:"failed"`
	Running   int              `json:"running"`
	Pending   int              `json:"pending"`
	FailedIDs []int64          `json:"failed_ids"`
	Done      bool             `json:"done"`
	Counts    map[string]int64 `json:"counts,omitempty"`
	// Items are the per-file results of an import (absent for other kinds).
	Items []ItemResult `json:"items,omitempty"`
}

// BatchProgress is the progress of a batch vectorization (the name it had
// before every job kind reported one).
type BatchProgress = Progress

// ResultIsProgress reports whether the workflows of a job kind return their
// final Progress (the value their progress query serves, with Done set) as
// their result. A completed job of such a kind shows its progress from the
// result: a query on a closed workflow makes a worker replay its whole
// history to answer.
func ResultIsProgress(kind string) bool {
	switch kind {
	case KindImport, KindBatchVectorize, KindReindex:
		return true
	}
	return false
}

// ServeProgress registers the progress query of a job workflow over p, which
// the workflow keeps current.
func ServeProgress(ctx workflow.Context, p *Progress) error {
	return workflow.SetQueryHandler(ctx, QueryProgress, func() (Progress, error) { return *p, nil })
}
