package learned

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/embed/local"
)

func dot(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func TestEmbeddedModelLoads(t *testing.T) {
	t0 := time.Now()
	m, err := English()
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(t0); took > 5*time.Second {
		t.Errorf("decoding the model took %v", took)
	}
	if m.ID() != EnglishID {
		t.Fatalf("embedded model is %s, EnglishID says %s: bump EnglishID with the model", m.ID(), EnglishID)
	}
	if m.Words < 10000 || m.Dim < 64 || m.Language != "en" || len(m.Sources) == 0 {
		t.Fatalf("model %+v", m.Info)
	}
	for _, w := range []string{"file", "delet", "memori", "directori"} {
		if !m.Has(w) {
			t.Errorf("model lacks the analyzer term %q", w)
		}
	}
}

// The learned part puts paraphrases nearer than unrelated texts with no
// word in common, which hashing cannot do.
func TestHybridMatchesMeaning(t *testing.T) {
	m, err := English()
	if err != nil {
		t.Fatal(err)
	}
	h := NewHybrid(m, 0)
	texts := []string{
		"remove a file",
		"unlink deletes a name from the filesystem",
		"how much RAM is available on the system",
		"free memory reported by the kernel",
	}
	v, err := h.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if near, far := dot(v[0], v[1]), dot(v[0], v[3]); near <= far+0.1 {
		t.Errorf("remove/unlink %.3f not above remove/free memory %.3f", near, far)
	}
	if near, far := dot(v[2], v[3]), dot(v[2], v[1]); near <= far+0.1 {
		t.Errorf("RAM/free memory %.3f not above RAM/unlink %.3f", near, far)
	}
	hv, _ := local.New(0).Embed(context.Background(), texts)
	if dot(hv[0], hv[1]) > 0.2 {
		t.Fatalf("the hashing embedder should see little in common: %.3f", dot(hv[0], hv[1]))
	}
	for i, x := range v {
		if n := math.Sqrt(dot(x, x)); math.Abs(n-1) > 1e-4 {
			t.Errorf("vector %d has norm %f", i, n)
		}
	}
}

// Text the model does not cover (Chinese) is embedded by hashing alone, as
// before; an empty text is the zero vector.
func TestHybridChineseIsHashing(t *testing.T) {
	m, err := English()
	if err != nil {
		t.Fatal(err)
	}
	h := NewHybrid(m, 0)
	if h.Dimension() != m.Dim+local.DefaultDimension {
		t.Fatalf("dimension %d", h.Dimension())
	}
	texts := []string{"如何查看磁盘剩余空间", "", "!!!"}
	v, err := h.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	hv, _ := local.New(0).Embed(context.Background(), texts)
	for d := 0; d < m.Dim; d++ {
		if v[0][d] != 0 {
			t.Fatalf("learned part of a Chinese text is not zero at %d", d)
		}
	}
	if got := dot(v[0][m.Dim:], hv[0]); math.Abs(got-1) > 1e-5 {
		t.Fatalf("hashing part differs from the hashing embedder: %f", got)
	}
	for _, x := range v[1:] {
		if dot(x, x) != 0 {
			t.Fatal("a text without terms is not the zero vector")
		}
	}
	if c := h.Coverage("free memory 可用内存"); c <= 0 || c >= 1 {
		t.Fatalf("mixed text coverage %f", c)
	}
}

// roundTrip encodes and decodes m.
func roundTrip(t *testing.T, m *Model) *Model {
	t.Helper()
	var buf bytes.Buffer
	if err := m.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	got, err := Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	info := Info{Name: "t", Version: 3, Dim: 4, SIFA: 1e-3, Language: "en", Sources: []string{"x"}}
	m, err := Build(info, []string{"alpha", "beta"}, [][]float32{{1, 0, 0, 0}, {0, -0.5, 0.5, 0}}, []float32{0.9, 0.1}, []float32{0, 0, 0, 1})
	if err != nil {
		t.Fatal(err)
	}
	got := roundTrip(t, m)
	if got.ID() != "t-v3" || got.Words != 2 || !got.Has("beta") || got.Has("gamma") {
		t.Fatalf("decoded %+v", got.Info)
	}
	v, ok := got.SumTerms([]string{"beta"})
	if !ok || math.Abs(float64(v[2])-0.05) > 0.001 || math.Abs(float64(v[1])+0.05) > 0.001 {
		t.Fatalf("beta's weighted vector %v", v)
	}
	if _, err := Decode(bytes.NewReader([]byte("not a model"))); err == nil {
		t.Fatal("garbage decoded")
	}
}

// A word's neighbour similarity is its NearWords-th nearest word's cosine,
// computed when the model is built and kept through Encode and Decode.
func TestNeighbourSimilarity(t *testing.T) {
	n := NearWords + 2
	words := make([]string, n)
	vecs := make([][]float32, n)
	weights := make([]float32, n)
	for i := range n {
		words[i] = fmt.Sprintf("w%d", i)
		// Word i sits at angle i degrees: word 0's k-th nearest is word k.
		a := float64(i) * math.Pi / 180
		vecs[i] = []float32{float32(math.Cos(a)), float32(math.Sin(a))}
		weights[i] = 1
	}
	m, err := Build(Info{Name: "t", Version: 1, Dim: 2}, words, vecs, weights, []float32{0, 0})
	if err != nil {
		t.Fatal(err)
	}
	got := roundTrip(t, m)
	want := math.Cos(float64(NearWords) * math.Pi / 180)
	if s := got.NeighbourSimilarity("w0"); math.Abs(s-want) > 0.02 {
		t.Errorf("w0: %.3f, want %.3f", s, want)
	}
	if s := got.MostSimilar("w0", map[string]bool{fmt.Sprintf("w%d", NearWords): true}); s < got.NeighbourSimilarity("w0") {
		t.Errorf("the %d-th nearest word (%.3f) is below the neighbour similarity", NearWords, s)
	}
	if s := got.NeighbourSimilarity("unknown"); s != 1 {
		t.Errorf("an unknown word: %v, want 1", s)
	}
	// The embedded model carries its table: a known word's nearest words
	// are closer than an arbitrary word and itself.
	en, err := English()
	if err != nil {
		t.Fatal(err)
	}
	if s := en.NeighbourSimilarity("memori"); s < 0.2 || s >= 1 {
		t.Errorf("memori's neighbour similarity %.3f", s)
	}
}

func BenchmarkQueryEmbedding(b *testing.B) {
	m, err := English()
	if err != nil {
		b.Fatal(err)
	}
	h := NewHybrid(m, 0)
	q := []string{"How can I see who last changed each line of a file?"}
	for i := 0; i < b.N; i++ {
		if _, err := h.Embed(context.Background(), q); err != nil {
			b.Fatal(err)
		}
	}
}

// Chunk-sized texts, hashing alone against the hybrid (make bench measures
// the whole vectorize loop).
func BenchmarkChunkEmbedding(b *testing.B) {
	m, err := English()
	if err != nil {
		b.Fatal(err)
	}
	para := "Returns the amount of free system memory in bytes as an integer. The os.freemem() method reports what the kernel says is free, which on Linux excludes the page cache; use it to decide whether a large buffer can be allocated. "
	texts := make([]string, 64)
	for i := range texts {
		texts[i] = strings.Repeat(para, 4)
	}
	for _, e := range []struct {
		name string
		emb  interface {
			Embed(context.Context, []string) ([][]float32, error)
		}
	}{{"hashing", local.New(0)}, {"hybrid", NewHybrid(m, 0)}} {
		b.Run(e.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := e.emb.Embed(context.Background(), texts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
