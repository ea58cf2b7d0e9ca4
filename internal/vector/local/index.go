package local

import (
	"math"
	"runtime"
	"sort"
	"sync"

	"github.com/lorekb/lore/internal/vector"
)

// record is one stored chunk, without its vector (which lives in the site's
// contiguous vector array at row).
type record struct {
	id                   string
	site, doc, version   int64
	index                int
	title, heading, text string

	row   int    // position in site.rows and site.vecs
	kwID  uint32 // document number in the site's keyword index
	kwLen int32  // number of keyword tokens
}

func (r *record) hit(score float32) vector.Hit {
	return vector.Hit{
		ChunkID: r.id, SiteID: r.site, DocumentID: r.doc, Version: r.version, ChunkIndex: r.index,
		Title: r.title, Heading: r.heading, Text: r.text, Score: score,
	}
}

// site holds one site's chunks: the partition searches scan, so no query can
// reach another site's data.
type site struct {
	rows []*record
	vecs vecTable // one normalised vector per row (vectable.go)
	kw   keywordIndex
	// ann is the approximate index, present while the site has at least
	// annCfg.minRows rows (ivf.go); nil means searches scan exactly.
	ann    *ivf
	annCfg *annConfig
}

// add appends r with its normalised vector; p, when not nil, is the work
// on the chunk done before the store's lock was taken (prepare).
func (s *site) add(r *record, vec []float32, p *prepared) {
	r.row = len(s.rows)
	s.rows = append(s.rows, r)
	s.vecs.dim = len(vec)
	s.vecs.push(vec)
	if p == nil {
		// Recovery: the terms now, the code (if any list needs it) when
		// the row is placed.
		p = &prepared{}
		p.tf, p.terms = termFreqs(r.title, r.heading, r.text)
	}
	s.kw.add(r, p.tf, p.terms)
	switch {
	case s.ann != nil:
		s.ann.add(r.row, vec, p.code, p.scale, p.near, &s.vecs)
	case s.annCfg != nil && len(s.rows) >= s.annCfg.minRows:
		s.ann = newIVF(&s.vecs, len(s.rows), len(vec), s.annCfg)
	}
}

// remove deletes r by moving the last row into its place, keeping the vector
// array dense so scans touch only live chunks.
func (s *site) remove(r *record, dim int) {
	last := len(s.rows) - 1
	if s.ann != nil {
		s.ann.remove(r.row, s.vecs.row(r.row))
		s.ann.move(last, r.row)
	}
	if r.row != last {
		moved := s.rows[last]
		s.rows[r.row] = moved
		moved.row = r.row
		s.vecs.copyRow(r.row, last)
	}
	s.rows[last] = nil
	s.rows = s.rows[:last]
	s.vecs.pop()
	if cap(s.rows) > 1024 && cap(s.rows) > 4*len(s.rows) {
		// Give memory back after large deletions (the vector table
		// does so itself).
		s.rows = append([]*record(nil), s.rows...)
	}
	s.kw.remove(r)
	if s.ann != nil && len(s.rows) < s.annCfg.minRows/2 {
		s.ann = nil
	}
}

// candidate is a scored row.
type candidate struct {
	score float32
	row   int32
}

// topK keeps the k best candidates in a min-heap (worst at the root).
type topK struct {
	k    int
	heap []candidate
}

// push offers a candidate.
func (t *topK) push(score float32, row int32) {
	h := t.heap
	if len(h) < t.k {
		h = append(h, candidate{score, row})
		// Sift up.
		i := len(h) - 1
		for i > 0 {
			p := (i - 1) / 2
			if h[p].score <= h[i].score {
				break
			}
			h[p], h[i] = h[i], h[p]
			i = p
		}
		t.heap = h
		return
	}
	if score <= h[0].score {
		return
	}
	h[0] = candidate{score, row}
	// Sift down.
	i, n := 0, len(h)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h[r].score < h[l].score {
			m = r
		}
		if h[i].score <= h[m].score {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// floor is the score a candidate must beat to enter a full heap.
func (t *topK) floor() float32 {
	if len(t.heap) < t.k {
		return float32(math.Inf(-1))
	}
	return t.heap[0].score
}

// rowsPerWorker is the scan size below which a second goroutine costs more
// than it saves.
const rowsPerWorker = 8192

// scan returns the k best rows of s for the normalised query q with scores at
// least threshold, best first. It splits large sites over the available
// cores.
func (s *site) scan(q []float32, dim, k int, threshold float32, maxWorkers int) []candidate {
	n := len(s.rows)
	if n == 0 || k <= 0 {
		return nil
	}
	if s.ann != nil {
		return s.ann.search(s, q, k, threshold, s.annCfg.budget(n, k), maxWorkers)
	}
	workers := min(maxWorkers, (n+rowsPerWorker-1)/rowsPerWorker)
	workers = max(workers, 1)
	heaps := make([]topK, workers)
	var wg sync.WaitGroup
	per := (n + workers - 1) / workers
	for w := 0; w < workers; w++ {
		from, to := w*per, min((w+1)*per, n)
		heaps[w] = topK{k: k, heap: make([]candidate, 0, min(k, to-from))}
		if w == workers-1 {
			s.scanRows(q, dim, from, to, threshold, &heaps[w])
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.scanRows(q, dim, from, to, threshold, &heaps[w])
		}()
	}
	wg.Wait()
	return s.best(heaps, k)
}

// best merges per-worker heaps into the k best candidates, best first (ties
// by chunk ID, so results do not depend on the split).
func (s *site) best(heaps []topK, k int) []candidate {
	var all []candidate
	for _, h := range heaps {
		all = append(all, h.heap...)
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].score != all[j].score {
			return all[i].score > all[j].score
		}
		return s.rows[all[i].row].id < s.rows[all[j].row].id
	})
	if len(all) > k {
		all = all[:k]
	}
	return all
}

// scanRows scores rows [from, to) of s into h, a contiguous run of the
// vector table at a time.
func (s *site) scanRows(q []float32, dim, from, to int, threshold float32, h *topK) {
	s.vecs.rows(from, to, func(first int, vecs []float32) {
		scanRange(vecs, q, dim, first, threshold, h)
	})
}

// scanRange scores the rows in vecs, numbered from first. This is the hot
// loop: no allocation, one dot product per row and a heap update only for
// rows that can enter it.
func scanRange(vecs, q []float32, dim, first int, threshold float32, h *topK) {
	floor := max(threshold, h.floor())
	full := len(h.heap) == h.k
	for i := 0; (i+1)*dim <= len(vecs); i++ {
		score := dot(q, vecs[i*dim:(i+1)*dim])
		if score < floor || (full && score == floor) {
			continue
		}
		h.push(score, int32(first+i))
		if len(h.heap) == h.k {
			full = true
			floor = max(threshold, h.heap[0].score)
		}
	}
}

// defaultWorkers is how many goroutines one search may use.
func defaultWorkers() int { return max(1, runtime.GOMAXPROCS(0)) }

// normalize returns v scaled to unit length in a new slice (all zeros when v
// is zero), so stored dot products are cosines.
func normalize(v []float32) []float32 {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	out := make([]float32, len(v))
	if sum == 0 {
		return out
	}
	inv := 1 / math.Sqrt(sum)
	for i, x := range v {
		out[i] = float32(float64(x) * inv)
	}
	return out
}
