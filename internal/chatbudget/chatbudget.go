// Package chatbudget counts the model tokens each site's chat uses per UTC
// day, so public chat cannot spend the operator's model key without bound.
// The worker adds the usage of every stored turn; the API refuses new turns
// of a site whose count has reached its budget until the next UTC midnight.
// The count lives in the cache backend (cache.Counter): Redis when
// REDIS_URL is set, so the API and worker processes share it; otherwise the
// process's memory, which the embedded default (API and worker in one
// process) shares.
//
// A check of the count alone lets every turn that starts before the first
// one is stored pass, so many concurrent turns (or one long one) overrun the
// budget. A turn therefore reserves an estimate of its tokens before its
// model calls (Reserve), which counts at once and is refused when it would
// take the count past the budget; the reservation is released (Release)
// once the turn's real usage has been added.
package chatbudget

import (
	"context"
	"strconv"
	"time"

	"github.com/lorekb/lore/internal/cache"
)

// keep is how long a day's count outlives the day, so a turn stored just
// after midnight never restarts yesterday's key.
const keep = time.Hour

// Scope names whose budget a turn spends: its site's, or for a turn of no
// site (a search over the tenant's sites) its tenant's.
func Scope(siteID, tenantID int64) string {
	if siteID != 0 {
		return "s" + strconv.FormatInt(siteID, 10)
	}
	return "t" + strconv.FormatInt(tenantID, 10)
}

// key is the counter of a scope's tokens on the UTC day of now.
func key(scope string, now time.Time) string {
	return "chat-budget:" + scope + ":" + now.UTC().Format("2006-01-02")
}

// UntilReset is the time from now to the next UTC midnight, when every
// site's count starts again from zero.
func UntilReset(now time.Time) time.Duration {
	now = now.UTC()
	y, m, d := now.Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC).Sub(now)
}

// Add counts tokens used by a turn of the scope (see Scope; now: when the
// turn was stored).
func Add(ctx context.Context, c cache.Counter, scope string, tokens int64, now time.Time) error {
	if tokens <= 0 {
		return nil
	}
	_, _, err := c.Incr(ctx, key(scope, now), tokens, UntilReset(now)+keep)
	return err
}

// Used returns the tokens the scope's chat has used today (UTC).
func Used(ctx context.Context, c cache.Counter, scope string, now time.Time) (int64, error) {
	n, _, err := c.Incr(ctx, key(scope, now), 0, UntilReset(now)+keep)
	return n, err
}

// Estimate is the tokens reserved for a turn whose prompt (user message,
// history and instructions) has promptChars characters and that may call
// the model passes times: each call sends the prompt again. A token is
// taken as two characters, between English text (about four) and CJK text
// (about one); the system prompt, retrieved passages and the answer come on
// top, so this is a floor of the turn's cost, not a bound.
func Estimate(promptChars, passes int) int64 {
	return (int64(max(promptChars, 0))/2 + 1) * int64(max(passes, 1))
}

// Reservation is tokens counted ahead for one turn, on the day it started.
type Reservation struct {
	key    string
	tokens int64
	ttl    time.Duration
}

// Reserve counts tokens for a turn of the scope ahead of its model calls,
// unless the scope's count (used tokens and other turns' reservations) would
// then exceed budget: then nothing is counted and ok is false. The caller
// must Release a reservation it got once the turn's usage is counted (or the
// turn did not run).
func Reserve(ctx context.Context, c cache.Counter, scope string, tokens, budget int64, now time.Time) (r Reservation, ok bool, err error) {
	r = Reservation{key: key(scope, now), tokens: max(tokens, 0), ttl: UntilReset(now) + keep}
	n, _, err := c.Incr(ctx, r.key, r.tokens, r.ttl)
	if err != nil {
		return Reservation{}, false, err
	}
	if n > budget {
		if r.tokens > 0 {
			_, _, err = c.Incr(ctx, r.key, -r.tokens, r.ttl)
		}
		return Reservation{}, false, err
	}
	return r, true, nil
}

// Release takes a reservation back (the zero Reservation is a no-op). It
// counts on the reservation's own day, so a turn that runs past midnight
// never lowers the new day's count.
func (r Reservation) Release(ctx context.Context, c cache.Counter) error {
	if r.tokens <= 0 {
		return nil
	}
	_, _, err := c.Incr(ctx, r.key, -r.tokens, r.ttl)
	return err
}

// Tokens is the reservation's size.
func (r Reservation) Tokens() int64 { return r.tokens }
