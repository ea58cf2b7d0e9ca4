// Package memo keeps values read from a slower source (the database) in
// process for a short, fixed time. Hot paths that check the same row on every
// request (a site's visibility, a tenant's ai-config) read it from memory;
// a write through the process drops the copy at once, and a write made
// elsewhere shows once the copy is older than the TTL.
package memo

import (
	"sync"
	"time"
)

// TTL is a map of values read at most Keep ago, bounded to Max keys (beyond
// that it starts over: the values are cheap to read again). The zero value
// keeps nothing: every Get loads.
type TTL[K comparable, V any] struct {
	Keep time.Duration
	Max  int

	mu  sync.Mutex
	gen uint64 // bumped by Forget and Clear
	m   map[K]entry[V]
}

type entry[V any] struct {
	v  V
	at time.Time
}

// Get returns the value of key, from memory when it was read less than the
// TTL ago, otherwise from load. A load that overlapped a Forget or Clear is
// returned but not kept: it may have read the row before the write.
func (t *TTL[K, V]) Get(key K, load func() (V, error)) (V, error) {
	t.mu.Lock()
	e, ok := t.m[key]
	gen := t.gen
	t.mu.Unlock()
	if ok && time.Since(e.at) < t.Keep {
		return e.v, nil
	}
	at := time.Now()
	v, err := load()
	if err != nil {
		return v, err
	}
	t.mu.Lock()
	if t.gen == gen && t.Keep > 0 {
		if t.m == nil || len(t.m) >= max(t.Max, 1) {
			t.m = map[K]entry[V]{}
		}
		t.m[key] = entry[V]{v: v, at: at}
	}
	t.mu.Unlock()
	return v, nil
}

// Forget drops key after a write.
func (t *TTL[K, V]) Forget(key K) {
	t.mu.Lock()
	t.gen++
	delete(t.m, key)
	t.mu.Unlock()
}

// Clear drops every key after a write that may touch any of them.
func (t *TTL[K, V]) Clear() {
	t.mu.Lock()
	t.gen++
	t.m = nil
	t.mu.Unlock()
}
