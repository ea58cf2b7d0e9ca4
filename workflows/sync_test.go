package workflows

import (
	"testing"

	"go.temporal.io/sdk/worker"
)

// TestSyncHistoriesReplay replays sync histories recorded from real runs (e2e
// TestSyncTargets with LORE_WRITE_HISTORIES=1, 100 files): a first sync in
// batches, a re-sync after one file changed and one with nothing changed,
// for each shape (v0: every batch an activity; v1: a plan of one batch
// applied as a local activity; v2: a re-sync of one batch begun, planned and
// applied in one local activity; v3: that activity records the run too). A change to SyncDataSource that would break
// a run in flight at a deploy fails here.
func TestSyncHistoriesReplay(t *testing.T) {
	replayAll(t, "sync-*.json", 3*(SyncVersion+1), func(r worker.WorkflowReplayer) { r.RegisterWorkflow(SyncDataSource) })
}
