//go:build !amd64 || purego

package local

// useAVX2 is false where no assembly kernel exists.
const useAVX2 = false

// dot returns the dot product of a and b, which have the same length.
func dot(a, b []float32) float32 { return dotGeneric(a, b) }
