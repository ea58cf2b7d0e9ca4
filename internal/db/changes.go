package db

import (
	"context"
	"sync"

	"github.com/lorekb/lore/models"
)

// Change says what a committed write touched, for the read caches above the
// database (internal/readcache): the write methods below report it, so no
// handler has to remember which caches its write makes stale.
type Change struct {
	// Sites whose rows (fields, access, existence) changed; an update
	// reports the row before and after, so lookups by the old slug or
	// domain are dropped too. Only ID, Slug and Domain are meaningful.
	Sites []*models.Site
	// Documents whose rows changed (created, updated, deleted).
	Documents []int64
	// AllDocuments: a write that may change what many documents show (a
	// collection renamed, moved or deleted changes their paths).
	AllDocuments bool
	// Tenants: a tenant row was created, changed or deleted (slugs and
	// domains may have moved).
	Tenants bool
	// Configs are the tenants whose system configuration documents
	// changed.
	Configs []int64
}

type changeHooks struct {
	mu  sync.RWMutex
	fns []func(context.Context, Change)
}

// OnChange registers fn to be called after every committed write that
// changes what a cached read shows. fn runs on the writer's goroutine and
// must be quick.
func (d *DB) OnChange(fn func(context.Context, Change)) {
	d.changes.mu.Lock()
	d.changes.fns = append(d.changes.fns, fn)
	d.changes.mu.Unlock()
}

func (d *DB) changed(ctx context.Context, c Change) {
	d.changes.mu.RLock()
	fns := d.changes.fns
	d.changes.mu.RUnlock()
	for _, fn := range fns {
		fn(ctx, c)
	}
}

// siteKeys reads what identifies a site in the caches (id, slug, domain),
// nil when it is gone.
func (d *DB) siteKeys(ctx context.Context, siteID int64) *models.Site {
	st := new(models.Site)
	if err := d.NewSelect().Model(st).Column("id", "slug", "domain").Where("id = ?", siteID).Scan(ctx); err != nil {
		return nil
	}
	return st
}

// sitesChanged reports a write to the given site rows; keys are read before
// the write where it may change or remove them.
func (d *DB) sitesChanged(ctx context.Context, sites ...*models.Site) {
	c := Change{}
	for _, s := range sites {
		if s != nil {
			c.Sites = append(c.Sites, s)
		}
	}
	if len(c.Sites) > 0 {
		d.changed(ctx, c)
	}
}
