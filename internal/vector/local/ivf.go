package local

import (
	"math"
	"sort"
	"sync"
)

// The approximate index of a large site: an inverted file (IVF) of its
// vectors. Rows are grouped into lists around centroids (the normalised mean
// of the list's vectors); a search ranks the centroids against the query,
// ranks only the rows of the best lists (until it has read a row budget) by
// their int8 codes (ivfcode.go), and scores the best of those exactly,
// instead of scoring every row of the site.
//
// The index is kept in step with every write instead of being retrained:
// an insert joins the list of its nearest centroid and moves that centroid,
// a delete leaves its list and moves it back, and a list that grows past
// twice its target size is split in two by 2-means on its own rows (a local,
// millisecond operation), so the number of lists follows the site's size
// and no write ever waits for a global rebuild. It is derived state: it
// lives only in memory and is rebuilt from the rows when the store opens, so
// it cannot disagree with the snapshot and the log after a restart or crash.
//
// Each site has its own index over its own rows only, so a site filter is
// exact by construction: no list holds another site's chunk, however small a
// share of the store the site is. Sites below annConfig.minRows (and so most
// sites, and any site that is a small slice of a large store) are searched by
// the exact scan, which is faster there.

// annConfig tunes when sites get an index and how much of it a search reads.
type annConfig struct {
	// minRows is the site size from which the site is indexed; below half
	// of it the index is dropped again (the gap stops a site at the border
	// from rebuilding on every write).
	minRows int
	// listRows is the target number of rows per list; lists are split at
	// twice this.
	listRows int
	// probeDiv sets the scan budget of a search to rows/probeDiv, clamped
	// to [probeMin, probeMax] and to at least probePerK rows per requested
	// hit.
	probeDiv, probeMin, probeMax, probePerK int
}

// defaultANN is tuned on 2 cores at dim 256: the exact scan of 50k rows
// takes about as long as an indexed search, and scanning 1/16 of a
// million-row site (about 60 lists) keeps recall@10 above 0.95 on
// embedding-like data (see bench/REPORT.md).
var defaultANN = annConfig{
	minRows:   50_000,
	listRows:  1024,
	probeDiv:  16,
	probeMin:  16_384,
	probeMax:  65_536,
	probePerK: 256,
}

// budget is how many rows a search of k hits in a site of n rows scans.
func (c *annConfig) budget(n, k int) int {
	b := min(max(n/c.probeDiv, c.probeMin), c.probeMax)
	return max(b, k*c.probePerK)
}

// ivfList is one inverted list.
type ivfList struct {
	rows []int32   // site rows in the list
	sum  []float32 // sum of the rows' normalised vectors
	// codes and scales are the rows' vectors quantised (ivfcode.go), in
	// the order of rows: codes[p*dim:(p+1)*dim] is rows[p].
	codes  []int8
	scales []float32
	// splitAt is the size from which the list is split; it is raised when a
	// split fails (rows too alike to separate), so a list of duplicates is
	// not re-split on every insert.
	splitAt int
	// at is the list's number (its place in ivf.lists and ivf.cents).
	at int
}

// ivf is one site's index. It is guarded by the store's lock like the rest
// of the site.
type ivf struct {
	dim   int
	cfg   *annConfig
	lists []*ivfList
	cents []float32 // normalised centroids, len(lists)*dim
	// rowList and rowPos locate each site row: list number and position in
	// that list's rows.
	rowList []int32
	rowPos  []int32
}

// newIVF indexes the n rows of vecs: k-means with about n/listRows
// centroids seeded by spread-out rows, then the list invariants.
func newIVF(vecs *vecTable, n, dim int, cfg *annConfig) *ivf {
	x := &ivf{dim: dim, cfg: cfg}
	nl := max(1, n/cfg.listRows)
	cents := make([]float32, nl*dim)
	// Seed with evenly spaced rows: deterministic, and spread over the
	// insertion order, which follows documents and so topics.
	for l := 0; l < nl; l++ {
		r := int(int64(l) * int64(n) / int64(nl))
		copy(cents[l*dim:(l+1)*dim], vecs.row(r))
	}
	// Train on at most 64 rows per centroid, evenly spaced, then assign
	// every row once.
	tn := min(n, 64*nl)
	train := make([]float32, 0, tn*dim)
	for i := 0; i < tn; i++ {
		r := int(int64(i) * int64(n) / int64(tn))
		train = append(train, vecs.row(r)...)
	}
	trainRow := func(r int) []float32 { return train[r*dim : (r+1)*dim] }
	tassign := make([]int32, tn)
	for iter := 0; iter < 8; iter++ {
		assignRows(trainRow, cents, dim, tn, tassign)
		sums := make([]float64, nl*dim)
		counts := make([]int, nl)
		for r := 0; r < tn; r++ {
			l := int(tassign[r])
			counts[l]++
			v := train[r*dim : (r+1)*dim]
			s := sums[l*dim : (l+1)*dim]
			for i, f := range v {
				s[i] += float64(f)
			}
		}
		for l := 0; l < nl; l++ {
			if counts[l] == 0 {
				continue // keeps its old centroid
			}
			c := cents[l*dim : (l+1)*dim]
			for i := range c {
				c[i] = float32(sums[l*dim+i])
			}
			normalizeInPlace(c)
		}
	}
	assign := make([]int32, n)
	assignRows(vecs.row, cents, dim, n, assign)
	x.cents = cents
	splitAt := make([]int, nl)
	for l := range splitAt {
		splitAt[l] = 2 * cfg.listRows
	}
	x.build(vecs, n, assign, splitAt)
	return x
}

// build fills x's lists from a list number per row (and each list's split
// size), then recenters, drops empty lists and splits full ones. x.cents
// must have room for len(splitAt) centroids.
func (x *ivf) build(vecs *vecTable, n int, assign []int32, splitAt []int) {
	dim := x.dim
	counts := make([]int, len(splitAt))
	for _, l := range assign[:n] {
		counts[l]++
	}
	x.lists = make([]*ivfList, len(splitAt))
	for l := range x.lists {
		x.lists[l] = &ivfList{sum: make([]float32, dim), splitAt: splitAt[l], at: l,
			rows: make([]int32, 0, counts[l]), codes: make([]int8, 0, counts[l]*dim), scales: make([]float32, 0, counts[l])}
	}
	x.rowList = make([]int32, n)
	x.rowPos = make([]int32, n)
	for r := 0; r < n; r++ {
		x.place(int(assign[r]), int32(r), vecs.row(r), nil, 0)
	}
	for l := range x.lists {
		x.recenter(l)
	}
	// Empty lists (seeds that attracted nothing) are dropped; full ones
	// are split like any list that grew.
	for l := len(x.lists) - 1; l >= 0; l-- {
		if len(x.lists[l].rows) == 0 {
			x.dropList(l)
		}
	}
	for l := 0; l < len(x.lists); l++ {
		for len(x.lists[l].rows) >= x.lists[l].splitAt {
			if !x.split(l, vecs) {
				break
			}
		}
	}
}

// assignRows sets assign[r] to the nearest centroid of each row, over the
// available cores.
func assignRows(row func(int) []float32, cents []float32, dim, n int, assign []int32) {
	workers := min(defaultWorkers(), max(1, n/4096))
	var wg sync.WaitGroup
	per := (n + workers - 1) / workers
	for w := 0; w < workers; w++ {
		from, to := w*per, min((w+1)*per, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := from; r < to; r++ {
				assign[r] = int32(nearest(cents, dim, row(r)))
			}
		}()
	}
	wg.Wait()
}

// nearest returns the centroid most similar to v.
func nearest(cents []float32, dim int, v []float32) int {
	best, bestScore := 0, float32(-2)
	for l := 0; l*dim < len(cents); l++ {
		if s := dot(v, cents[l*dim:(l+1)*dim]); s > bestScore {
			best, bestScore = l, s
		}
	}
	return best
}

// normalizeInPlace scales v to unit length (leaves a zero vector as is).
func normalizeInPlace(v []float32) {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 {
		return
	}
	inv := 1 / math.Sqrt(sum)
	for i, x := range v {
		v[i] = float32(float64(x) * inv)
	}
}

// join puts row r (vector v, its code and scale) into list l and moves the
// centroid.
func (x *ivf) join(l int, r int32, v []float32, code []int8, scale float32) {
	x.place(l, r, v, code, scale)
	x.recenter(l)
}

// place puts row r (vector v) into list l without recomputing the centroid.
// code and scale are v's quantised form; a nil code quantises v here.
func (x *ivf) place(l int, r int32, v []float32, code []int8, scale float32) {
	li := x.lists[l]
	x.rowList[r] = int32(l)
	x.rowPos[r] = int32(len(li.rows))
	li.rows = append(li.rows, r)
	if code == nil {
		li.codes, scale = quantize(li.codes, v)
	} else {
		li.codes = append(li.codes, code...)
	}
	li.scales = append(li.scales, scale)
	for i, f := range v {
		li.sum[i] += f
	}
}

// recenter recomputes the normalised centroid of list l from its sum.
func (x *ivf) recenter(l int) {
	c := x.cents[l*x.dim : (l+1)*x.dim]
	copy(c, x.lists[l].sum)
	normalizeInPlace(c)
}

// add indexes the new last row r with vector v (and its code and scale, or
// a nil code), splitting its list when it outgrows the target size. near,
// if not nil, is the list found nearest to v before the write took the lock
// (Store.Upsert): it is used while it is still in the index, since the
// lists that changed since (a split, a few rows joined) barely move the
// answer; otherwise the nearest list is found again.
func (x *ivf) add(r int, v []float32, code []int8, scale float32, near *ivfList, vecs *vecTable) {
	if r != len(x.rowList) {
		panic("local vector store: index out of step with the site rows")
	}
	x.rowList = append(x.rowList, -1)
	x.rowPos = append(x.rowPos, -1)
	var l int
	if near != nil && near.at < len(x.lists) && x.lists[near.at] == near {
		l = near.at
	} else {
		l = nearest(x.cents, x.dim, v)
	}
	x.join(l, int32(r), v, code, scale)
	if len(x.lists[l].rows) >= x.lists[l].splitAt {
		x.split(l, vecs)
	}
}

// remove unindexes row r (vector v) before the site moves its last row into
// r's place; move then records that move.
func (x *ivf) remove(r int, v []float32) {
	l, p := int(x.rowList[r]), int(x.rowPos[r])
	li := x.lists[l]
	last := len(li.rows) - 1
	if p != last {
		moved := li.rows[last]
		li.rows[p] = moved
		x.rowPos[moved] = int32(p)
		copy(li.codes[p*x.dim:(p+1)*x.dim], li.codes[last*x.dim:])
		li.scales[p] = li.scales[last]
	}
	li.rows = li.rows[:last]
	li.codes = li.codes[:last*x.dim]
	li.scales = li.scales[:last]
	x.rowList[r], x.rowPos[r] = -1, -1
	if len(li.rows) == 0 {
		x.dropList(l)
		return
	}
	for i, f := range v {
		li.sum[i] -= f
	}
	x.recenter(l)
}

// move records that the site moved its row from into row to (whose own
// entry was removed) and shrank by one.
func (x *ivf) move(from, to int) {
	if from != to {
		l, p := x.rowList[from], x.rowPos[from]
		x.lists[l].rows[p] = int32(to)
		x.rowList[to], x.rowPos[to] = l, p
	}
	x.rowList = x.rowList[:from]
	x.rowPos = x.rowPos[:from]
}

// dropList removes the empty list l by moving the last list into its slot.
func (x *ivf) dropList(l int) {
	last := len(x.lists) - 1
	if l != last {
		x.lists[l] = x.lists[last]
		x.lists[l].at = l
		copy(x.cents[l*x.dim:(l+1)*x.dim], x.cents[last*x.dim:(last+1)*x.dim])
		for _, r := range x.lists[l].rows {
			x.rowList[r] = int32(l)
		}
	}
	x.lists[last] = nil
	x.lists = x.lists[:last]
	x.cents = x.cents[:last*x.dim]
}

// split divides list l in two by 2-means over its rows. It reports false
// (and raises the list's split size) when the rows cannot be separated.
func (x *ivf) split(l int, vecs *vecTable) bool {
	dim := x.dim
	li := x.lists[l]
	row := func(r int32) []float32 { return vecs.row(int(r)) }
	// Seeds: the row farthest from the centroid, then the row farthest
	// from that one.
	cent := x.cents[l*dim : (l+1)*dim]
	a := farthest(li.rows, row, cent)
	b := farthest(li.rows, row, row(a))
	ca := append([]float32(nil), row(a)...)
	cb := append([]float32(nil), row(b)...)
	side := make([]bool, len(li.rows)) // true: goes to b
	for iter := 0; iter < 6; iter++ {
		sa, sb := make([]float32, dim), make([]float32, dim)
		na := 0
		for i, r := range li.rows {
			v := row(r)
			side[i] = dot(v, cb) > dot(v, ca)
			s := sa
			if side[i] {
				s = sb
			} else {
				na++
			}
			for j, f := range v {
				s[j] += f
			}
		}
		if na == 0 || na == len(li.rows) {
			li.splitAt *= 2
			return false
		}
		copy(ca, sa)
		copy(cb, sb)
		normalizeInPlace(ca)
		normalizeInPlace(cb)
	}
	keep := &ivfList{sum: make([]float32, dim), splitAt: 2 * x.cfg.listRows, at: l}
	other := &ivfList{sum: make([]float32, dim), splitAt: 2 * x.cfg.listRows, at: len(x.lists)}
	rows := li.rows
	x.lists[l] = keep
	x.lists = append(x.lists, other)
	x.cents = append(x.cents, make([]float32, dim)...)
	nl := len(x.lists) - 1
	// The rows keep their codes: moved, not quantised again.
	for i, r := range rows {
		to := l
		if side[i] {
			to = nl
		}
		x.place(to, r, row(r), li.codes[i*dim:(i+1)*dim], li.scales[i])
	}
	x.recenter(l)
	x.recenter(nl)
	return true
}

// farthest returns the row least similar to c.
func farthest(rows []int32, row func(int32) []float32, c []float32) int32 {
	best, bestScore := rows[0], float32(2)
	for _, r := range rows {
		if s := dot(row(r), c); s < bestScore {
			best, bestScore = r, s
		}
	}
	return best
}

// search returns the k best rows for the normalised query q with scores at
// least threshold among the lists nearest to q, scanning about budget rows,
// best first.
func (x *ivf) search(s *site, q []float32, k int, threshold float32, budget, maxWorkers int) []candidate {
	dim := x.dim
	nl := len(x.lists)
	order := make([]int32, nl)
	scores := make([]float32, nl)
	for l := range order {
		order[l] = int32(l)
		scores[l] = dot(q, x.cents[l*dim:(l+1)*dim])
	}
	sort.Slice(order, func(i, j int) bool { return scores[order[i]] > scores[order[j]] })
	var probe []*ivfList
	total := 0
	for _, l := range order {
		if total >= budget {
			break
		}
		probe = append(probe, x.lists[l])
		total += len(x.lists[l].rows)
	}
	// Rank the probed rows by their codes, keeping a pool of candidates per
	// worker; then score the pool exactly.
	qc, qs := quantizeQuery(q)
	pool := rerankPool(k)
	workers := max(1, min(maxWorkers, total/rowsPerWorker))
	heaps := make([]topK, workers)
	for w := range heaps {
		heaps[w] = topK{k: pool, heap: make([]candidate, 0, pool)}
	}
	scanLists := func(w int) {
		h := &heaps[w]
		for i := w; i < len(probe); i += workers {
			scanCodes(probe[i], qc, qs, dim, h)
		}
	}
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			scanLists(w)
		}()
	}
	scanLists(0)
	wg.Wait()
	exact := topK{k: k, heap: make([]candidate, 0, k)}
	for _, h := range heaps {
		for _, c := range h.heap {
			score := dot(q, s.vecs.row(int(c.row)))
			if score >= threshold {
				exact.push(score, c.row)
			}
		}
	}
	return s.best([]topK{exact}, k)
}

// scanCodes offers every row of li to h by its code score.
func scanCodes(li *ivfList, qc []int16, qs float32, dim int, h *topK) {
	floor := h.floor()
	full := len(h.heap) == h.k
	for p, r := range li.rows {
		score := float32(dotI8(li.codes[p*dim:(p+1)*dim], qc)) * li.scales[p] * qs
		if score < floor || (full && score == floor) {
			continue
		}
		h.push(score, r)
		if len(h.heap) == h.k {
			full = true
			floor = h.heap[0].score
		}
	}
}

// annBytes is the index's memory, for reports: the lists with their codes,
// the centroids and the row locations.
func (x *ivf) annBytes() int {
	n := 4 * (len(x.cents) + cap(x.rowList) + cap(x.rowPos))
	for _, li := range x.lists {
		n += 4*(cap(li.rows)+cap(li.sum)+cap(li.scales)) + cap(li.codes) + 120
	}
	return n
}

// IndexStats describes the store's approximate indexes, for reports and
// capacity planning.
type IndexStats struct {
	Sites        int // sites with chunks
	IndexedSites int // sites large enough to have an approximate index
	IndexedRows  int // chunks in those sites
	Lists        int // inverted lists over all indexed sites
	// IndexBytes is the memory of the indexes alone (lists, centroids, row
	// locations); the vectors they point into are counted by the store.
	IndexBytes int64
}

// IndexStats returns the current index figures.
func (s *Store) IndexStats() IndexStats {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := IndexStats{Sites: len(s.sites)}
	for _, site := range s.sites {
		if site.ann == nil {
			continue
		}
		st.IndexedSites++
		st.IndexedRows += len(site.rows)
		st.Lists += len(site.ann.lists)
		st.IndexBytes += int64(site.ann.annBytes())
	}
	return st
}
