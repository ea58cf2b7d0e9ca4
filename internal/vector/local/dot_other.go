//go:build !amd64 || purego

package local

// useAVX2 is false where no assembly kernel exists.
const useAVX2 = false

// dot returns the dot product of a and b, which have the same length.
func dot(a, b []float32) float32 { return dotGeneric(a, b) }

// dotI8 returns the dot product of the codes a and the query q (same
// length).
func dotI8(a []int8, q []int16) int32 { return dotI8Generic(a, q) }
