// Package readcache holds the API's read caches and their invalidation in
// one place, below the handlers:
//
//   - Details: client document details (the hottest read), a byte-bounded
//     LRU with expiry;
//   - Lists: encoded client document list responses by query;
//   - SiteRows: site rows for the client visibility and access check;
//   - site detail bodies in the shared cache (memory or Redis, internal/cache),
//     the landing request of every site page.
//
// Invalidation is not the handlers' business: the database reports every
// committed write that changes what a cached read shows (db.OnChange), and
// Changed drops what it made stale. A write made through another process
// shows once the entries expire (the TTLs below), except the shared site
// bodies, which every process drops from the shared cache.
package readcache

import (
	"context"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/lorekb/lore/internal/cache"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/memo"
	"github.com/lorekb/lore/models"
)

// Bounds and lifetimes of the in-process caches.
const (
	// DetailTTL and DetailBytes bound the document details: a write made
	// through another API process shows within DetailTTL.
	DetailTTL   = 5 * time.Second
	DetailBytes = 64 << 20
	// ListTTL and ListMax bound the list responses.
	ListTTL = DetailTTL
	ListMax = 4096
	// SiteRowTTL bounds how old a site row the client visibility and
	// access check may use. Every client read of a document, tree or chat
	// checks its site (status, deletion, password); at thousands of reads
	// a second the row is read from memory.
	SiteRowTTL = time.Second
	siteRowMax = 10000
	// siteRedelete is when a site's shared bodies are deleted a second
	// time, for a reader of another process that loaded the old row just
	// before the write committed.
	siteRedelete = 2 * time.Second
)

// SiteMsgs are the envelope messages whose site bodies are cached (the body
// differs by Accept-Language); requests with another message bypass the
// cache, so that invalidation knows every key of a site.
var SiteMsgs = []string{"Success", "成功"}

// Cache is one process's read caches. D is the cached document detail.
type Cache[D any] struct {
	Details  *Details[D]
	Lists    *Lists
	SiteRows *memo.TTL[int64, *models.Site]

	shared cache.Cache
	log    *slog.Logger
	// siteEpoch moves after every committed site write: a reader that
	// loaded a site before the write finished does not store its body.
	siteEpoch atomic.Int64
	// redelete is siteRedelete (tests shorten it).
	redelete time.Duration
}

// New builds the caches and subscribes them to d's writes (d nil: no
// subscription, for tests). size tells a detail's size in bytes.
func New[D any](d *db.DB, shared cache.Cache, log *slog.Logger, size func(D) int) *Cache[D] {
	c := &Cache[D]{
		Details:  NewDetails(DetailTTL, DetailBytes, size),
		Lists:    NewLists(ListMax, ListTTL),
		SiteRows: &memo.TTL[int64, *models.Site]{Keep: SiteRowTTL, Max: siteRowMax},
		shared:   shared,
		log:      log,
		redelete: siteRedelete,
	}
	if d != nil {
		d.OnChange(c.Changed)
	}
	return c
}

// Changed drops what a committed write made stale.
func (c *Cache[D]) Changed(ctx context.Context, ch db.Change) {
	if len(ch.Sites) > 0 {
		c.siteEpoch.Add(1)
		c.SiteRows.Clear()
		c.Lists.Purge() // lists embed site names and hide inactive sites
		c.dropSiteBodies(ctx, SiteKeys(ch.Sites...))
	}
	if len(ch.Documents) > 0 || ch.AllDocuments {
		c.Lists.Purge()
	}
	switch {
	case ch.AllDocuments:
		c.Details.Clear()
	case len(ch.Documents) > 0:
		c.Details.Forget(ch.Documents...)
	}
}

// Clear drops everything, the shared cache included (the admin's cache
// clear).
func (c *Cache[D]) Clear(ctx context.Context) error {
	c.siteEpoch.Add(1)
	c.SiteRows.Clear()
	c.Lists.Purge()
	c.Details.Clear()
	return c.shared.Clear(ctx)
}

func (c *Cache[D]) dropSiteBodies(ctx context.Context, keys []string) {
	if len(keys) == 0 {
		return
	}
	if err := c.shared.Delete(ctx, keys...); err != nil {
		c.log.Warn("site cache invalidation failed", "err", err, "keys", keys)
	}
	time.AfterFunc(c.redelete, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.shared.Delete(ctx, keys...)
	})
}

// SiteKey is the shared cache key of a client site lookup: kind is id, slug
// or domain, msg the envelope message.
func SiteKey(kind, value, msg string) string {
	return "site|" + kind + "|" + value + "|" + msg
}

// CacheableMsg reports whether bodies with this envelope message are cached.
func CacheableMsg(msg string) bool {
	for _, m := range SiteMsgs {
		if m == msg {
			return true
		}
	}
	return false
}

// SiteKeys lists every shared cache key that may hold one of the sites.
func SiteKeys(sites ...*models.Site) []string {
	var keys []string
	for _, st := range sites {
		if st == nil {
			continue
		}
		for _, m := range SiteMsgs {
			keys = append(keys, SiteKey("id", strconv.FormatInt(st.ID, 10), m), SiteKey("slug", st.Slug, m))
			if st.Domain != nil {
				keys = append(keys, SiteKey("domain", *st.Domain, m))
			}
		}
	}
	return keys
}

// SiteBody returns a cached client site body.
func (c *Cache[D]) SiteBody(ctx context.Context, key string) ([]byte, bool) {
	b, hit, err := c.shared.Get(ctx, key)
	if err != nil {
		c.log.Warn("site cache read failed", "err", err, "key", key)
	}
	return b, hit
}

// SiteEpoch is read before a site is loaded and passed to PutSiteBody.
func (c *Cache[D]) SiteEpoch() int64 { return c.siteEpoch.Load() }

// PutSiteBody stores a client site body unless a site write committed since
// epoch was read.
func (c *Cache[D]) PutSiteBody(ctx context.Context, key string, b []byte, ttl time.Duration, epoch int64) {
	if c.siteEpoch.Load() != epoch {
		return
	}
	if err := c.shared.Set(ctx, key, b, ttl); err != nil {
		c.log.Warn("site cache write failed", "err", err, "key", key)
	}
}
