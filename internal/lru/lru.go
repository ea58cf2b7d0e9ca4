// Package lru is a least-recently-used cache bounded both in entries and in
// the bytes its values hold, safe for concurrent use: the analyses that the
// retrieval pipeline and the extractive responder keep of popular chunks and
// passages (each keyed by the text it is a function of, so an entry is never
// stale) must not grow a process without limit however large the texts are.
package lru

import (
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// Cache holds at most maxEntries values and about maxBytes bytes of them (as
// their sizes are given to Add). Values are shared once added: callers must
// not change them.
type Cache[K comparable, V any] struct {
	mu       sync.Mutex
	lru      *simplelru.LRU[K, sized[V]]
	used     int
	maxBytes int
}

type sized[V any] struct {
	v    V
	size int
}

// New returns an empty cache; maxEntries and maxBytes must be positive.
func New[K comparable, V any](maxEntries, maxBytes int) *Cache[K, V] {
	c := &Cache[K, V]{maxBytes: maxBytes}
	c.lru, _ = simplelru.NewLRU(maxEntries, func(_ K, e sized[V]) { c.used -= e.size })
	return c
}

// Get returns the value of k and whether the cache has one, and marks it
// recently used.
func (c *Cache[K, V]) Get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.lru.Get(k)
	return e.v, ok
}

// Add keeps v under k, counted as size bytes, evicting the least recently
// used values while the cache holds more than its bounds. A value over a
// sixteenth of the byte bound is not kept: one huge text would push out
// many.
func (c *Cache[K, V]) Add(k K, v V, size int) {
	if size > c.maxBytes/16 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Remove(k) // a concurrent miss may have added it: the callback subtracts its size
	c.lru.Add(k, sized[V]{v, size})
	c.used += size
	for c.used > c.maxBytes {
		if _, _, ok := c.lru.RemoveOldest(); !ok {
			break
		}
	}
}

// Used is the bytes the cache's values hold, as their sizes were given.
func (c *Cache[K, V]) Used() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}

// Len is the number of values held.
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
