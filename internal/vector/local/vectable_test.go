package local

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestVecTableMatchesFlat pushes rows across several slabs and pops and
// overwrites some on the way (as site.remove does), checking row, rows and
// the slabs against a flat array after every step.
func TestVecTableMatchesFlat(t *testing.T) {
	const dim = 3
	rng := rand.New(rand.NewPCG(5, 6))
	var tb vecTable
	tb.dim = dim
	var flat []float32
	check := func(step int) {
		t.Helper()
		if tb.n*dim != len(flat) {
			t.Fatalf("step %d: %d rows, want %d", step, tb.n, len(flat)/dim)
		}
		if want := (tb.n + slabRows - 1) / slabRows; len(tb.slabs) != want {
			t.Fatalf("step %d: %d rows in %d slabs, want %d", step, tb.n, len(tb.slabs), want)
		}
		for _, r := range []int{0, tb.n / 3, tb.n - 1, slabRows - 1, slabRows, 2*slabRows + 1} {
			if r >= 0 && r < tb.n && !slices.Equal(tb.row(r), flat[r*dim:(r+1)*dim]) {
				t.Fatalf("step %d: row %d = %v, want %v", step, r, tb.row(r), flat[r*dim:(r+1)*dim])
			}
		}
		from, to := rng.IntN(tb.n+1), tb.n
		from = min(from, to)
		var got []float32
		next := from
		tb.rows(from, to, func(first int, vecs []float32) {
			if first != next || len(vecs) == 0 || len(vecs)%dim != 0 {
				t.Fatalf("step %d: run at %d of %d floats, want one at %d", step, first, len(vecs), next)
			}
			next += len(vecs) / dim
			got = append(got, vecs...)
		})
		if next != to || !slices.Equal(got, flat[from*dim:to*dim]) {
			t.Fatalf("step %d: rows(%d, %d) differ from the flat array", step, from, to)
		}
	}
	v := make([]float32, dim)
	for step := 0; step < 60; step++ {
		// Mostly growth, with bursts of deletes that cross slab borders.
		grow := step%10 < 7
		n := rng.IntN(4000)
		for i := 0; i < n; i++ {
			if grow || tb.n == 0 {
				for j := range v {
					v[j] = rng.Float32()
				}
				tb.push(v)
				flat = append(flat, v...)
				continue
			}
			// site.remove: the last row moves into a removed row's place.
			r, last := rng.IntN(tb.n), tb.n-1
			copy(tb.row(r), tb.row(last))
			copy(flat[r*dim:(r+1)*dim], flat[last*dim:])
			tb.pop()
			flat = flat[:last*dim]
		}
		check(step)
	}
	for i, s := range tb.slabs[:len(tb.slabs)-1] {
		if cap(s) != slabRows*dim {
			t.Fatalf("full slab %d has capacity for %d floats, want %d", i, cap(s), slabRows*dim)
		}
	}
	if tb.n < 2*slabRows {
		t.Fatalf("the test reached only %d rows; it must cross slabs", tb.n)
	}
	for tb.n > 10 {
		tb.pop()
		flat = flat[:len(flat)-dim]
	}
	check(-1)
	if c := cap(tb.slabs[0]); c > 1024*dim {
		t.Fatalf("10 rows left keep an array of %d floats", c)
	}
}
