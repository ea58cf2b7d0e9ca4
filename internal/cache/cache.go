// Package cache defines Lore's response/data cache abstraction, so hot read
// paths (such as the cached site detail endpoint) can use an in-process LRU in
// single-node deployments and Redis when several instances must share state,
// without changing the calling code.
package cache

import (
	"context"
	"fmt"
	"time"
)

// Stats is a snapshot of a cache's state, shaped for the admin/health JSON
// endpoint so operators can see whether caching is effective.
type Stats struct {
	// Backend names the implementation: "memory" or "redis".
	Backend string `json:"backend"`
	// Size is the number of entries currently held.
	Size int `json:"size"`
	// MaxSize is the entry limit of bounded caches (0 when unbounded).
	MaxSize int `json:"max_size,omitempty"`
	// Prefix is the key namespace of shared caches.
	Prefix string `json:"prefix,omitempty"`
	// Status reports backend connectivity for remote caches: "connected"
	// or "error: <reason>".
	Status string `json:"status,omitempty"`
	// Hits counts Get calls of this process that found a live entry,
	// since creation or the last Clear.
	Hits int64 `json:"hits"`
	// Misses counts Get calls that found nothing; expired entries count
	// as misses. Backend errors count as neither.
	Misses int64 `json:"misses"`
	// HitRate is Hits/(Hits+Misses) as a percentage with two decimals,
	// e.g. "12.34%" ("0.00%" before any lookup).
	HitRate string `json:"hit_rate"`
}

// Cache is a byte-oriented key/value cache with per-entry expiry. Values are
// opaque bytes (typically pre-rendered JSON) so every backend stores them
// without a serialisation step. Implementations are safe for concurrent use.
type Cache interface {
	// Get returns the value for key and whether it was present and
	// unexpired. A miss is (nil, false, nil); err is reserved for backend
	// failures, which callers should treat as a miss after logging. The
	// returned slice may be shared with other callers and must not be
	// modified.
	Get(ctx context.Context, key string) ([]byte, bool, error)
	// Set stores val under key for ttl; ttl <= 0 means no expiry. val is
	// copied (or serialised), so the caller may reuse it afterwards.
	Set(ctx context.Context, key string, val []byte, ttl time.Duration) error
	// Delete removes the given keys; missing keys are not an error, so
	// invalidation can be fired blindly after writes.
	Delete(ctx context.Context, keys ...string) error
	// Clear removes every entry this cache owns (only its own namespace on
	// shared backends) and resets the hit/miss counters.
	Clear(ctx context.Context) error
	// Stats returns a snapshot for monitoring.
	Stats(ctx context.Context) (Stats, error)
}

// HitRate formats hits/(hits+misses) as a percentage with two decimals, the
// format Stats.HitRate uses, so every backend reports it identically.
func HitRate(hits, misses int64) string {
	total := hits + misses
	if total <= 0 {
		return "0.00%"
	}
	return fmt.Sprintf("%.2f%%", float64(hits)*100/float64(total))
}

// Counter is the atomic counting that rate limits need, so their state lives
// in the cache backend: in memory for one process, in Redis when several API
// processes (and restarts) must share it. Both backends implement it.
type Counter interface {
	// Incr atomically adds delta to the integer under key and returns the
	// new value and the time left before the key expires. A key that does
	// not exist (or has expired) starts from 0 and lives for ttl.
	Incr(ctx context.Context, key string, delta int64, ttl time.Duration) (int64, time.Duration, error)
	// Extend makes key live at least ttl from now (a longer lock-out);
	// a missing key is left missing.
	Extend(ctx context.Context, key string, ttl time.Duration) error
}
