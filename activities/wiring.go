package activities

import (
	"github.com/lorekb/lore/internal/chunk"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/deps"
)

// The one place that builds activity structs from the process dependencies:
// the worker registers what these return, and tests that run activities
// against real stores start from them too.

// NewVectorize builds the vectorization and reindex activities.
func NewVectorize(d *deps.Deps) *Vectorize {
	return &Vectorize{DB: d.DB, Vectors: d, Metrics: d.Metrics,
		Chunking: chunk.Options{Size: d.Cfg.ChunkSize, Overlap: d.Cfg.ChunkOverlap}}
}

// NewSites builds the steps of a site deletion.
func NewSites(d *deps.Deps) *Sites {
	return &Sites{DB: d.DB, Vectors: d, Blob: d.Blob}
}

// NewRevisions builds the revision pruning activity.
func NewRevisions(d *deps.Deps) *Revisions {
	return &Revisions{DB: d.DB, Retention: db.RevisionRetention{Keep: d.Cfg.RevisionsKeep, MaxAge: d.Cfg.RevisionsMaxAge}}
}

// NewImport builds the import activities; data sources open through
// deps.DataSource.
func NewImport(d *deps.Deps) *Import {
	return &Import{DB: d.DB, Blob: d.Blob, Models: d, Outbound: d.Outbound, PublicURL: d.Cfg.PublicURL,
		Sources: d.DataSource, FileTimeout: d.Cfg.ImportFileTimeout}
}

// NewChat builds the chat run's activities; hub is this process's chat
// stream hub.
func NewChat(d *deps.Deps) *Chat {
	c := &Chat{DB: d.DB, Cfg: d.Cfg, Models: d, Vectors: d, Cache: d.Cache, Metrics: d.Metrics, Log: d.Log, Hub: d.Hub}
	if d.Temporal != nil {
		c.Signals = d.Temporal
	}
	return c
}

// NewSync builds the data source sync activities, which convert through
// the import's path.
func NewSync(d *deps.Deps) *Sync {
	s := &Sync{DB: d.DB, Cfg: d.Cfg, Models: d, Vectors: d, Outbound: d.Outbound, Import: NewImport(d)}
	if d.Temporal != nil {
		s.Runs = d.Temporal
	}
	return s
}

// NewMessenger builds the messenger activities (one value: its platform
// clients are shared by every call).
func NewMessenger(d *deps.Deps) *Messenger {
	return &Messenger{DB: d.DB, Cfg: d.Cfg, Tenants: d}
}
