package memory

import (
	"context"
	"time"
)

// counter is one rate-limit count. Counters are kept apart from the LRU so
// that cache traffic can never evict (and so reset) a limit.
type counter struct {
	n       int64
	expires int64 // UnixNano
}

// maxCounters bounds the counter map; past it, expired counters are swept.
const maxCounters = 1 << 20

// Incr implements cache.Counter.
func (c *Cache) Incr(_ context.Context, key string, delta int64, ttl time.Duration) (int64, time.Duration, error) {
	now := time.Now().UnixNano()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counters == nil {
		c.counters = map[string]counter{}
	}
	e, ok := c.counters[key]
	if !ok || now >= e.expires {
		if len(c.counters) >= maxCounters || now-c.swept > int64(time.Minute) {
			c.sweepCounters(now)
		}
		e = counter{expires: now + int64(ttl)}
	}
	e.n += delta
	c.counters[key] = e
	return e.n, time.Duration(e.expires - now), nil
}

// Extend implements cache.Counter.
func (c *Cache) Extend(_ context.Context, key string, ttl time.Duration) error {
	now := time.Now().UnixNano()
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.counters[key]; ok && now < e.expires && e.expires < now+int64(ttl) {
		e.expires = now + int64(ttl)
		c.counters[key] = e
	}
	return nil
}

// sweepCounters drops expired counters; the caller holds mu.
func (c *Cache) sweepCounters(now int64) {
	for k, e := range c.counters {
		if now >= e.expires {
			delete(c.counters, k)
		}
	}
	c.swept = now
}
