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
	files, err := filepath.Glob(filepath.Join("testdata", "chat-*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 {
		t.Fatalf("%d recorded chat histories, want one per mode (3)", len(files))
	}
	for _, f := range files {
		r := worker.NewWorkflowReplayer()
		RegisterChatReplay(r)
		if err := r.ReplayWorkflowHistoryFromJSONFile(nil, f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestImportHistoriesReplay replays import histories recorded from real runs
// (lorebench -only import on a small corpus, `temporal workflow show -o
// json`): imports started before batches (one ImportFile activity per file:
// finished, with vectorizing, and one still running when it was recorded)
// and batched ones (ImportBatch). A change to Import that would break an
// import running while it is deployed fails here.
func TestImportHistoriesReplay(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "import-*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 5 {
		t.Fatalf("%d recorded import histories, want 5", len(files))
	}
	for _, f := range files {
		r := worker.NewWorkflowReplayer()
		r.RegisterWorkflow(Import)
		if err := r.ReplayWorkflowHistoryFromJSONFile(nil, f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}
