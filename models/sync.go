package models

import (
	"time"

	"github.com/uptrace/bun"
)

// Data source types kept in sync with a site (see docs/sync.md).
const (
	DataSourceGit = "git" // a branch of a Git repository over HTTPS
	DataSourceWeb = "web" // a website: a sitemap or a start page
)

// Sync run states.
const (
	SyncWaiting   = "waiting"   // another sync of the data source runs; this one waits for it
	SyncRunning   = "running"   // holds the data source
	SyncCompleted = "completed" // every change applied (items may have failed alone)
	SyncHeld      = "held"      // completed except the deletions, held by the mass-deletion guard
	SyncSkipped   = "skipped"   // a scheduled run that found another one running
	SyncFailed    = "failed"    // the source could not be read at all
)

// SyncSettings is how a data source syncs into its site: the schedule (a
// Temporal Schedule named after the data source), where the documents go,
// and the mass-deletion guard's share.
type SyncSettings struct {
	bun.BaseModel `bun:"table:sync_settings"`
	DataSourceID  int64  `bun:"data_source_id,pk"`
	Schedule      string `bun:"schedule,notnull,default:''"` // cron or @every duration; '' runs only on request
	CollectionID  *int64 `bun:"collection_id"`
	Publish       bool   `bun:"publish,notnull,default:false"`
	// DeleteShare is the share of the source's documents one run may delete
	// before it stops and asks for confirmation (0 < share <= 1).
	DeleteShare float64   `bun:"delete_share,notnull,default:0.3"`
	UpdatedAt   time.Time `bun:"updated_at,notnull"`
}

// SyncItem binds one file or page of a data source to the document it
// became. Its key (data source, item key) is the primary key, so a sync
// retried after a crash finds the document it wrote instead of writing a
// second one.
type SyncItem struct {
	bun.BaseModel `bun:"table:sync_items"`
	DataSourceID  int64  `bun:"data_source_id,pk"`
	Key           string `bun:"item_key,pk"` // the file's path in the repository, or the page's URL
	SiteID        int64  `bun:"site_id,notnull"`
	DocumentID    int64  `bun:"document_id,notnull"`
	// Version identifies the source's bytes: a Git blob id, or the SHA-256
	// of a page's body.
	Version string `bun:"version,notnull,default:''"`
	// Ref is where the bytes were read: the commit, or the page's ETag (else
	// its Last-Modified).
	Ref          string `bun:"ref,notnull,default:''"`
	ETag         string `bun:"etag,notnull,default:''"`
	LastModified string `bun:"last_modified,notnull,default:''"`
	// Links are a crawled page's links under the prefix (JSON array), so a
	// page that answered 304 still leads the crawl to its links.
	Links string `bun:"links,notnull,default:'[]'"`
	// SyncedRevision is the document's content_version as the sync wrote
	// it: a higher one means the document was edited in Lore since.
	SyncedRevision int64     `bun:"synced_revision,notnull,default:0"`
	RunID          int64     `bun:"run_id,notnull,default:0"` // the sync run that last wrote it
	SyncedAt       time.Time `bun:"synced_at,notnull"`
}

// SyncRun is one sync of a data source: its state, counts and per-item
// results (the changed and failed items, bounded).
type SyncRun struct {
	bun.BaseModel `bun:"table:sync_runs"`
	ID            int64      `bun:"id,pk,autoincrement"`
	DataSourceID  int64      `bun:"data_source_id,notnull"`
	TenantID      int64      `bun:"tenant_id,notnull"`
	SiteID        int64      `bun:"site_id,notnull"`
	JobID         string     `bun:"job_id,notnull,unique"` // the workflow id
	Trigger       string     `bun:"trigger,notnull"`       // manual | schedule
	Status        string     `bun:"status,notnull"`
	Ref           string     `bun:"ref,notnull,default:''"` // the commit synced (git)
	Added         int        `bun:"added,notnull,default:0"`
	Updated       int        `bun:"updated,notnull,default:0"`
	Deleted       int        `bun:"deleted,notnull,default:0"`
	Unchanged     int        `bun:"unchanged,notnull,default:0"`
	Failed        int        `bun:"failed,notnull,default:0"`
	Message       string     `bun:"message,notnull,default:''"`
	Items         string     `bun:"items,notnull,default:'[]'"` // JSON: the per-item results
	CreatedAt     time.Time  `bun:"created_at,notnull"`
	StartedAt     *time.Time `bun:"started_at"`
	FinishedAt    *time.Time `bun:"finished_at"`
}
