package retrieve

import (
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/lorekb/lore/internal/analyze"
	"github.com/lorekb/lore/internal/vector"
)

// Every search judges its shown sections by the words of the recall pool's
// chunks (sectionWords), and popular chunks come back search after search:
// the process keeps each chunk's words, keyed by its title, heading and
// text, of which they are a function, so an entry can never be stale (as
// the lexical reranker keeps its analyses, internal/rerank/lexical).
const (
	maxCachedChunks     = 4096
	maxCachedChunkBytes = 16 << 20
)

// chunkKey is a chunk's fields, the key of its words.
type chunkKey struct{ title, heading, text string }

type cachedWords struct {
	words []string
	size  int
}

// chunkWords is the process's cache of chunk words.
var chunkWords = newWordCache(maxCachedChunks, maxCachedChunkBytes)

// wordCache is a least-recently-used cache of chunk words bounded in
// entries (by the LRU) and in bytes (kept here). Word lists are shared
// once cached and must not be changed.
type wordCache struct {
	mu       sync.Mutex
	lru      *simplelru.LRU[chunkKey, cachedWords]
	used     int
	maxBytes int
}

func newWordCache(maxChunks, maxBytes int) *wordCache {
	c := &wordCache{maxBytes: maxBytes}
	c.lru, _ = simplelru.NewLRU(maxChunks, func(_ chunkKey, e cachedWords) { c.used -= e.size })
	return c
}

// words is the distinct words (analyze.EachWord) of h's title, heading and
// text, in the order they first come, from the cache where it has them.
func (c *wordCache) words(h vector.Hit) []string {
	k := chunkKey{h.Title, h.Heading, h.Text}
	c.mu.Lock()
	e, ok := c.lru.Get(k)
	c.mu.Unlock()
	if ok {
		return e.words
	}
	seen := map[string]bool{}
	e.size = len(k.title) + len(k.heading) + len(k.text) + 128
	for _, f := range []string{h.Title, h.Heading, h.Text} {
		analyze.EachWord(f, func(t string) {
			if !seen[t] {
				seen[t] = true
				e.words = append(e.words, t)
				e.size += 16 + len(t)
			}
		})
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.size > c.maxBytes/16 {
		return e.words // one huge chunk would push out many
	}
	c.lru.Remove(k) // a concurrent miss may have put it: the callback subtracts its size
	c.lru.Add(k, e)
	c.used += e.size
	for c.used > c.maxBytes {
		if _, _, ok := c.lru.RemoveOldest(); !ok {
			break
		}
	}
	return e.words
}
