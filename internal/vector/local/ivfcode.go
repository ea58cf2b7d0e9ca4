package local

import "math"

// Scalar quantisation for the inverted lists. Each list keeps a copy of its
// rows' vectors as int8 codes (one byte per dimension and a float scale per
// row), contiguous in list order: a search streams through the codes of the
// lists it probes instead of jumping to each row's floats in the site's
// array, which at a million rows costs a cache and TLB miss per row and made
// the probe memory-bound. The codes only rank; the best candidates are then
// scored again on the exact floats, so results and thresholds stay exact
// cosines.

// quantize appends the int8 codes of v to codes and returns them with v's
// scale: v[i] ≈ scale * code[i].
func quantize(codes []int8, v []float32) ([]int8, float32) {
	var m float32
	for _, x := range v {
		m = max(m, float32(math.Abs(float64(x))))
	}
	if m == 0 {
		return append(codes, make([]int8, len(v))...), 0
	}
	scale := m / 127
	inv := 1 / scale
	for _, x := range v {
		codes = append(codes, int8(math.Round(float64(x*inv))))
	}
	return codes, scale
}

// quantizeQuery returns the query as int16 values of int8 range (the form
// dotI8 takes) and its scale.
func quantizeQuery(q []float32) ([]int16, float32) {
	codes, scale := quantize(make([]int8, 0, len(q)), q)
	out := make([]int16, len(q))
	for i, c := range codes {
		out[i] = int16(c)
	}
	return out, scale
}

// dotI8Generic is the portable int8 dot product.
func dotI8Generic(a []int8, q []int16) int32 {
	var s0, s1 int32
	q = q[:len(a)]
	for len(a) >= 2 && len(q) >= 2 {
		s0 += int32(a[0]) * int32(q[0])
		s1 += int32(a[1]) * int32(q[1])
		a, q = a[2:], q[2:]
	}
	for i := range a {
		s0 += int32(a[i]) * int32(q[i])
	}
	return s0 + s1
}

// rerankPool is how many candidates by code score are scored again exactly
// for a search of k hits.
func rerankPool(k int) int { return max(4*k, 64) }
