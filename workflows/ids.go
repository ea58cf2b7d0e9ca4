// Package workflows holds the deterministic orchestration of Lore: one file per
// workflow. Workflow code decides; activities (package activities) do the I/O.
package workflows

import (
	"fmt"
	"strings"

	"github.com/google/uuid"
)

// TaskQueue is the default task queue of every Lore workflow and activity; the
// deployment can override it with TEMPORAL_TASK_QUEUE.
const TaskQueue = "lore"

// Workflow IDs derive from business IDs so an operator finds a job in the
// Temporal Web UI by what it is about.

// VectorizeDocID is the workflow ID of a document's vectorization.
func VectorizeDocID(docID int64) string { return fmt.Sprintf("vectorize-doc-%d", docID) }

// RemoveVectorsID is the workflow ID of removing a document's vectors.
func RemoveVectorsID(docID int64) string { return fmt.Sprintf("remove-vectors-doc-%d", docID) }

// BatchVectorizeID is the workflow ID of a batch vectorization job of one
// site; short (a few random characters) tells batches of a site apart.
func BatchVectorizeID(siteID int64, short string) string {
	return fmt.Sprintf("batch-vectorize-site-%d-%s", siteID, short)
}

// ReindexSiteID is the workflow ID of re-indexing a whole site.
func ReindexSiteID(siteID int64, short string) string {
	return fmt.Sprintf("reindex-site-%d-%s", siteID, short)
}

// ReindexTenantID is the workflow ID of re-indexing every site of a tenant.
func ReindexTenantID(tenantID int64, short string) string {
	return fmt.Sprintf("reindex-tenant-%d-%s", tenantID, short)
}

// DeleteSiteID is the workflow ID of a site deletion.
func DeleteSiteID(siteID int64) string { return fmt.Sprintf("delete-site-%d", siteID) }

// ChatRunID is the workflow ID of one chat turn of a thread. The session's
// row id is part of it, so a thread id reused after its session was deleted
// (turns count from 1 again) never collides with an old run.
func ChatRunID(threadID string, sessionID int64, turn int) string {
	return fmt.Sprintf("chat-%s-s%d-turn-%d", threadID, sessionID, turn)
}

// ImportID is the workflow ID of an import: the site and a random id.
func ImportID(siteID int64, id string) string { return fmt.Sprintf("import-%d-%s", siteID, id) }

// RetrieveID is the workflow ID of one admin retrieval test;
// key is unique per request.
func RetrieveID(key string) string { return "retrieve-" + key }

// KefuSyncID is the workflow ID of the pulls of one account on one site.
func KefuSyncID(siteID int64, openKfID string) string {
	return fmt.Sprintf("kefu-sync-%d-%s", siteID, openKfID)
}

// ShortID is n random lower-case hex characters (n at most 32): the part of
// a workflow ID that tells apart jobs of one business ID.
func ShortID(n int) string { return strings.ReplaceAll(uuid.NewString(), "-", "")[:n] }
