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

func (c *toolResults) put(thread, call, content, hash string, now time.Time) {
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
	c.m[toolKey{thread, call}] = toolEntry{content: content, hash: hash, at: now}
}

// get returns the content stored under thread and call if its hash is hash.
func (c *toolResults) get(thread, call, hash string, now time.Time) (string, bool) {
	if hash == "" {
		return "", false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[toolKey{thread, call}]
	if !ok || e.hash != hash || now.Sub(e.at) > toolResultTTL {
		return "", false
	}
	return e.content, true
}

// toolResultContents returns the stored results of the turn's tool messages
// by tool call id: from memory when this process stored them (see
// toolResults), the rest from the database in one statement.
func (a *Chat) toolResultContents(ctx context.Context, threadID string, turn []TurnMessage) (map[string]string, error) {
	out := map[string]string{}
	var missing []string
	now := time.Now()
	for _, m := range turn {
		if !m.ToolRef {
			continue
		}
		if content, ok := a.results.get(threadID, m.ToolCallID, m.ToolHash, now); ok {
			out[m.ToolCallID] = content
			continue
		}
		missing = append(missing, m.ToolCallID)
	}
	if len(missing) == 0 {
		return out, nil
	}
	stored, err := a.D.DB.ToolResultContents(ctx, threadID, missing)
	for id, content := range stored {
		out[id] = content
	}
	return out, err
}
