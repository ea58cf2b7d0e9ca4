package lexical

import "github.com/lorekb/lore/internal/lru"

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

// bagCache keeps analyses, bounded in entries and bytes. Bags are shared
// once cached and must not be changed.
type bagCache = lru.Cache[docKey, *bag]

func newBagCache(maxDocs, maxBytes int) *bagCache { return lru.New[docKey, *bag](maxDocs, maxBytes) }

// analyzeCached gives every doc of docs its analysis, from c where it has
// one, and adds the ones it had to make.
func analyzeCached(c *bagCache, docs []Doc) {
	for i := range docs {
		d := &docs[i]
		if d.an != nil {
			continue
		}
		k := docKey{d.Title, d.Heading, d.Text}
		if an, ok := c.Get(k); ok {
			d.an = an
			continue
		}
		d.analysis()
		c.Add(k, d.an, bagSize(d))
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
