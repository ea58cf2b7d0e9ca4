package workflows

import (
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/worker"
)

// TestChatHistoriesReplay replays chat run histories recorded from real runs
// of each mode (e2e TestChatHistoriesReplay with LORE_WRITE_HISTORIES=1):
// local model calls in the worker's process, scheduled model calls that
// signal their pieces, and the same ended by the run's timer. A change to
// ChatRun that would break a turn running while it is deployed (another
// activity, timer or side effect in another order) fails here.
func TestChatHistoriesReplay(t *testing.T) {
	replayAll(t, "chat-*.json", 3, RegisterChatReplay) // one per mode
}

// TestImportHistoriesReplay replays import histories recorded from real runs
// (lorebench -only import on a small corpus, `temporal workflow show -o
// json`): imports started before batches (one ImportFile activity per file:
// finished, with vectorizing, and one still running when it was recorded),
// batched ones (ImportBatch, version 1) and ones cut in two waves (version 2,
// recorded from lore serve with a 10-file import, drafts and vectorized). A
// change to Import that would break an import running while it is deployed
// fails here.
func TestImportHistoriesReplay(t *testing.T) {
	replayAll(t, "import-*.json", 7, func(r worker.WorkflowReplayer) { r.RegisterWorkflow(Import) })
}

// replayAll replays every history in testdata matching pattern (at least
// want of them) on a replayer that register prepared.
func replayAll(t *testing.T, pattern string, want int, register func(worker.WorkflowReplayer)) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", pattern))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < want {
		t.Fatalf("%d recorded histories match %s, want %d", len(files), pattern, want)
	}
	for _, f := range files {
		r := worker.NewWorkflowReplayer()
		register(r)
		if err := r.ReplayWorkflowHistoryFromJSONFile(nil, f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}
