package local

import (
	"context"
	"errors"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/lorekb/lore/internal/embed"
)

var _ embed.Embedder = (*Embedder)(nil)

func embedAll(t testing.TB, e *Embedder, texts ...string) [][]float32 {
	t.Helper()
	vs, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != len(texts) {
		t.Fatalf("got %d vectors for %d texts", len(vs), len(texts))
	}
	for i, v := range vs {
		if len(v) != e.Dimension() {
			t.Fatalf("vector %d has %d dims, want %d", i, len(v), e.Dimension())
		}
	}
	return vs
}

func TestDefaults(t *testing.T) {
	e := New(0)
	if e.Dimension() != DefaultDimension || e.Model() != ModelName {
		t.Fatalf("dimension %d model %q", e.Dimension(), e.Model())
	}
	if New(64).Dimension() != 64 {
		t.Fatal("custom dimension ignored")
	}
}

func TestDeterministic(t *testing.T) {
	texts := []string{"Install Lore on Linux with apt.", "如何在服务器上安装", "Ünïcödé wörds and émoji 👍", strings.Repeat("long text ", 5000)}
	a := embedAll(t, New(0), texts...)
	// A fresh embedder, a different batch order and a reused scratch all give
	// bit-identical vectors.
	e := New(0)
	embedAll(t, e, "warm up the pool with something else entirely")
	rev := []string{texts[3], texts[2], texts[1], texts[0]}
	b := embedAll(t, e, rev...)
	for i := range texts {
		for j := range a[i] {
			if a[i][j] != b[len(texts)-1-i][j] {
				t.Fatalf("text %d differs at %d: %v vs %v", i, j, a[i][j], b[len(texts)-1-i][j])
			}
		}
	}
}

func TestNormalised(t *testing.T) {
	for _, dim := range []int{16, 256, 1024} {
		e := New(dim)
		vs := embedAll(t, e, "hello", "The quick brown fox jumps over the lazy dog.", "中文文本", strings.Repeat("x", 100000))
		for i, v := range vs {
			var n float64
			for _, x := range v {
				n += float64(x) * float64(x)
			}
			if math.Abs(n-1) > 1e-5 {
				t.Errorf("dim %d vector %d has squared norm %v", dim, i, n)
			}
		}
	}
}

func TestNoFeaturesGivesZeroVector(t *testing.T) {
	for _, v := range embedAll(t, New(0), "", "   ", "!!! --- ???") {
		for _, x := range v {
			if x != 0 {
				t.Fatalf("expected zero vector, got %v", v)
			}
		}
	}
}

func TestCaseInsensitive(t *testing.T) {
	vs := embedAll(t, New(0), "Hello World ÄÖÜ", "hello world äöü")
	if c := embed.Cosine(vs[0], vs[1]); c < 0.999999 {
		t.Fatalf("case changes the vector: cosine %v", c)
	}
}

func TestSimilarBeatsUnrelated(t *testing.T) {
	e := New(0)
	cases := []struct{ query, similar, unrelated string }{
		{"how do I install lore on linux", "Installing Lore on a Linux server takes one command.", "Chocolate cake needs butter, sugar and eggs."},
		{"reset my password", "To reset a forgotten password, open the account settings page.", "The quarterly revenue grew by ten percent."},
		{"configuring the database connection", "Configure the database connection string in config.yaml.", "Our hiking trip went through the mountains."},
		{"kubernetes deployment", "Deploying on Kubernetes uses a Helm chart.", "Bananas are rich in potassium."},
	}
	for _, c := range cases {
		vs := embedAll(t, e, c.query, c.similar, c.unrelated)
		sim, unr := embed.Cosine(vs[0], vs[1]), embed.Cosine(vs[0], vs[2])
		if sim <= unr+0.1 {
			t.Errorf("%q: similar %.3f, unrelated %.3f", c.query, sim, unr)
		}
	}
}

func TestMorphologyViaTrigrams(t *testing.T) {
	// No shared whole word, but shared stems.
	vs := embedAll(t, New(0), "installation", "installing", "gardening")
	if embed.Cosine(vs[0], vs[1]) <= embed.Cosine(vs[0], vs[2]) {
		t.Fatalf("stem sharing not rewarded: %v vs %v", embed.Cosine(vs[0], vs[1]), embed.Cosine(vs[0], vs[2]))
	}
}

func TestCJKQueryFindsCJKText(t *testing.T) {
	e := New(0)
	docs := []string{
		"如何在Linux服务器上安装知识库软件。",
		"今天的天气很好，我们去公园散步吧。",
		"这家餐厅的菜非常好吃，价格也便宜。",
		"数据库连接失败时请检查配置文件。",
		"Install the knowledge base on Linux.",
		"東京の天気は晴れです。",
	}
	queries := map[string]int{
		"安装知识库":    0,
		"天气很好":     1,
		"餐厅好吃":     2,
		"数据库配置":    3,
		"東京の天気":    5,
		"安装 Linux": 0,
	}
	dv := embedAll(t, e, docs...)
	for q, want := range queries {
		qv := embedAll(t, e, q)[0]
		type scored struct {
			i int
			s float64
		}
		var ranks []scored
		for i, d := range dv {
			ranks = append(ranks, scored{i, embed.Cosine(qv, d)})
		}
		sort.Slice(ranks, func(a, b int) bool { return ranks[a].s > ranks[b].s })
		if ranks[0].i != want {
			t.Errorf("query %q: best doc %d (%.3f), want %d; ranks %v", q, ranks[0].i, ranks[0].s, want, ranks)
		}
	}
}

func TestContextCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := New(0).Embed(ctx, []string{"a"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

func TestVectorsDoNotAlias(t *testing.T) {
	vs := embedAll(t, New(8), "one", "two")
	before := append([]float32(nil), vs[1]...)
	_ = append(vs[0], 42) // must not write into vs[1]
	for i := range before {
		if vs[1][i] != before[i] {
			t.Fatal("appending to one vector changed the next")
		}
	}
}

// benchText is a realistic mix of English prose, code and some CJK.
var benchText = strings.Repeat(`Lore ingests Markdown documents, splits them into chunks and embeds every
chunk. To install on Linux, run the installer and point it at your database:
export LORE_DB_URL=postgres://lore@localhost/lore. Searching uses cosine similarity
over normalised vectors, plus BM25 keyword scores. 知识库支持中文搜索。
`, 40)

func BenchmarkEmbed(b *testing.B) {
	e := New(DefaultDimension)
	texts := []string{benchText}
	ctx := context.Background()
	b.SetBytes(int64(len(benchText)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Embed(ctx, texts); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEmbedChunks(b *testing.B) {
	// 800-rune chunks, as the chunker produces them.
	e := New(DefaultDimension)
	var texts []string
	total := 0
	runes := []rune(benchText)
	for i := 0; i+800 <= len(runes); i += 800 {
		texts = append(texts, string(runes[i:i+800]))
		total += len(texts[len(texts)-1])
	}
	ctx := context.Background()
	b.SetBytes(int64(total))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Embed(ctx, texts); err != nil {
			b.Fatal(err)
		}
	}
}
