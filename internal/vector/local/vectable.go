package local

// vecTable holds a site's normalised vectors, row-major, in slabs of at most
// slabRows rows. One flat array would have to be reallocated and copied as
// it grows: at a million rows of dim 256 that is a gigabyte copied (and
// freshly faulted in) under the store's write lock every time append grows
// it by a quarter, a cost per insert that grew with the site. A slab is at
// most slabRows rows (16 MiB at dim 256), so growing one copies at most that
// much, whatever the size of the site; a small site's only slab grows like
// any slice, so it costs no more memory than before.
//
// A compaction writes the snapshot from a frozen view of the table (freeze)
// while writers go on: the slabs are then shared with the view, and a write
// into a shared slab copies it first (own), so the view keeps the rows as
// they were when it was taken, and each slab is copied at most once per
// compaction (only the last slab, in a store that only grows).
type vecTable struct {
	dim   int
	n     int         // rows
	slabs [][]float32 // all full (slabRows rows) but the last
	// shared[i] reports that slab i is read by a compaction's view and
	// must be copied before it is written; nil outside compactions.
	shared []bool
}

const (
	slabShift = 14
	slabRows  = 1 << slabShift
)

// row returns the vector of row r (aliasing the table).
func (t *vecTable) row(r int) []float32 {
	s := t.slabs[r>>slabShift]
	o := (r & (slabRows - 1)) * t.dim
	return s[o : o+t.dim : o+t.dim]
}

// push appends v as the new last row.
func (t *vecTable) push(v []float32) {
	if t.n&(slabRows-1) == 0 && t.n>>slabShift == len(t.slabs) {
		t.slabs = append(t.slabs, nil)
	}
	last := len(t.slabs) - 1
	s := t.slabs[last]
	if len(s)+t.dim > cap(s) {
		// Double, but never past a full slab: append's own growth would
		// leave a full slab with unused capacity.
		grown := make([]float32, len(s), min(max(2*cap(s), 64*t.dim), slabRows*t.dim))
		copy(grown, s)
		s = grown
		t.unshare(last)
	} else {
		s = t.own(last)
	}
	t.slabs[last] = append(s, v...)
	t.n++
}

// pop drops the last row, releasing a slab that empties and shrinking the
// last slab's array after large deletions.
func (t *vecTable) pop() {
	t.n--
	last := len(t.slabs) - 1
	s := t.slabs[last][:len(t.slabs[last])-t.dim]
	if len(s) == 0 {
		t.slabs[last] = nil
		t.slabs = t.slabs[:last]
		t.unshare(last) // a slab pushed here later is a new one
		return
	}
	if cap(s) > 1024*t.dim && cap(s) > 4*len(s) {
		s = append([]float32(nil), s...)
		t.unshare(last)
	}
	t.slabs[last] = s
}

// copyRow overwrites row dst with row src (a delete moving the last row
// into the hole).
func (t *vecTable) copyRow(dst, src int) {
	t.own(dst >> slabShift)
	copy(t.row(dst), t.row(src))
}

// own returns slab i, first replacing it by a copy if a compaction's view
// shares it.
func (t *vecTable) own(i int) []float32 {
	s := t.slabs[i]
	if i < len(t.shared) && t.shared[i] {
		c := make([]float32, len(s), cap(s))
		copy(c, s)
		t.slabs[i], s = c, c
		t.shared[i] = false
	}
	return s
}

// unshare records that slab i is no longer the view's array.
func (t *vecTable) unshare(i int) {
	if i < len(t.shared) {
		t.shared[i] = false
	}
}

// freeze returns a view of the table as it is now, which later writes to t
// do not change, and marks every slab shared until thaw.
func (t *vecTable) freeze() vecTable {
	v := vecTable{dim: t.dim, n: t.n, slabs: append([][]float32(nil), t.slabs...)}
	t.shared = make([]bool, len(t.slabs))
	for i := range t.shared {
		t.shared[i] = true
	}
	return v
}

// thaw ends the sharing begun by freeze, once the view is no longer read.
func (t *vecTable) thaw() { t.shared = nil }

// rows calls f with each run of consecutive rows in [from, to): the first
// row number of the run and its vectors, contiguous.
func (t *vecTable) rows(from, to int, f func(first int, vecs []float32)) {
	for from < to {
		s := t.slabs[from>>slabShift]
		end := min(to, (from>>slabShift+1)<<slabShift)
		o := from & (slabRows - 1)
		f(from, s[o*t.dim:(o+end-from)*t.dim])
		from = end
	}
}
