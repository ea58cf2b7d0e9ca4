package readcache

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
)

// Details is a byte-bounded LRU of document details with expiry (the LRU and
// the expiry are hashicorp/golang-lru's expirable LRU; the byte bound is
// kept here). A fill started before an invalidation is not stored
// (generation check), so an entry never predates the last write this process
// made.
type Details[D any] struct {
	mu   sync.Mutex
	lru  *expirable.LRU[int64, *sized[D]]
	size func(D) int
	max  int
	used atomic.Int64 // bytes held; the LRU's evictions (also on expiry) subtract
	gen  uint64
}

type sized[D any] struct {
	v    D
	size int
}

// NewDetails returns an empty cache of at most maxBytes (by size) whose
// entries live ttl.
func NewDetails[D any](ttl time.Duration, maxBytes int, size func(D) int) *Details[D] {
	c := &Details[D]{size: size, max: maxBytes}
	c.lru = expirable.NewLRU[int64, *sized[D]](0, func(_ int64, e *sized[D]) { c.used.Add(-int64(e.size)) }, ttl)
	return c
}

// Get returns the cached detail and the current generation (to be passed to
// Put after a miss).
func (c *Details[D]) Get(id int64) (D, bool, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.lru.Get(id); ok {
		return e.v, true, c.gen
	}
	var zero D
	return zero, false, c.gen
}

// Put stores v unless something was invalidated since gen was read; a value
// larger than a sixteenth of the bound is not kept.
func (c *Details[D]) Put(gen uint64, id int64, v D) {
	n := c.size(v)
	if n > c.max/16 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	c.lru.Remove(id) // a replaced entry leaves through the eviction callback
	c.lru.Add(id, &sized[D]{v: v, size: n})
	c.used.Add(int64(n))
	for c.used.Load() > int64(c.max) {
		if _, _, ok := c.lru.RemoveOldest(); !ok {
			break
		}
	}
}

// Update changes the cached details of ids in place (view counts after a
// flush) and bumps the generation, so a fill that read its row before the
// change is dropped.
func (c *Details[D]) Update(ids []int64, change func(id int64, v *D)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for _, id := range ids {
		if e, ok := c.lru.Peek(id); ok {
			change(id, &e.v) // in place: its size and expiry stay
		}
	}
}

// Forget drops the given details.
func (c *Details[D]) Forget(ids ...int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for _, id := range ids {
		c.lru.Remove(id)
	}
}

// Clear drops every detail.
func (c *Details[D]) Clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.lru.Purge()
}

// Len is the number of details held.
func (c *Details[D]) Len() int { return c.lru.Len() }

// Bytes is the size of the details held.
func (c *Details[D]) Bytes() int { return int(c.used.Load()) }
