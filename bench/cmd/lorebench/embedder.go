package main

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/lorekb/lore/bench/internal/corpus"
	"github.com/lorekb/lore/internal/embed"
	"github.com/lorekb/lore/internal/embed/learned"
)

// benchQueryEmbedding times the default embedder on question-sized texts
// (the first sentence of each document's paragraphs, one at a time, as a
// chat's search embeds its query) and reports what the learned model costs
// in memory and in the binary.
func (b *bench) benchQueryEmbedding(docs []corpus.Doc, emb embed.Embedder) error {
	var queries []string
	for _, d := range docs {
		for _, para := range strings.Split(d.Content, "\n\n") {
			if q := strings.TrimSpace(para); len(q) > 20 && len(q) < 200 {
				queries = append(queries, q)
			}
			if len(queries) >= 2000 {
				break
			}
		}
	}
	if len(queries) == 0 {
		return nil
	}
	ctx := context.Background()
	took := make([]time.Duration, len(queries))
	for i, q := range queries {
		t0 := time.Now()
		if _, err := emb.Embed(ctx, []string{q}); err != nil {
			return err
		}
		took[i] = time.Since(t0)
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	p50, p99 := took[len(took)/2], took[len(took)*99/100]

	// The model's heap: decode a second copy and measure what it keeps.
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	m, err := learned.Decode(strings.NewReader(string(learned.EmbeddedEnglish())))
	if err != nil {
		return err
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	heap := float64(after.HeapAlloc-before.HeapAlloc) / 1e6
	runtime.KeepAlive(m)
	t0 := time.Now()
	if _, err := learned.Decode(strings.NewReader(string(learned.EmbeddedEnglish()))); err != nil {
		return err
	}
	load := time.Since(t0)
	size := float64(len(learned.EmbeddedEnglish())) / 1e6

	s := b.rep.section("B2. The learned embedder's cost", "Measure", "figure")
	s.row("query embedding p50 / p99 ("+fmt.Sprint(len(queries))+" questions, one at a time)", fmt.Sprintf("%s / %s", p50.Round(time.Microsecond), p99.Round(time.Microsecond)))
	s.row("model decode time (once per process)", load.Round(time.Millisecond).String())
	s.row("model heap after decoding", fmt.Sprintf("%.1f MB", heap))
	s.row("model file in the binary (gzip)", fmt.Sprintf("%.1f MB", size))
	s.note("Model %s: %d words, %d dimensions (%s). Queries: paragraphs of 20 to 200 bytes of the corpus. Heap: runtime.MemStats.HeapAlloc around a second decode, after GC.",
		m.ID(), m.Words, m.Dim, emb.Model())
	logf("B2: query embedding p50 %s p99 %s; model decode %s, heap %.1f MB, file %.1f MB", p50, p99, load, heap, size)
	b.rep.check(check{part: "B2", target: "query embedding p50 < 5 ms", figure: p50.String(), ceiling: "5ms", ratio: "", pass: p50 < 5*time.Millisecond})
	b.rep.check(check{part: "B2", target: "the learned model's memory ≤ 150 MB", figure: fmt.Sprintf("%.1f MB", heap), ceiling: "150 MB", ratio: "", pass: heap <= 150})
	return nil
}
