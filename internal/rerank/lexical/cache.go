package lexical

import (
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// The retrieval pipeline reranks the same popular chunks query after query,
// and analyzing their fields was most of a rerank. A Reranker therefore
// keeps the analyses of the docs it scored lately, keyed by the fields
// themselves: an analysis is a function of the doc's text alone, so an entry
// can never be stale (a changed chunk is another key), and two chunks with
// the same text share one.
const (
	maxCachedDocs  = 4096
	maxCachedBytes = 16 << 20
)

// docKey is a doc's fields, the key of its analysis.
type docKey struct{ title, heading, text string }

type cachedBag struct {
	an   *bag
	size int
}

// bagCache is a least-recently-used cache of analyses bounded in entries
// (by the LRU) and in bytes (kept here). Bags are shared once cached and
// must not be changed.
type bagCache struct {
	mu       sync.Mutex
	lru      *simplelru.LRU[docKey, cachedBag]
	used     int
	maxBytes int
}

func newBagCache(maxDocs, maxBytes int) *bagCache {
	c := &bagCache{maxBytes: maxBytes}
	c.lru, _ = simplelru.NewLRU(maxDocs, func(_ docKey, e cachedBag) { c.used -= e.size })
	return c
}

// analyze gives every doc of docs its analysis, from the cache where it has
// one, and caches the ones it had to make.
func (c *bagCache) analyze(docs []Doc) {
	missed := 0
	c.mu.Lock()
	for i := range docs {
		d := &docs[i]
		if d.an != nil {
			continue
		}
		if e, ok := c.lru.Get(docKey{d.Title, d.Heading, d.Text}); ok {
			d.an = e.an
		} else {
			missed++
		}
	}
	c.mu.Unlock()
	if missed == 0 {
		return
	}
	made := make([]int, 0, missed)
	for i := range docs {
		if docs[i].an == nil {
			docs[i].analysis()
			made = append(made, i)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, i := range made {
		d := &docs[i]
		n := bagSize(d)
		if n > c.maxBytes/16 {
			continue // one huge doc would push out many
		}
		k := docKey{d.Title, d.Heading, d.Text}
		c.lru.Remove(k) // a concurrent miss may have put it: the callback subtracts its size
		c.lru.Add(k, cachedBag{an: d.an, size: n})
		c.used += n
		for c.used > c.maxBytes {
			if _, _, ok := c.lru.RemoveOldest(); !ok {
				break
			}
		}
	}
}

// bagSize estimates the bytes an entry holds: the fields, the text's terms
// and the counts map.
func bagSize(d *Doc) int {
	n := len(d.Title) + len(d.Heading) + len(d.Text) + 16*cap(d.an.text) + 48*len(d.an.tf) + 128
	for _, t := range d.an.text {
		n += len(t)
	}
	return n
}
