// Package learned is Lore's embedded default embedder for English: word
// vectors trained with fastText's skip-gram on public English documentation
// (scripts/embedder.sh rebuilds them from Debian packages), combined into a
// text vector as the SIF-weighted mean of its words' vectors with the
// corpus's common component removed (Arora et al., "A simple but
// tough-to-beat baseline for sentence embeddings"). Words are the analyzer's
// terms (internal/analyze), so the model sees the same stemmed words that
// the keyword index and the reranker score.
//
// The model knows only English words. Hybrid gives every text a vector in
// two parts: the learned part and the hashing embedder's part, weighted by
// how many of the text's terms the model covers, so Chinese text (and
// identifiers the model never saw) are still matched by the hashing
// embedder, and an English text is matched by meaning.
package learned

import (
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"sync"
)

// Magic opens every model file; the number is the file layout's version.
const Magic = "LORELE02"

// NearWords is how many of a word's nearest words in the vocabulary count
// as its neighbours (see Model.NeighbourSimilarity): about 0.4% of the
// English model's words.
const NearWords = 100

// EnglishID is the embedded English model's ID (Info.ID), known without
// decoding the model: index formats name it.
const EnglishID = "lore-learned-en-v2"

//go:embed en.lmodel.gz
var embeddedEN []byte

// Info describes a model: what it is and what it was made from.
type Info struct {
	// Name and Version identify the vectors: a new Version means stored
	// vectors of the old one are not comparable and sites re-index.
	Name    string `json:"name"`
	Version int    `json:"version"`
	Dim     int    `json:"dim"`
	Words   int    `json:"words"`
	// SIFA is the a of the SIF weight a/(a+p(w)).
	SIFA     float64  `json:"sif_a"`
	Trainer  string   `json:"trainer"`
	Sources  []string `json:"sources"`
	Language string   `json:"language"`
}

// ID names the vectors, as stored vectors record it.
func (i Info) ID() string { return fmt.Sprintf("%s-v%d", i.Name, i.Version) }

// Model holds quantized word vectors: word i's vector is scales[i] times
// vecs[i*dim:(i+1)*dim].
type Model struct {
	Info
	index   map[string]int32
	weights []float32 // SIF weight of each word
	scales  []float32
	vecs    []int8
	pc      []float32 // the common component, unit length
	// near is, for each word, the cosine of its NearWords-th nearest word,
	// times 127 and rounded down: computed once when the model is built,
	// since it takes a pass over the whole vocabulary per word.
	near []int8
	// wvecs holds each word's vector times its weight, dequantized once:
	// embedding adds one per term, so this is its inner loop.
	wvecs []float32
	// unit holds each word's vector scaled to unit length, for
	// similarities between two words.
	unit []float32
	// splits remembers how unknown terms split into words (compound).
	splitMu sync.RWMutex
	splits  map[string][]int32
}

// prepare fills wvecs from the quantized vectors.
func (m *Model) prepare() {
	m.wvecs = make([]float32, len(m.vecs))
	for i := 0; i < m.Words; i++ {
		f := m.weights[i] * m.scales[i]
		q := m.vecs[i*m.Dim : (i+1)*m.Dim]
		w := m.wvecs[i*m.Dim : (i+1)*m.Dim]
		for d, x := range q {
			w[d] = f * float32(x)
		}
	}
	m.unit = make([]float32, len(m.vecs))
	for i := 0; i < m.Words; i++ {
		q := m.vecs[i*m.Dim : (i+1)*m.Dim]
		var n float64
		for _, x := range q {
			n += float64(x) * float64(x)
		}
		if n == 0 {
			continue
		}
		inv := float32(1 / math.Sqrt(n))
		u := m.unit[i*m.Dim : (i+1)*m.Dim]
		for d, x := range q {
			u[d] = inv * float32(x)
		}
	}
}

// MostSimilar is the highest similarity of a to one of words, 0 when the
// model does not know a or none of words: a is looked up once.
func (m *Model) MostSimilar(a string, words map[string]bool) float64 {
	i, ok := m.index[a]
	if !ok {
		return 0
	}
	best, seen := float32(0), false
	for w := range words {
		if j, ok := m.index[w]; ok {
			if c := m.cosine(int(i), int(j)); !seen || c > best {
				best, seen = c, true
			}
		}
	}
	return float64(best)
}

// cosine is the cosine of words i and j (their unit vectors' dot product).
func (m *Model) cosine(i, j int) float32 {
	u, v := m.unit[i*m.Dim:(i+1)*m.Dim], m.unit[j*m.Dim:(j+1)*m.Dim]
	v = v[:len(u)]
	var s float32
	for d, x := range u {
		s += x * v[d]
	}
	return s
}

// NeighbourSimilarity is the cosine of term's NearWords-th nearest word in
// the vocabulary: another word at least this similar is one of its nearest.
// It is 1 when the model does not know the term.
func (m *Model) NeighbourSimilarity(term string) float64 {
	i, ok := m.index[term]
	if !ok {
		return 1
	}
	return float64(m.near[i]) / 127
}

// computeNear fills near, spreading the words over the CPUs.
func (m *Model) computeNear() {
	m.near = make([]int8, m.Words)
	k := min(NearWords, m.Words-1)
	if k <= 0 {
		return
	}
	var wg sync.WaitGroup
	workers := runtime.GOMAXPROCS(0)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			top := make([]float32, 0, k+1)
			for i := w; i < m.Words; i += workers {
				top = m.nearest(i, k, top[:0])
				m.near[i] = int8(math.Floor(float64(top[k-1]) * 127))
			}
		}()
	}
	wg.Wait()
}

// nearest returns the similarities of word i's k nearest other words,
// highest first, in top.
func (m *Model) nearest(i, k int, top []float32) []float32 {
	for j := 0; j < m.Words; j++ {
		if j == i {
			continue
		}
		s := m.cosine(i, j)
		if len(top) == k && s <= top[k-1] {
			continue
		}
		if len(top) < k {
			top = append(top, s)
		} else {
			top[k-1] = s
		}
		for p := len(top) - 1; p > 0 && top[p] > top[p-1]; p-- {
			top[p], top[p-1] = top[p-1], top[p]
		}
	}
	return top
}

var (
	enOnce  sync.Once
	enModel *Model
	enErr   error
)

// English returns the embedded English model, decoded once.
func English() (*Model, error) {
	enOnce.Do(func() { enModel, enErr = Decode(bytes.NewReader(embeddedEN)) })
	return enModel, enErr
}

// Decode reads a gzip-compressed model file written by Encode.
func Decode(r io.Reader) (*Model, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("learned model: %w", err)
	}
	br := bufio.NewReaderSize(gz, 1<<16)
	magic := make([]byte, len(Magic))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != Magic {
		return nil, errors.New("learned model: not a model file")
	}
	var n uint32
	if err := binary.Read(br, binary.LittleEndian, &n); err != nil || n > 1<<20 {
		return nil, errors.New("learned model: bad header")
	}
	hdr := make([]byte, n)
	if _, err := io.ReadFull(br, hdr); err != nil {
		return nil, err
	}
	m := &Model{}
	if err := json.Unmarshal(hdr, &m.Info); err != nil {
		return nil, fmt.Errorf("learned model header: %w", err)
	}
	if m.Dim <= 0 || m.Dim > 4096 || m.Words <= 0 || m.Words > 1<<22 {
		return nil, fmt.Errorf("learned model: dim %d, %d words", m.Dim, m.Words)
	}
	m.index = make(map[string]int32, m.Words)
	for i := 0; i < m.Words; i++ {
		l, err := br.ReadByte()
		if err != nil {
			return nil, err
		}
		w := make([]byte, l)
		if _, err := io.ReadFull(br, w); err != nil {
			return nil, err
		}
		m.index[string(w)] = int32(i)
	}
	m.weights = make([]float32, m.Words)
	m.scales = make([]float32, m.Words)
	m.vecs = make([]int8, m.Words*m.Dim)
	m.pc = make([]float32, m.Dim)
	m.near = make([]int8, m.Words)
	for _, part := range []any{m.weights, m.scales, m.vecs, m.pc, m.near} {
		if err := binary.Read(br, binary.LittleEndian, part); err != nil {
			return nil, fmt.Errorf("learned model body: %w", err)
		}
	}
	m.prepare()
	return m, nil
}

// Encode writes m gzip-compressed.
func (m *Model) Encode(w io.Writer) error {
	gz, _ := gzip.NewWriterLevel(w, gzip.BestCompression)
	hdr, err := json.Marshal(m.Info)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(gz)
	bw.WriteString(Magic)
	binary.Write(bw, binary.LittleEndian, uint32(len(hdr)))
	bw.Write(hdr)
	words := make([]string, m.Words)
	for w, i := range m.index {
		words[i] = w
	}
	for _, w := range words {
		bw.WriteByte(byte(len(w)))
		bw.WriteString(w)
	}
	for _, part := range []any{m.weights, m.scales, m.vecs, m.pc, m.near} {
		if err := binary.Write(bw, binary.LittleEndian, part); err != nil {
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return gz.Close()
}

// Build makes a model from float vectors (one per word, all of info.Dim),
// their SIF weights and the common component; vectors are quantized to
// int8 with one scale per word.
func Build(info Info, words []string, vecs [][]float32, weights []float32, pc []float32) (*Model, error) {
	if len(words) != len(vecs) || len(words) != len(weights) || len(pc) != info.Dim {
		return nil, errors.New("learned model: mismatched parts")
	}
	info.Words = len(words)
	m := &Model{Info: info, index: make(map[string]int32, len(words)), weights: weights,
		scales: make([]float32, len(words)), vecs: make([]int8, len(words)*info.Dim), pc: pc}
	for i, w := range words {
		if len(w) == 0 || len(w) > 255 || len(vecs[i]) != info.Dim {
			return nil, fmt.Errorf("learned model: bad word %q", w)
		}
		m.index[w] = int32(i)
		var mx float32
		for _, x := range vecs[i] {
			mx = max(mx, float32(math.Abs(float64(x))))
		}
		if mx == 0 {
			continue
		}
		s := mx / 127
		m.scales[i] = s
		q := m.vecs[i*info.Dim : (i+1)*info.Dim]
		for d, x := range vecs[i] {
			q[d] = int8(math.Round(float64(x / s)))
		}
	}
	m.prepare()
	m.computeNear()
	return m, nil
}

// SetCommonComponent replaces the common component that embedding removes
// (the builder computes it with the model's own quantized vectors).
func (m *Model) SetCommonComponent(pc []float32) error {
	if len(pc) != m.Dim {
		return errors.New("learned model: common component of the wrong size")
	}
	m.pc = pc
	return nil
}

// Has reports whether the model knows the term.
func (m *Model) Has(term string) bool { _, ok := m.index[term]; return ok }

// addTerm adds the term's weighted vector (a compound's: its words') to acc
// and reports whether the model reads it.
func (m *Model) addTerm(term string, acc []float32) bool {
	if i, ok := m.index[term]; ok {
		m.addWord(i, acc)
		return true
	}
	pieces := m.compound(term)
	for _, i := range pieces {
		m.addWord(i, acc)
	}
	return pieces != nil
}

// Knows reports whether the model reads the term: a word it knows, or a
// compound of such words.
func (m *Model) Knows(term string) bool { return m.Has(term) || m.compound(term) != nil }

func (m *Model) addWord(i int32, acc []float32) {
	w := m.wvecs[int(i)*m.Dim : int(i+1)*m.Dim]
	w = w[:len(acc)]
	for d, x := range w {
		acc[d] += x
	}
}

// finish removes the common component from the weighted sum acc and
// normalises it to unit length (left zero when nothing was added).
func (m *Model) finish(acc []float32) {
	var dot float32
	for d, x := range acc {
		dot += x * m.pc[d]
	}
	var norm float64
	for d := range acc {
		acc[d] -= dot * m.pc[d]
		norm += float64(acc[d]) * float64(acc[d])
	}
	if norm == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(norm))
	for d := range acc {
		acc[d] *= inv
	}
}

// SumTerms is the SIF-weighted sum of the known terms' vectors, before the
// common component is removed (what the component is computed from); false
// when no term is known.
func (m *Model) SumTerms(terms []string) ([]float32, bool) {
	acc := make([]float32, m.Dim)
	known := false
	for _, t := range terms {
		if i, ok := m.index[t]; ok {
			m.addWord(i, acc) // words only: the component is the training text's
			known = true
		}
	}
	return acc, known
}

// EmbeddedEnglish is the embedded English model file (for measuring it).
func EmbeddedEnglish() []byte { return embeddedEN }
