// Package redis implements cache.Cache on Redis, so several Lore instances
// share one cache and invalidations reach all of them. All keys live under a
// prefix, which lets several applications (or test runs) share a database
// and lets Clear remove only this cache's keys.
package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/lorekb/lore/internal/cache"
)

// DefaultPrefix namespaces keys when New or Open is given an empty prefix: an
// empty namespace would make Clear delete every key in the database.
const DefaultPrefix = "lore:cache:"

// scanBatch is the COUNT hint for SCAN and the size of each UNLINK batch.
const scanBatch = 500

// Cache is a cache.Cache on a Redis database. It is safe for concurrent use.
// Hit/miss counters are kept per process.
type Cache struct {
	client *goredis.Client
	prefix string
	owned  bool // client created by Open, closed by Close
	hits   atomic.Int64
	misses atomic.Int64
}

var (
	_ cache.Cache   = (*Cache)(nil)
	_ cache.Counter = (*Cache)(nil)
)

// incrScript adds ARGV[1] to KEYS[1], gives a key without expiry the ttl
// ARGV[2] (ms), and returns the value and the ms left: one atomic step.
var incrScript = goredis.NewScript(`
local n = redis.call('INCRBY', KEYS[1], ARGV[1])
local left = redis.call('PTTL', KEYS[1])
if left < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  left = tonumber(ARGV[2])
end
return {n, left}`)

// extendScript makes KEYS[1] live at least ARGV[1] ms, if it exists.
var extendScript = goredis.NewScript(`
local left = redis.call('PTTL', KEYS[1])
if left >= 0 and left < tonumber(ARGV[1]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return left`)

// Incr implements cache.Counter with one Lua script (INCRBY and PEXPIRE).
func (c *Cache) Incr(ctx context.Context, key string, delta int64, ttl time.Duration) (int64, time.Duration, error) {
	ms := ttl.Milliseconds()
	if ms < 1 {
		ms = 1
	}
	res, err := incrScript.Run(ctx, c.client, []string{c.prefix + key}, delta, ms).Int64Slice()
	if err != nil {
		return 0, 0, fmt.Errorf("redis cache: incr: %w", err)
	}
	return res[0], time.Duration(res[1]) * time.Millisecond, nil
}

// Extend implements cache.Counter.
func (c *Cache) Extend(ctx context.Context, key string, ttl time.Duration) error {
	if err := extendScript.Run(ctx, c.client, []string{c.prefix + key}, ttl.Milliseconds()).Err(); err != nil {
		return fmt.Errorf("redis cache: extend: %w", err)
	}
	return nil
}

// New wraps an existing client; every key is stored as prefix+key. The caller
// keeps ownership of client. An empty prefix means DefaultPrefix.
func New(client *goredis.Client, prefix string) *Cache {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return &Cache{client: client, prefix: prefix}
}

// Open parses a redis:// or rediss:// URL (e.g. "redis://:pw@host:6379/0")
// and returns a cache with its own client, released by Close. It does not
// contact the server, so the application can start while Redis is down;
// Stats reports connectivity.
func Open(url, prefix string) (*Cache, error) {
	opts, err := goredis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("cache/redis: parse URL: %w", err)
	}
	c := New(goredis.NewClient(opts), prefix)
	c.owned = true
	return c, nil
}

// Close releases the client if it was created by Open; a client passed to New
// is left to its owner.
func (c *Cache) Close() error {
	if c.owned {
		return c.client.Close()
	}
	return nil
}

// Prefix returns the key namespace, e.g. for diagnostics.
func (c *Cache) Prefix() string { return c.prefix }

// Get fetches prefix+key. Backend errors are returned (and not counted).
func (c *Cache) Get(ctx context.Context, key string) ([]byte, bool, error) {
	val, err := c.client.Get(ctx, c.prefix+key).Bytes()
	if errors.Is(err, goredis.Nil) {
		c.misses.Add(1)
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("cache/redis: get: %w", err)
	}
	c.hits.Add(1)
	return val, true, nil
}

// Set stores val with Redis-side expiry; ttl <= 0 means no expiry.
func (c *Cache) Set(ctx context.Context, key string, val []byte, ttl time.Duration) error {
	if ttl < 0 {
		ttl = 0
	}
	if err := c.client.Set(ctx, c.prefix+key, val, ttl).Err(); err != nil {
		return fmt.Errorf("cache/redis: set: %w", err)
	}
	return nil
}

// Delete removes the given keys in one round trip.
func (c *Cache) Delete(ctx context.Context, keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	full := make([]string, len(keys))
	for i, k := range keys {
		full[i] = c.prefix + k
	}
	if err := c.client.Del(ctx, full...).Err(); err != nil {
		return fmt.Errorf("cache/redis: delete: %w", err)
	}
	return nil
}

// scan calls fn with batches of the keys under the prefix, using SCAN so the
// server is never blocked the way KEYS (or FLUSHDB) would block it.
func (c *Cache) scan(ctx context.Context, fn func(keys []string) error) error {
	match := escapeGlob(c.prefix) + "*"
	var cursor uint64
	for {
		keys, next, err := c.client.Scan(ctx, cursor, match, scanBatch).Result()
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			if err := fn(keys); err != nil {
				return err
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

// Clear deletes only the keys under the prefix (SCAN + UNLINK in batches;
// never FLUSHDB) and resets the hit/miss counters.
func (c *Cache) Clear(ctx context.Context) error {
	err := c.scan(ctx, func(keys []string) error {
		return c.client.Unlink(ctx, keys...).Err()
	})
	if err != nil {
		return fmt.Errorf("cache/redis: clear: %w", err)
	}
	c.hits.Store(0)
	c.misses.Store(0)
	return nil
}

// Stats pings the server and counts the keys under the prefix. Connectivity
// problems are reported in Status ("error: ...") rather than as an error, so
// a health endpoint can still render the snapshot.
func (c *Cache) Stats(ctx context.Context) (cache.Stats, error) {
	hits, misses := c.hits.Load(), c.misses.Load()
	st := cache.Stats{
		Backend: "redis",
		Prefix:  c.prefix,
		Status:  "connected",
		Hits:    hits,
		Misses:  misses,
		HitRate: cache.HitRate(hits, misses),
	}
	if err := c.client.Ping(ctx).Err(); err != nil {
		st.Status = "error: " + err.Error()
		return st, nil
	}
	// SCAN may return a key twice across batches; dedupe so Size is exact.
	seen := make(map[string]struct{})
	if err := c.scan(ctx, func(keys []string) error {
		for _, k := range keys {
			seen[k] = struct{}{}
		}
		return nil
	}); err != nil {
		st.Status = "error: " + err.Error()
		return st, nil
	}
	st.Size = len(seen)
	return st, nil
}

// escapeGlob escapes the characters SCAN MATCH treats as a pattern, so a
// prefix containing them matches only itself.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
