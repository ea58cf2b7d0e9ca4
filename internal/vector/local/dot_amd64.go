//go:build amd64 && !purego

package local

import "golang.org/x/sys/cpu"

// useAVX2 selects the AVX2+FMA kernel, about four times faster than the
// portable loop on the brute-force scan.
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// dotAVX2 returns the dot product of the n floats at a and b; n must be a
// multiple of 8.
//
//go:noescape
func dotAVX2(a, b *float32, n int) float32

// dot returns the dot product of a and b, which have the same length.
func dot(a, b []float32) float32 {
	if useAVX2 && len(a)%8 == 0 && len(a) > 0 {
		_ = b[len(a)-1]
		return dotAVX2(&a[0], &b[0], len(a))
	}
	return dotGeneric(a, b)
}

// dotI8AVX2 returns the dot product of n int8 codes at a with n int16 values
// at q; n must be a multiple of 64.
//
//go:noescape
func dotI8AVX2(a *int8, q *int16, n int) int32

// dotI8 returns the dot product of the codes a and the query q (same
// length).
func dotI8(a []int8, q []int16) int32 {
	if useAVX2 && len(a)%64 == 0 && len(a) > 0 {
		_ = q[len(a)-1]
		return dotI8AVX2(&a[0], &q[0], len(a))
	}
	return dotI8Generic(a, q)
}
