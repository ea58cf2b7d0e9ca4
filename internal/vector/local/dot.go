package local

// dotGeneric is the portable dot product: four independent accumulators let
// the CPU overlap the additions, and re-slicing keeps bounds checks out of
// the loop.
func dotGeneric(a, b []float32) float32 {
	var s0, s1, s2, s3 float32
	b = b[:len(a)]
	for len(a) >= 4 && len(b) >= 4 {
		s0 += a[0] * b[0]
		s1 += a[1] * b[1]
		s2 += a[2] * b[2]
		s3 += a[3] * b[3]
		a, b = a[4:], b[4:]
	}
	for i := range a {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}
