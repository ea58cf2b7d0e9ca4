//go:build unix

package local

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/vector"
)

// cpuNow is the process's CPU time so far (user and system).
func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFillSite fills one site of a fresh store with LORE_BENCH_FILL
// chunks (dim 256, embedding-like vectors, 800-byte texts from Go's HTML
// documentation, batches of 320 as the vectorize activity writes them) from
// LORE_BENCH_WRITERS goroutines (default 4), logging the wall time and the
// process's CPU time per chunk over every 64,000 chunks: how the cost of an
// insert grows with the site. Run with -benchtime=1x, e.g.
// LORE_BENCH_FILL=1000000 go test -run '^$' -bench FillSite -benchtime=1x -v.
func BenchmarkFillSite(b *testing.B) {
	n, _ := strconv.Atoi(os.Getenv("LORE_BENCH_FILL"))
	if n == 0 {
		b.Skip("LORE_BENCH_FILL not set")
	}
	for b.Loop() {
		fillSite(b, n)
	}
}

func fillSite(t *testing.B, n int) {
	const dim, batch = 256, 320
	s, err := Open(t.TempDir(), dim)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	gen := newClustered(7, dim, 2000)
	var pieces []string
	goroot, _ := exec.Command("go", "env", "GOROOT").Output()
	files, _ := filepath.Glob(filepath.Join(strings.TrimSpace(string(goroot)), "doc", "*.html"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		txt := string(b)
		for len(txt) > 800 {
			pieces = append(pieces, txt[:800])
			txt = txt[700:]
		}
	}
	if len(pieces) == 0 {
		t.Skip("no text: Go's doc/*.html not found")
	}
	ctx := context.Background()
	writers, _ := strconv.Atoi(os.Getenv("LORE_BENCH_WRITERS"))
	if writers <= 0 {
		writers = 4
	}
	t0 := time.Now()
	c0, w0 := cpuNow(), time.Now()
	var mu sync.Mutex
	next := 0
	var waits []time.Duration // each Upsert's wall time
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next += batch
				mu.Unlock()
				if i >= n {
					return
				}
				cs := make([]vector.Chunk, batch)
				for j := range cs {
					id := i + j
					doc := int64(id/6 + 1)
					cs[j] = vector.Chunk{ID: vector.ChunkID(doc, 1, id%6), SiteID: 1, DocumentID: doc, Version: 1, Index: id % 6,
						Title: fmt.Sprintf("Document %d", doc), Heading: "Heading", Text: pieces[id%len(pieces)]}
				}
				mu.Lock()
				for j := range cs {
					cs[j].Vector = gen.next()
				}
				mu.Unlock()
				u0 := time.Now()
				if err := s.Upsert(ctx, cs); err != nil {
					t.Error(err)
					return
				}
				took := time.Since(u0)
				mu.Lock()
				waits = append(waits, took)
				if (i+batch)%64000 == 0 {
					c := cpuNow()
					t.Logf("%8d chunks: %.1f us/chunk wall, %.1f us/chunk process CPU over the last 64000 (total %s)", i+batch, float64(time.Since(w0).Microseconds())/64000, float64((c-c0).Microseconds())/64000, time.Since(t0).Round(time.Millisecond))
					c0, w0 = c, time.Now()
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Logf("filled %d chunks with %d writers in %s", n, writers, time.Since(t0).Round(time.Millisecond))
	// How long single writes took: a write that waits behind a compaction
	// holding the writers' lock shows here.
	slices.Sort(waits)
	var slow time.Duration
	for _, w := range waits {
		if w > 100*time.Millisecond {
			slow += w
		}
	}
	t.Logf("Upsert of %d chunks (%d calls): p50 %s, p99 %s, max %s; %s in calls over 100 ms", batch, len(waits),
		waits[len(waits)/2].Round(time.Microsecond), waits[len(waits)*99/100].Round(time.Microsecond), waits[len(waits)-1].Round(time.Millisecond), slow.Round(time.Millisecond))
}
