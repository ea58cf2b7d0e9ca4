package api

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/internal/cache"
	"github.com/lorekb/lore/internal/cache/memory"
)

// attemptLimit bounds guesses of one kind (site passwords, admin logins) per
// key. Attempts are reserved before they are evaluated, atomically in the
// cache backend (cache.Counter: memory, or Redis when REDIS_URL is set, so
// restarts and several API processes share the count): of 150 parallel
// guesses only max are ever evaluated.
type attemptLimit struct {
	name   string
	max    int64
	window time.Duration
	// backoff doubles the lock-out for each lock-out of the key in the last
	// day, up to maxBackoffShift doublings.
	backoff bool
}

// maxBackoffShift caps backoff at 8 windows, so that someone who keeps
// locking an account out cannot lock its owner out for days.
const maxBackoffShift = 3

// strikeWindow is how long lock-outs are remembered for backoff.
const strikeWindow = 24 * time.Hour

// fallbackCounters holds a process-local counter for servers whose cache
// cannot count (tests build many servers and must not share counts).
var fallbackCounters sync.Map // *Server → *memory.Cache

// limitStore is a cache that counts: both cache backends.
type limitStore interface {
	cache.Counter
	Delete(ctx context.Context, keys ...string) error
}

// counter is where limits keep their state: the server's cache.
func (s *Server) counter() limitStore {
	if c, ok := s.d.Cache.(limitStore); ok {
		return c
	}
	v, _ := fallbackCounters.LoadOrStore(s, memory.New(1))
	return v.(limitStore)
}

func (l attemptLimit) key(k string) string { return "limit:" + l.name + ":" + k }

// reserve counts one attempt of key before it is evaluated. It returns how
// long key must wait when the attempt is over the limit (0: go ahead). The
// first refused attempt locks the key for a whole window from now (doubled
// per earlier lock-out that day when backoff is on).
func (s *Server) reserve(ctx context.Context, l attemptLimit, k string) (time.Duration, error) {
	ctr := s.counter()
	n, left, err := ctr.Incr(ctx, l.key(k), 1, l.window)
	if err != nil || n <= l.max {
		return 0, err
	}
	if n == l.max+1 {
		lock := l.window
		if l.backoff {
			strikes, _, err := ctr.Incr(ctx, l.key("strikes:"+k), 1, strikeWindow)
			if err != nil {
				return 0, err
			}
			lock = l.window << min(strikes-1, maxBackoffShift)
		}
		if err := ctr.Extend(ctx, l.key(k), lock); err != nil {
			return 0, err
		}
		left = max(left, lock)
	}
	return left, nil
}

// forgive undoes the reservation of an attempt that succeeded; all forgets
// every earlier failure of key too.
func (s *Server) forgive(ctx context.Context, l attemptLimit, k string, all bool) error {
	if all {
		return s.counter().Delete(ctx, l.key(k))
	}
	_, _, err := s.counter().Incr(ctx, l.key(k), -1, l.window)
	return err
}

// tooManyAttempts is the 429 of a locked key, with Retry-After.
func tooManyAttempts(c *fiber.Ctx, wait time.Duration, what string) error {
	secs := int(wait/time.Second) + 1
	c.Set(fiber.HeaderRetryAfter, strconv.Itoa(secs))
	return Errf(http.StatusTooManyRequests, "too many %s; try again in %d minutes", what, (secs+59)/60)
}
