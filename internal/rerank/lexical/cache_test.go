package lexical

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/lorekb/lore/internal/vector"
)

func cacheDocs() []Doc {
	return []Doc{
		{Title: "Install guide", Heading: "Linux > Packages", Text: "Run the installer, then restart the quokka server. Install it again to upgrade."},
		{Title: "Notes", Text: "Upgrading keeps your settings; install over the old version."},
		{Title: "Backups", Heading: "Restore", Text: "Restore a backup with the restore command; backups are kept for a week."},
		{Title: "知识库", Heading: "文档 > 安装", Text: "如何安装和升级知识库。"},
		{Title: "Install guide", Heading: "Linux > Packages", Text: "Run the installer, then restart the quokka server. Install it again to upgrade."},
		{},
	}
}

func sameResults(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d scores, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			t.Errorf("%s: doc %d scores %v, %v without the cache", what, i, got[i], want[i])
		}
	}
}

// scores ranks docs with r and returns the scores in doc order.
func scores(t *testing.T, r *Reranker, query string, docs []Doc, st *vector.KeywordStats, exp map[string]float64) []float64 {
	t.Helper()
	res, err := r.RerankExpanded(context.Background(), query, docs, 0, st, exp)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float64, len(docs))
	for _, x := range res {
		out[x.Index] = x.Score
	}
	return out
}

// The Reranker's cached analyses rank exactly as fresh ones, query after
// query, and a doc whose text changed is analyzed again, never served the
// old analysis.
func TestCachedAnalysesRankAsFresh(t *testing.T) {
	r := New()
	st := &vector.KeywordStats{Docs: 100, AvgLen: 12, DocFreq: map[string]int{"instal": 10, "upgrad": 4, "restor": 2}}
	for round := range 3 {
		for _, q := range []string{"install and upgrade", "restore backup", "安装", ""} {
			for _, s := range []*vector.KeywordStats{nil, st} {
				for _, exp := range []map[string]float64{nil, {"server": 0.5}} {
					what := fmt.Sprintf("round %d, %q, stats %v, exp %v", round, q, s != nil, exp)
					sameResults(t, what, scores(t, r, q, cacheDocs(), s, exp), ScoreExpanded(q, cacheDocs(), s, exp))
				}
			}
		}
	}
	if n := r.bags().Len(); n != 5 {
		t.Errorf("cache holds %d analyses, want 5 (the distinct docs)", n)
	}

	changed := cacheDocs()
	changed[1].Text = "Restore keeps your settings."
	changed[2].Heading = "Install"
	sameResults(t, "changed docs", scores(t, r, "install restore", changed, nil, nil), ScoreExpanded("install restore", unanalyzed(changed), nil, nil))
}

// unanalyzed copies docs without their analyses.
func unanalyzed(docs []Doc) []Doc {
	out := make([]Doc, len(docs))
	for i, d := range docs {
		out[i] = Doc{Title: d.Title, Heading: d.Heading, Text: d.Text}
	}
	return out
}

// The Reranker's cache keeps what its bounds allow, the least recently
// used leaving first, and does not keep a doc too large for it (internal/lru
// tests the counting itself).
func TestBagCacheBounds(t *testing.T) {
	doc := func(i int) Doc {
		return Doc{Title: fmt.Sprint("doc ", i), Text: fmt.Sprintf("text number %d about quokkas", i)}
	}
	c := newBagCache(3, 1<<20)
	for i := range 5 {
		analyzeCached(c, []Doc{doc(i)})
	}
	if n := c.Len(); n != 3 {
		t.Errorf("%d entries, want 3", n)
	}
	if _, ok := c.Get(docKey{doc(1).Title, "", doc(1).Text}); ok {
		t.Error("the least recently used doc was kept")
	}

	d := doc(0)
	d.analysis()
	one := bagSize(&d)
	c = newBagCache(100, 16*one)
	for i := range 40 {
		analyzeCached(c, []Doc{doc(i)})
	}
	if n := c.Len(); n < 10 || n > 16 || c.Used() > 16*one {
		t.Errorf("%d entries of %d bytes, want at most 16 within %d", n, c.Used(), 16*one)
	}

	c = newBagCache(100, 16*one)
	big := []Doc{{Text: strings.Repeat("quokka ", 100)}}
	analyzeCached(c, big)
	if big[0].an == nil || c.Len() != 0 || c.Used() != 0 {
		t.Errorf("a doc over a sixteenth of the bound: analyzed %v, %d entries, %d bytes", big[0].an != nil, c.Len(), c.Used())
	}
}

// Old and new side by side: one query's candidates scored with fresh
// analyses, and with the Reranker's cache (the same candidates again).
func BenchmarkRerankFields(b *testing.B) {
	var docs []Doc
	for i := range 60 {
		docs = append(docs, Doc{Title: fmt.Sprint("Page ", i), Heading: "Guide > Section",
			Text: strings.Repeat(fmt.Sprintf("To install package %d run apt-get install, then upgrade with apt-get upgrade. ", i), 12)})
	}
	st := &vector.KeywordStats{Docs: 1000, AvgLen: 150, DocFreq: map[string]int{"instal": 100, "upgrad": 40}}
	b.Run("fresh", func(b *testing.B) {
		for b.Loop() {
			ScoreFields("how do I install and upgrade it", unanalyzed(docs), st)
		}
	})
	b.Run("cached", func(b *testing.B) {
		r := New()
		for b.Loop() {
			r.RerankFields(context.Background(), "how do I install and upgrade it", unanalyzed(docs), 0, st)
		}
	})
}

// Rerankings running at once share the cached analyses safely (go test -race).
func TestCacheConcurrentUse(t *testing.T) {
	r := New()
	want := ScoreFields("install upgrade", cacheDocs(), nil)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				sameResults(t, "concurrent", scores(t, r, "install upgrade", cacheDocs(), nil, nil), want)
			}
		})
	}
	wg.Wait()
}
