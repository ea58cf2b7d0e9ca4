// Package chatbudget counts the model tokens each site's chat uses per UTC
// day, so public chat cannot spend the operator's model key without bound.
// The worker adds the usage of every stored turn; the API refuses new turns
// of a site whose count has reached its budget until the next UTC midnight.
// The count lives in the cache backend (cache.Counter): Redis when
// REDIS_URL is set, so the API and worker processes share it; otherwise the
// process's memory, which the embedded default (API and worker in one
// process) shares.
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
