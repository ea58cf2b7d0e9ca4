package main

import (
	"container/heap"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/lorekb/lore/bench/internal/load"
	"github.com/lorekb/lore/internal/vector"
	vlocal "github.com/lorekb/lore/internal/vector/local"
)

func randomUnit(rng *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	var n float64
	for i := range v {
		x := rng.NormFloat64()
		v[i] = float32(x)
		n += x * x
	}
	n = math.Sqrt(n)
	for i := range v {
		v[i] = float32(float64(v[i]) / n)
	}
	return v
}

// benchSearch measures the embedded store's Search at o.chunks chunks of one
// site, against a naive single-goroutine scan of the same vectors.
func (b *bench) benchSearch(ctx context.Context) error {
	o := b.o
	dir := filepath.Join(b.work, "search-store")
	defer os.RemoveAll(dir)
	store, err := vlocal.Open(dir, embedDim)
	if err != nil {
		return err
	}
	defer store.Close()
	rng := rand.New(rand.NewPCG(7, 11))
	flat := make([]float32, 0, o.chunks*embedDim)
	t0 := time.Now()
	const batch = 1000
	for i := 0; i < o.chunks; i += batch {
		n := min(batch, o.chunks-i)
		cs := make([]vector.Chunk, n)
		for j := range cs {
			id := i + j
			vec := randomUnit(rng, embedDim)
			flat = append(flat, vec...)
			doc := int64(id/10 + 1)
			cs[j] = vector.Chunk{ID: vector.ChunkID(doc, 1, id%10), SiteID: 1, DocumentID: doc, Version: 1, Index: id % 10,
				Title: fmt.Sprintf("Document %d", doc), Text: fmt.Sprintf("chunk %d of document %d", id%10, doc), Vector: vec}
		}
		if err := store.Upsert(ctx, cs); err != nil {
			return fmt.Errorf("upsert: %w", err)
		}
	}
	build := time.Since(t0)
	if n, err := store.Count(ctx); err != nil || n != o.chunks {
		return fmt.Errorf("store holds %d chunks (%v), want %d", n, err, o.chunks)
	}
	logf("B: vector store: %d chunks (dim %d) upserted in %s", o.chunks, embedDim, build.Round(time.Millisecond))

	queries := make([][]float32, o.queries)
	for i := range queries {
		queries[i] = randomUnit(rng, embedDim)
	}
	// Warm-up, then the measured queries, one at a time (as one chat turn does).
	for i := range min(20, len(queries)) {
		if _, err := store.Search(ctx, 1, queries[i], o.k, -1); err != nil {
			return err
		}
	}
	lat := make(load.Latencies, 0, len(queries))
	for _, q := range queries {
		t := time.Now()
		hits, err := store.Search(ctx, 1, q, o.k, -1)
		d := time.Since(t)
		if err != nil {
			return err
		}
		if len(hits) != min(o.k, o.chunks) {
			return fmt.Errorf("search returned %d hits, want %d", len(hits), min(o.k, o.chunks))
		}
		lat = append(lat, d)
	}
	lat.Sort()

	// Naive ceiling: plain Go loop, one goroutine, heap of k.
	naiveN := min(len(queries), 30)
	naive := make(load.Latencies, 0, naiveN)
	for _, q := range queries[:naiveN] {
		t := time.Now()
		naiveTopK(flat, q, o.k)
		naive = append(naive, time.Since(t))
	}
	naive.Sort()
	logf("B: vector search k=%d over %d chunks: p50 %s p99 %s (naive scan p50 %s)", o.k, o.chunks,
		ms(lat.Percentile(50)), ms(lat.Percentile(99)), ms(naive.Percentile(50)))

	s := b.rep.section(fmt.Sprintf("B. Embedded vector store search: %d chunks, dim %d, one site, k=%d", o.chunks, embedDim, o.k),
		"Search", "queries", "p50", "p99", "speed vs naive scan")
	s.row("internal/vector/local Store.Search", fmt.Sprint(len(lat)), ms(lat.Percentile(50)), ms(lat.Percentile(99)),
		fmt.Sprintf("%.1f×", float64(naive.Percentile(50))/float64(max(lat.Percentile(50), 1))))
	s.row("naive scan: plain Go dot-product loop, 1 goroutine, top-k heap (reference)", fmt.Sprint(len(naive)),
		ms(naive.Percentile(50)), ms(naive.Percentile(99)), "1×")
	s.note("Random unit vectors (stored and queried), no score threshold (-1), so every chunk competes for the top k: the worst case. Sequential queries, lore idle. Store filled in %s (%d upserts of %d chunks, WAL fsync each).",
		build.Round(time.Millisecond), (o.chunks+batch-1)/batch, batch)
	b.rep.check(check{part: "B", target: fmt.Sprintf("vector search p50 < 20 ms at %d chunks", o.chunks), figure: ms(lat.Percentile(50)) + " (p99 " + ms(lat.Percentile(99)) + ")",
		ceiling: ms(naive.Percentile(50)) + " (naive scan)", ratio: fmt.Sprintf("%.1f× faster", float64(naive.Percentile(50))/float64(max(lat.Percentile(50), 1))),
		pass: lat.Percentile(50) < 20*time.Millisecond})
	return nil
}

type scoredRow struct {
	score float32
	row   int
}
type minHeap []scoredRow

func (h minHeap) Len() int           { return len(h) }
func (h minHeap) Less(i, j int) bool { return h[i].score < h[j].score }
func (h minHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *minHeap) Push(x any)        { *h = append(*h, x.(scoredRow)) }
func (h *minHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func naiveTopK(flat, q []float32, k int) []scoredRow {
	dim := len(q)
	h := make(minHeap, 0, k+1)
	for row := 0; row*dim < len(flat); row++ {
		v := flat[row*dim : (row+1)*dim]
		var s float32
		for i, x := range v {
			s += x * q[i]
		}
		if len(h) < k {
			heap.Push(&h, scoredRow{s, row})
		} else if s > h[0].score {
			h[0] = scoredRow{s, row}
			heap.Fix(&h, 0)
		}
	}
	return h
}
