package api

import (
	"context"
	"net/http"
	"strconv"
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
	// lock is how long the first refused attempt locks the key (0: window).
	lock time.Duration
	// backoff doubles the lock-out for each lock-out of the key in the last
	// day, up to maxShift doublings (0: maxBackoffShift).
	backoff  bool
	maxShift int
}

// maxBackoffShift caps backoff at 8 windows, so that someone who keeps
// locking an account out cannot lock its owner out for days.
const maxBackoffShift = 3

// strikeWindow is how long lock-outs are remembered for backoff.
const strikeWindow = 24 * time.Hour

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
	s.fallback.counterOnce.Do(func() { s.fallback.counter = memory.New(1) })
	return s.fallback.counter
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
		if l.lock > 0 {
			lock = l.lock
		}
		if l.backoff {
			strikes, _, err := ctr.Incr(ctx, l.key("strikes:"+k), 1, strikeWindow)
			if err != nil {
				return 0, err
			}
			shift := int64(maxBackoffShift)
			if l.maxShift > 0 {
				shift = int64(l.maxShift)
			}
			lock <<= min(strikes-1, shift)
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

// loginLimit holds the limits of admin logins. An account is locked for
// one client address after a few failures from it (pair), so failures from
// one address do not keep the account's owner out elsewhere; failures from
// every address together lock it for everyone only at a much higher count
// (account), with a short lock-out that grows with each one that day, so
// guessing from many addresses stays bounded. ip bounds one address
// guessing at many accounts.
type loginLimit struct {
	ip, pair, account attemptLimit
}

// accountBackoffShift caps the account-wide lock-out at 64 locks.
const accountBackoffShift = 6

// loginLimits are the admin login limits; accounts are lower-cased emails.
func (s *Server) loginLimits() loginLimit {
	cfg := s.d.Cfg
	w := cfg.LoginWindow
	if w <= 0 {
		w = 15 * time.Minute
	}
	lock := cfg.LoginAccountLock
	if lock <= 0 {
		lock = time.Minute
	}
	return loginLimit{
		ip:   attemptLimit{name: "login-ip", max: int64(max(cfg.LoginIPMaxFailures, 1)), window: w, backoff: true},
		pair: attemptLimit{name: "login-account-ip", max: int64(max(cfg.LoginMaxFailures, 1)), window: w, backoff: true},
		account: attemptLimit{name: "login-account", max: int64(max(cfg.LoginAccountMaxFailures, cfg.LoginMaxFailures, 1)),
			window: w, lock: lock, backoff: true, maxShift: accountBackoffShift},
	}
}

// reserveLogin reserves one login attempt for account from the client
// address ip before the password is checked (unknown accounts count too,
// so a 429 says nothing about them). It returns the 429 of the first limit
// that refuses. Only attempts past the address's own limits count towards
// the account-wide one, so a single address cannot lock the account for
// others; an attempt the account-wide limit refuses is not held against
// the pair.
func (s *Server) reserveLogin(c *fiber.Ctx, l loginLimit, account, ip string) error {
	ctx := c.UserContext()
	pairKey := account + "|" + ip
	for _, r := range []struct {
		lim attemptLimit
		key string
	}{{l.ip, ip}, {l.pair, pairKey}, {l.account, account}} {
		wait, err := s.reserve(ctx, r.lim, r.key)
		if err != nil {
			return err
		}
		if wait > 0 {
			if r.lim.name == l.account.name {
				if err := s.forgive(ctx, l.pair, pairKey, false); err != nil {
					return err
				}
			}
			return tooManyAttempts(c, wait, "failed login attempts")
		}
	}
	return nil
}

// forgiveLogin undoes the reservation of a login that succeeded. It forgets
// the earlier failures of the pair too, not those of the address (one known
// password must not reset the count of guesses at other accounts) nor the
// account-wide ones (made from elsewhere).
func (s *Server) forgiveLogin(ctx context.Context, l loginLimit, account, ip string) error {
	if err := s.forgive(ctx, l.pair, account+"|"+ip, true); err != nil {
		return err
	}
	if err := s.forgive(ctx, l.account, account, false); err != nil {
		return err
	}
	return s.forgive(ctx, l.ip, ip, false)
}
