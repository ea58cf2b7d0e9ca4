package local

import (
	"math"
	"sort"
	"strings"

	"github.com/lorekb/lore/internal/analyze"
	"github.com/lorekb/lore/internal/vector"
)

// BM25 parameters: the usual defaults.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// posting is one occurrence list entry: a document number and the term's
// frequency in it.
type posting struct {
	id uint32
	tf uint32
}

// term is a term's postings. Postings of removed chunks stay until the next
// cleanup (df counts only live ones), so a delete costs O(terms of the chunk)
// instead of a scan of every long postings list.
type term struct {
	df       int32
	postings []posting
}

// keywordIndex is a per-site inverted index for BM25 over title, heading and
// text.
type keywordIndex struct {
	terms    map[string]*term
	docs     map[uint32]*record // live documents by number
	nextID   uint32
	totalLen int64
	postings int // all postings, live or dead
	dead     int // postings of removed documents
}

// add indexes r under a new document number, with its term frequencies
// and term count from termFreqs.
func (ix *keywordIndex) add(r *record, tf map[string]uint32, n int) {
	if ix.terms == nil {
		ix.terms = make(map[string]*term)
		ix.docs = make(map[uint32]*record)
	}
	r.kwID = ix.nextID
	ix.nextID++
	r.kwLen = int32(n)
	ix.docs[r.kwID] = r
	ix.totalLen += int64(n)
	for w, c := range tf {
		t := ix.terms[w]
		if t == nil {
			t = &term{}
			// Clone: w may be a substring of the chunk text, which the
			// index must not keep alive after the chunk is gone.
			ix.terms[strings.Clone(w)] = t
		}
		t.df++
		t.postings = append(t.postings, posting{id: r.kwID, tf: c})
		ix.postings++
	}
}

// remove unindexes r.
func (ix *keywordIndex) remove(r *record) {
	if _, ok := ix.docs[r.kwID]; !ok {
		return
	}
	delete(ix.docs, r.kwID)
	ix.totalLen -= int64(r.kwLen)
	tf, _ := termFreqs(r.title, r.heading, r.text)
	for w := range tf {
		t := ix.terms[w]
		if t == nil {
			continue
		}
		t.df--
		if t.df <= 0 {
			ix.postings -= len(t.postings)
			ix.dead -= len(t.postings) - 1
			delete(ix.terms, w)
			continue
		}
		ix.dead++
	}
	if ix.dead > 1024 && ix.dead > ix.postings/2 {
		ix.cleanup()
	}
}

// cleanup drops the postings of removed documents.
func (ix *keywordIndex) cleanup() {
	for _, t := range ix.terms {
		live := t.postings[:0]
		for _, p := range t.postings {
			if _, ok := ix.docs[p.id]; ok {
				live = append(live, p)
			}
		}
		clear(t.postings[len(live):])
		if cap(live) > 2*len(live)+8 {
			live = append([]posting(nil), live...)
		}
		t.postings = live
	}
	ix.postings -= ix.dead
	ix.dead = 0
}

// scored is a keyword search candidate.
type scored struct {
	r     *record
	score float32
}

// search returns the k best documents for query by BM25, best first.
func (ix *keywordIndex) search(query string, k int) []scored {
	n := len(ix.docs)
	if n == 0 || k <= 0 {
		return nil
	}
	avg := float64(ix.totalLen) / float64(n)
	if avg == 0 {
		avg = 1
	}
	acc := make(map[uint32]float64)
	seen := make(map[string]bool)
	analyze.Each(query, func(w string) {
		if seen[w] {
			return
		}
		seen[w] = true
		t := ix.terms[w]
		if t == nil || t.df <= 0 {
			return
		}
		df := float64(t.df)
		idf := math.Log(1 + (float64(n)-df+0.5)/(df+0.5))
		for _, p := range t.postings {
			r, ok := ix.docs[p.id]
			if !ok {
				continue
			}
			tf := float64(p.tf)
			norm := bm25K1 * (1 - bm25B + bm25B*float64(r.kwLen)/avg)
			acc[p.id] += idf * tf * (bm25K1 + 1) / (tf + norm)
		}
	})
	out := make([]scored, 0, len(acc))
	for id, s := range acc {
		out = append(out, scored{r: ix.docs[id], score: float32(s)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].score != out[j].score {
			return out[i].score > out[j].score
		}
		return out[i].r.id < out[j].r.id
	})
	if len(out) > k {
		out = out[:k]
	}
	return out
}

// termFreqs counts the keyword terms of a chunk's title, heading and text
// with their field weights (vector.EachFieldTerm: BM25F with the fields
// folded into one weighted bag).
func termFreqs(title, heading, text string) (map[string]uint32, int) {
	tf := make(map[string]uint32)
	n := 0
	vector.EachFieldTerm(title, heading, text, func(w string, weight int) {
		tf[w] += uint32(weight)
		n += weight
	})
	return tf, n
}

// stats returns the index's statistics for terms.
func (ix *keywordIndex) stats(terms []string) vector.KeywordStats {
	st := vector.KeywordStats{Docs: len(ix.docs), DocFreq: make(map[string]int, len(terms))}
	if st.Docs > 0 {
		st.AvgLen = float64(ix.totalLen) / float64(st.Docs)
	}
	for _, w := range terms {
		if t := ix.terms[w]; t != nil && t.df > 0 {
			st.DocFreq[w] = int(t.df)
		}
	}
	return st
}
