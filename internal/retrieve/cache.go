package retrieve

import (
	"github.com/lorekb/lore/internal/analyze"
	"github.com/lorekb/lore/internal/lru"
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

// chunkWords is the process's cache of chunk words. Word lists are shared
// once cached and must not be changed.
var chunkWords = lru.New[chunkKey, []string](maxCachedChunks, maxCachedChunkBytes)

// wordsOf is the distinct words (analyze.EachWord) of h's title, heading
// and text, in the order they first come, from the cache where it has them.
func wordsOf(h vector.Hit) []string {
	k := chunkKey{h.Title, h.Heading, h.Text}
	if words, ok := chunkWords.Get(k); ok {
		return words
	}
	var words []string
	seen := map[string]bool{}
	size := len(k.title) + len(k.heading) + len(k.text) + 128
	for _, f := range []string{h.Title, h.Heading, h.Text} {
		analyze.EachWord(f, func(t string) {
			if !seen[t] {
				seen[t] = true
				words = append(words, t)
				size += 16 + len(t)
			}
		})
	}
	chunkWords.Add(k, words, size)
	return words
}
