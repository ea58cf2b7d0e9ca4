package readcache

import (
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
)

// Lists is an LRU of list responses (bodies by request key) with expiry and
// the generation check Details has: a fill that read the database before
// a write's invalidation is not stored, so a purged list does not come back
// stale from a reader that was already under way.
type Lists struct {
	mu  sync.Mutex
	lru *expirable.LRU[string, []byte]
	gen uint64
}

// NewLists returns an empty cache of at most max entries that live ttl.
func NewLists(max int, ttl time.Duration) *Lists {
	return &Lists{lru: expirable.NewLRU[string, []byte](max, nil, ttl)}
}

// Get returns the cached body and the current generation (to be passed to
// Put after a miss).
func (l *Lists) Get(key string) ([]byte, bool, uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.lru.Get(key)
	return b, ok, l.gen
}

// Put stores body unless the lists were purged since gen was read.
func (l *Lists) Put(gen uint64, key string, body []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if gen == l.gen {
		l.lru.Add(key, body)
	}
}

// Purge drops every list.
func (l *Lists) Purge() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.gen++
	l.lru.Purge()
}
