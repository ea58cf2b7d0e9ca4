package gctune

import "testing"

// deep recurses n frames of about 256 bytes each, as a JSON decoder or the
// SDK's payload visitor does.
//
//go:noinline
func deep(n int) byte {
	var b [200]byte
	b[n%len(b)] = byte(n)
	if n == 0 {
		return b[0]
	}
	return deep(n-1) + b[(n+1)%len(b)]
}

// BenchmarkFreshGoroutineDeepCall compares a fresh goroutine that goes 12 KB
// deep with and without PregrowStack at its root (go test -bench Fresh
// ./internal/gctune).
func BenchmarkFreshGoroutineDeepCall(b *testing.B) {
	for _, pre := range []bool{false, true} {
		name := "plain"
		if pre {
			name = "pregrown"
		}
		b.Run(name, func(b *testing.B) {
			done := make(chan byte)
			for b.Loop() {
				go func() {
					if pre {
						PregrowStack()
					}
					deep(10) // a few frames first: growth copies them
					done <- deep(48)
				}()
				<-done
			}
		})
	}
}
