package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"
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
	mu sync.Mutex
	m  map[toolKey]toolEntry
}

type toolKey struct{ thread, call string }

type toolEntry struct {
	content, hash string
	parsed        storedResult // content decoded, for formatting without decoding again
	at            time.Time
}

// toolResultTTL is how long an entry is kept: far longer than a turn's model
// call after its search, short enough that the map stays small.
const toolResultTTL = 2 * time.Minute

// maxToolResults bounds the map; past it, expired entries are swept, and if
// none expired the map is cleared (the database still answers).
const maxToolResults = 4096

// contentHash is the hash recorded for a stored result (SearchResult.ContentHash).
func contentHash(content string) string {
	h := sha256.Sum256([]byte(content))
	return hex.EncodeToString(h[:16])
}

func (c *toolResults) put(thread, call, content, hash string, parsed storedResult, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[toolKey]toolEntry)
	}
	if len(c.m) >= maxToolResults {
		for k, e := range c.m {
			if now.Sub(e.at) > toolResultTTL {
				delete(c.m, k)
			}
		}
		if len(c.m) >= maxToolResults {
			clear(c.m)
		}
	}
	c.m[toolKey{thread, call}] = toolEntry{content: content, hash: hash, parsed: parsed, at: now}
}

// get returns the entry stored under thread and call if its hash is hash.
func (c *toolResults) get(thread, call, hash string, now time.Time) (toolEntry, bool) {
	if hash == "" {
		return toolEntry{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[toolKey{thread, call}]
	if !ok || e.hash != hash || now.Sub(e.at) > toolResultTTL {
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
	stored, err := a.D.DB.ToolResultContents(ctx, threadID, missing)
	if err != nil {
		return nil, err
	}
	for _, i := range fromDB {
		out[i] = FormatToolResult(stored[turn[i].ToolCallID], turn[i].SourceStart)
	}
	return out, nil
}
