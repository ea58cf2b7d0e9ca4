package main

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/lorekb/lore/internal/analyze"
	"github.com/lorekb/lore/internal/embed/learned"
)

// Model identity and the SIF constant. Bump modelVersion whenever the
// training text, the trainer's settings or the packing change: stored
// vectors of another version are re-indexed.
const (
	modelName    = "lore-learned-en"
	modelVersion = 2
	sifA         = 1e-3
	// pcSample bounds the paragraphs the common component is computed from.
	pcSample = 40000
)

// pack reads fastText's text vectors (VEC) and the training corpus (for word
// frequencies), and writes the quantized model to OUT.
func pack(vecPath, corpusPath, out string, sources []string) error {
	counts, total, err := countTerms(corpusPath)
	if err != nil {
		return err
	}
	words, vecs, dim, err := readVec(vecPath)
	if err != nil {
		return err
	}
	weights := make([]float32, len(words))
	for i, w := range words {
		p := float64(counts[w]) / float64(total)
		weights[i] = float32(sifA / (sifA + p))
	}
	info := learned.Info{Name: modelName, Version: modelVersion, Dim: dim, SIFA: sifA, Language: "en",
		Trainer: trainer(), Sources: sources}
	// The common component is computed with the quantized vectors, which
	// are what embedding uses.
	zero := make([]float32, dim)
	m, err := learned.Build(info, words, vecs, weights, zero)
	if err != nil {
		return err
	}
	pc, err := commonComponent(m, corpusPath, dim)
	if err != nil {
		return err
	}
	if err := m.SetCommonComponent(pc); err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := m.Encode(f); err != nil {
		f.Close()
		return err
	}
	fmt.Fprintf(os.Stderr, "pack: %d words, %d dimensions, %d corpus terms → %s\n", len(words), dim, total, out)
	return f.Close()
}

func trainer() string {
	if s := os.Getenv("EMBEDDER_TRAINER"); s != "" {
		return s
	}
	return "fasttext skipgram"
}

func countTerms(path string) (map[string]int, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	counts := map[string]int{}
	total := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		for _, t := range strings.Fields(sc.Text()) {
			counts[t]++
			total++
		}
	}
	return counts, total, sc.Err()
}

// readVec reads fastText's .vec file: a "words dim" line, then a word and
// its numbers per line. fastText's end-of-line token is dropped.
func readVec(path string) ([]string, [][]float32, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	if !sc.Scan() {
		return nil, nil, 0, errors.New("empty .vec file")
	}
	head := strings.Fields(sc.Text())
	if len(head) != 2 {
		return nil, nil, 0, errors.New("bad .vec header")
	}
	dim, _ := strconv.Atoi(head[1])
	var words []string
	var vecs [][]float32
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) != dim+1 || fs[0] == "</s>" || hasCJK(fs[0]) {
			// The CJK words the English text quotes are too few for
			// meaningful vectors: such text is left to hashing.
			continue
		}
		v := make([]float32, dim)
		for d := range v {
			x, err := strconv.ParseFloat(fs[d+1], 32)
			if err != nil {
				return nil, nil, 0, fmt.Errorf("%s: %w", fs[0], err)
			}
			v[d] = float32(x)
		}
		words = append(words, fs[0])
		vecs = append(vecs, v)
	}
	// A fixed order (by word) so the same vectors give the same file.
	idx := make([]int, len(words))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return words[idx[a]] < words[idx[b]] })
	sw, sv := make([]string, len(idx)), make([][]float32, len(idx))
	for i, j := range idx {
		sw[i], sv[i] = words[j], vecs[j]
	}
	return sw, sv, dim, sc.Err()
}

func hasCJK(w string) bool {
	for _, r := range w {
		if analyze.IsCJK(r) {
			return true
		}
	}
	return false
}

// commonComponent is the first principal component (uncentred) of the SIF
// sums of an even sample of the corpus's paragraphs, by power iteration on
// their second-moment matrix.
func commonComponent(m *learned.Model, corpusPath string, dim int) ([]float32, error) {
	f, err := os.Open(corpusPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		if len(strings.Fields(sc.Text())) >= 5 {
			lines = append(lines, sc.Text())
		}
	}
	step := max(1, len(lines)/pcSample)
	cov := make([]float64, dim*dim)
	for i := 0; i < len(lines); i += step {
		v, ok := m.SumTerms(strings.Fields(lines[i]))
		if !ok {
			continue
		}
		var n float64
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		n = math.Sqrt(n)
		for a := 0; a < dim; a++ {
			va := float64(v[a]) / n
			row := cov[a*dim : (a+1)*dim]
			for b := 0; b < dim; b++ {
				row[b] += va * float64(v[b]) / n
			}
		}
	}
	u := make([]float64, dim)
	for i := range u {
		u[i] = 1 / math.Sqrt(float64(dim))
	}
	for it := 0; it < 200; it++ {
		nu := make([]float64, dim)
		for a := 0; a < dim; a++ {
			var s float64
			for b := 0; b < dim; b++ {
				s += cov[a*dim+b] * u[b]
			}
			nu[a] = s
		}
		var n float64
		for _, x := range nu {
			n += x * x
		}
		n = math.Sqrt(n)
		for i := range nu {
			nu[i] /= n
		}
		u = nu
	}
	pc := make([]float32, dim)
	for i, x := range u {
		pc[i] = float32(x)
	}
	return pc, sc.Err()
}
