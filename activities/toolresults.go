package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// toolResults keeps the search results this process stored in the last few
// minutes, so the turn's next model call and Persist, which in local mode
// run in the same process moments later, read them from memory instead of
// the database (two SELECTs of the result per turn, and their decoding).
//
// An entry is used only when its content hash equals the one the workflow
// recorded with the search (TurnMessage.ToolHash): a search retried in
// another process after this one stored it cannot be served stale, and a
// run recorded before the hash existed reads the database as before. The
// database row stays the source of truth (the tool-result endpoint and other
// processes read it).
type toolResults struct {
	recent[toolKey, toolEntry]
}

type toolKey struct{ thread, call string }

type toolEntry struct {
	content, hash string
	parsed        storedResult // content decoded, for formatting without decoding again
}

// toolResultTTL is how long an entry is served: far longer than a turn's
// model call after its search, short enough that a stale entry is not used.
const toolResultTTL = 2 * time.Minute

// maxToolResults bounds the cache (the database still answers past it).
const maxToolResults = maxRecent

// recent is what this process wrote or read a moment ago, for the next
// steps of the same turn, which in local mode run in this process: at most
// maxRecent entries (least recently used out), each served for a given time
// after it was put. It is made on first use, so a zero Chat works.
type recent[K comparable, V any] struct {
	once  sync.Once
	cache *lru.Cache[K, stamped[V]]
}

type stamped[V any] struct {
	v  V
	at time.Time
}

// maxRecent bounds each recent cache. An entry is needed only from one step
// of a turn to the next (seconds), so a few hundred cover the turns a
// process has in flight; an entry can hold a thread's messages or a search
// result of tens of kilobytes, so thousands would keep 100 MB resident.
const maxRecent = 512

func (c *recent[K, V]) entries() *lru.Cache[K, stamped[V]] {
	c.once.Do(func() { c.cache, _ = lru.New[K, stamped[V]](maxRecent) })
	return c.cache
}

func (c *recent[K, V]) add(k K, v V, now time.Time) { c.entries().Add(k, stamped[V]{v, now}) }

// lookup returns the entry under k if it was put less than ttl before now.
func (c *recent[K, V]) lookup(k K, ttl time.Duration, now time.Time) (V, bool) {
	e, ok := c.entries().Get(k)
	if !ok || now.Sub(e.at) > ttl {
		var zero V
		return zero, false
	}
	return e.v, true
}

// contentHash is the hash recorded for a stored result (SearchResult.ContentHash).
func contentHash(content string) string {
	h := sha256.Sum256([]byte(content))
	return hex.EncodeToString(h[:16])
}

func (c *toolResults) put(thread, call, content, hash string, parsed storedResult, now time.Time) {
	c.add(toolKey{thread, call}, toolEntry{content: content, hash: hash, parsed: parsed}, now)
}

// get returns the entry stored under thread and call if its hash is hash and
// it is younger than toolResultTTL.
func (c *toolResults) get(thread, call, hash string, now time.Time) (toolEntry, bool) {
	if hash == "" {
		return toolEntry{}, false
	}
	e, ok := c.lookup(toolKey{thread, call}, toolResultTTL, now)
	if !ok || e.hash != hash {
		return toolEntry{}, false
	}
	return e, true
}

// toolResultTexts returns, for each message of the turn, its tool result as
// the model reads it (FormatToolResult, numbered from the message's
// SourceStart; "" for a message without ToolRef): from memory when this
// process stored the result (see toolResults), the rest from the database in
// one statement.
func (a *Chat) toolResultTexts(ctx context.Context, threadID string, turn []TurnMessage) ([]string, error) {
	out := make([]string, len(turn))
	var missing []string
	var fromDB []int
	now := time.Now()
	for i, m := range turn {
		if !m.ToolRef {
			continue
		}
		if e, ok := a.results.get(threadID, m.ToolCallID, m.ToolHash, now); ok {
			out[i] = formatResult(e.parsed, m.SourceStart)
			continue
		}
		missing = append(missing, m.ToolCallID)
		fromDB = append(fromDB, i)
	}
	if len(missing) == 0 {
		return out, nil
	}
	stored, err := a.DB.ToolResultContents(ctx, threadID, missing)
	if err != nil {
		return nil, err
	}
	for _, i := range fromDB {
		out[i] = FormatToolResult(stored[turn[i].ToolCallID], turn[i].SourceStart)
	}
	return out, nil
}
