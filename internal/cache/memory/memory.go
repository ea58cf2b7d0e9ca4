// Package memory implements cache.Cache as a bounded in-process LRU with
// per-entry expiry, for single-instance deployments and as the zero-setup
// default. It sits on the hot path of cached endpoints, so a lookup is one
// mutex-protected map access plus a clock read only for entries with a TTL.
package memory

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/lorekb/lore/internal/cache"
)

// DefaultMaxSize is used when New is given a non-positive size, so a missing
// configuration value still yields a bounded cache.
const DefaultMaxSize = 1000

type entry struct {
	val     []byte
	expires int64 // UnixNano; 0 = never
}

// Cache is an LRU cache bounded by entry count. When full, the least recently
// used entry is evicted. It is safe for concurrent use.
type Cache struct {
	mu      sync.Mutex
	lru     *simplelru.LRU[string, entry]
	maxSize int
	hits    atomic.Int64
	misses  atomic.Int64
	// counters hold rate-limit state (counter.go), swept at most once a
	// minute (swept: when last).
	counters map[string]counter
	swept    int64
}

var (
	_ cache.Cache   = (*Cache)(nil)
	_ cache.Counter = (*Cache)(nil)
)

// New returns an empty cache holding at most maxSize entries (DefaultMaxSize
// when maxSize <= 0).
func New(maxSize int) *Cache {
	if maxSize <= 0 {
		maxSize = DefaultMaxSize
	}
	// The plain (unsynchronised) LRU is used under our own mutex so that the
	// expiry check and the removal of an expired entry are one atomic step:
	// a concurrent Set of a fresh value can never be deleted by mistake.
	l, err := simplelru.NewLRU[string, entry](maxSize, nil)
	if err != nil {
		panic(err) // unreachable: size is positive
	}
	return &Cache{lru: l, maxSize: maxSize}
}

// Get returns the cached value. Expired entries are removed and counted as
// misses. The returned slice is shared and must not be modified.
func (c *Cache) Get(_ context.Context, key string) ([]byte, bool, error) {
	c.mu.Lock()
	e, ok := c.lru.Get(key)
	if ok && e.expires != 0 && time.Now().UnixNano() >= e.expires {
		c.lru.Remove(key)
		ok = false
	}
	c.mu.Unlock()
	if !ok {
		c.misses.Add(1)
		return nil, false, nil
	}
	c.hits.Add(1)
	return e.val, true, nil
}

// Set stores a copy of val; ttl <= 0 means the entry never expires (it can
// still be evicted by LRU pressure).
func (c *Cache) Set(_ context.Context, key string, val []byte, ttl time.Duration) error {
	e := entry{val: append(make([]byte, 0, len(val)), val...)}
	if ttl > 0 {
		e.expires = time.Now().Add(ttl).UnixNano()
	}
	c.mu.Lock()
	c.lru.Add(key, e)
	c.mu.Unlock()
	return nil
}

// Delete removes the given keys.
func (c *Cache) Delete(_ context.Context, keys ...string) error {
	c.mu.Lock()
	for _, k := range keys {
		c.lru.Remove(k)
		delete(c.counters, k)
	}
	c.mu.Unlock()
	return nil
}

// Clear drops every entry and resets the hit/miss counters.
func (c *Cache) Clear(_ context.Context) error {
	c.mu.Lock()
	c.lru.Purge()
	c.counters = nil
	c.hits.Store(0)
	c.misses.Store(0)
	c.mu.Unlock()
	return nil
}

// Stats reports live entries (expired ones are purged first, so Size is
// accurate), the configured maximum and hit/miss counters.
func (c *Cache) Stats(_ context.Context) (cache.Stats, error) {
	now := time.Now().UnixNano()
	c.mu.Lock()
	for _, k := range c.lru.Keys() {
		if e, ok := c.lru.Peek(k); ok && e.expires != 0 && now >= e.expires {
			c.lru.Remove(k)
		}
	}
	size := c.lru.Len()
	c.mu.Unlock()
	hits, misses := c.hits.Load(), c.misses.Load()
	return cache.Stats{
		Backend: "memory",
		Size:    size,
		MaxSize: c.maxSize,
		Hits:    hits,
		Misses:  misses,
		HitRate: cache.HitRate(hits, misses),
	}, nil
}
