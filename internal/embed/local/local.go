// Package local is an offline, deterministic embedder based on feature
// hashing. It needs no model files and no network, so Lore can ingest and
// search out of the box (and in tests) with lexical-semantic matching that is
// far better than nothing, and swap in a hosted model later.
//
// Each text is reduced to features: lower-cased word unigrams and bigrams,
// character trigrams of every word (with word-boundary markers, which catches
// inflections and typos), and for runs of CJK characters, which have no
// spaces, character unigrams and bigrams. Each distinct feature gets a
// sublinear weight 1+ln(tf), is hashed (FNV-1a, then a 64-bit finaliser) to a
// dimension and a sign, and added there; the result is L2-normalised, so dot
// products are cosine similarities.
package local

import (
	"context"
	"math"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/lorekb/lore/internal/analyze"
)

// DefaultDimension is the vector size New uses when given 0: large enough for
// few collisions among the features of one chunk, small enough that
// brute-force search over 100k chunks stays fast.
const DefaultDimension = 256

// ModelName identifies this embedder's feature set in Model(). Change it when
// features or weights change, because vectors made by different versions are
// not comparable.
const ModelName = "lore-local-hash-v1"

// Feature weights before tf scaling. Words carry the meaning; bigrams add
// phrase order; trigrams are many per word, so each weighs less.
const (
	weightWord    = 1.0
	weightBigram  = 0.6
	weightTrigram = 0.35
	weightCJKUni  = 0.5
	weightCJKBi   = 1.0
)

// Seeds keep the hash spaces of the feature kinds apart.
const (
	seedWord    = 0x9e3779b97f4a7c15
	seedBigram  = 0xc2b2ae3d27d4eb4f
	seedTrigram = 0x165667b19e3779f9
	seedCJKUni  = 0xd6e8feb86659fd93
	seedCJKBi   = 0xff51afd7ed558ccd
)

// FNV-1a parameters for the running hash of a word.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// Word-boundary markers in trigrams; outside the Unicode range.
const (
	markBegin = 0x110000
	markEnd   = 0x110001
)

// Embedder is the hashing embedder. It is safe for concurrent use.
type Embedder struct {
	dim  int
	pool sync.Pool
}

// New returns an embedder producing vectors of dim dimensions
// (DefaultDimension when dim <= 0).
func New(dim int) *Embedder {
	if dim <= 0 {
		dim = DefaultDimension
	}
	e := &Embedder{dim: dim}
	e.pool.New = func() any { return newScratch(dim) }
	return e
}

// Dimension returns the length of the vectors Embed returns.
func (e *Embedder) Dimension() int { return e.dim }

// Model returns ModelName.
func (e *Embedder) Model() string { return ModelName }

// Embed returns one L2-normalised vector per text, in order. A text with no
// letters or digits gets the zero vector, which is similar to nothing. The
// only error is the context's.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	backing := make([]float32, len(texts)*e.dim)
	sc := e.pool.Get().(*scratch)
	defer e.pool.Put(sc)
	done := 0
	for i, t := range texts {
		if done += len(t); done > 1<<20 {
			// Check for cancellation about once per MiB of text.
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			done = 0
		}
		v := backing[i*e.dim : (i+1)*e.dim : (i+1)*e.dim]
		sc.embed(t, v)
		out[i] = v
	}
	return out, nil
}

// scratch holds the per-call working memory, reused through a pool so that
// embedding allocates nothing per feature.
type scratch struct {
	// Open-addressing table of distinct features: key 0 means empty.
	keys    []uint64
	counts  []uint32
	weights []float32
	used    []int32 // occupied slots, in insertion order
	mask    uint64
	acc     []float64
	// Tokeniser state.
	inWord      bool
	wordHash    uint64
	p1, p2      rune
	haveP2      bool
	prevWord    uint64
	havePrev    bool
	prevCJK     rune
	havePrevCJK bool
}

const minSlots = 1 << 10

func newScratch(dim int) *scratch {
	s := &scratch{acc: make([]float64, dim)}
	s.alloc(minSlots)
	return s
}

func (s *scratch) alloc(slots int) {
	s.keys = make([]uint64, slots)
	s.counts = make([]uint32, slots)
	s.weights = make([]float32, slots)
	s.mask = uint64(slots - 1)
	if cap(s.used) < slots/2+1 {
		s.used = make([]int32, 0, slots/2+1)
	}
}

// mix is the 64-bit finaliser of MurmurHash3: it spreads every input bit over
// the output, so the low bits pick a dimension and the top bit a sign.
func mix(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// add counts one occurrence of the feature key with weight w.
func (s *scratch) add(key uint64, w float32) {
	if key == 0 {
		key = 1
	}
	i := key & s.mask
	for {
		k := s.keys[i]
		if k == key {
			s.counts[i]++
			return
		}
		if k == 0 {
			s.keys[i] = key
			s.counts[i] = 1
			s.weights[i] = w
			s.used = append(s.used, int32(i))
			if 2*len(s.used) > len(s.keys) {
				s.grow()
			}
			return
		}
		i = (i + 1) & s.mask
	}
}

// grow doubles the table, keeping the insertion order of used.
func (s *scratch) grow() {
	oldKeys, oldCounts, oldWeights := s.keys, s.counts, s.weights
	oldUsed := append([]int32(nil), s.used...)
	s.alloc(2 * len(oldKeys))
	s.used = s.used[:0]
	for _, j := range oldUsed {
		key := oldKeys[j]
		i := key & s.mask
		for s.keys[i] != 0 {
			i = (i + 1) & s.mask
		}
		s.keys[i] = key
		s.counts[i] = oldCounts[j]
		s.weights[i] = oldWeights[j]
		s.used = append(s.used, int32(i))
	}
}

// reset empties the table for the next text, shrinking it after a very large
// text so the pool does not pin memory.
func (s *scratch) reset() {
	if len(s.keys) > 1<<18 {
		s.alloc(minSlots)
		s.used = s.used[:0]
	} else {
		for _, i := range s.used {
			s.keys[i] = 0
		}
		s.used = s.used[:0]
	}
	s.inWord, s.haveP2, s.havePrev, s.havePrevCJK = false, false, false, false
}

// tfLog caches 1+ln(n) for small counts.
var tfLog = func() [64]float64 {
	var t [64]float64
	for i := 1; i < len(t); i++ {
		t[i] = 1 + math.Log(float64(i))
	}
	return t
}()

// embed writes the normalised vector of text into out (len = dimension).
func (s *scratch) embed(text string, out []float32) {
	s.reset()
	s.tokenize(text)
	acc := s.acc[:len(out)]
	clear(acc)
	dim := uint64(len(out))
	for _, i := range s.used {
		key := s.keys[i]
		c := s.counts[i]
		tf := 0.0
		if c < uint32(len(tfLog)) {
			tf = tfLog[c]
		} else {
			tf = 1 + math.Log(float64(c))
		}
		v := float64(s.weights[i]) * tf
		bucket := (uint64(uint32(key)) * dim) >> 32
		if key>>63 != 0 {
			v = -v
		}
		acc[bucket] += v
	}
	var norm float64
	for _, v := range acc {
		norm += v * v
	}
	if norm == 0 {
		clear(out)
		return
	}
	inv := 1 / math.Sqrt(norm)
	for j, v := range acc {
		out[j] = float32(v * inv)
	}
}

// Rune classes for tokenising.
const (
	classOther = iota
	classWord
	classCJK
)

// asciiLower maps ASCII bytes to their lower case; asciiClass tells letters
// and digits from the rest.
var asciiLower, asciiClass = func() (lower, class [utf8.RuneSelf]byte) {
	for c := 0; c < utf8.RuneSelf; c++ {
		lower[c] = byte(c)
		switch {
		case c >= 'A' && c <= 'Z':
			lower[c] = byte(c) + 'a' - 'A'
			class[c] = classWord
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			class[c] = classWord
		}
	}
	return lower, class
}()

// tokenize adds the features of text to the table.
func (s *scratch) tokenize(text string) {
	for i := 0; i < len(text); {
		c := text[i]
		var r rune
		var class byte
		if c < utf8.RuneSelf {
			r = rune(asciiLower[c])
			class = asciiClass[c]
			i++
		} else {
			var w int
			r, w = utf8.DecodeRuneInString(text[i:])
			i += w
			switch {
			case analyze.IsCJK(r):
				class = classCJK
			case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
				class = classWord
				r = unicode.ToLower(r)
			}
		}
		switch class {
		case classWord:
			s.wordRune(r)
			s.havePrevCJK = false
		case classCJK:
			if s.inWord {
				s.endWord()
			}
			s.havePrev = false // a CJK run separates the words around it
			s.add(mix(uint64(r)^seedCJKUni), weightCJKUni)
			if s.havePrevCJK {
				s.add(mix((uint64(s.prevCJK)<<21|uint64(r))^seedCJKBi), weightCJKBi)
			}
			s.prevCJK, s.havePrevCJK = r, true
		default:
			if s.inWord {
				s.endWord()
			}
			s.havePrevCJK = false
		}
	}
	if s.inWord {
		s.endWord()
	}
}

// wordRune extends the current word by r, emitting the trigram it completes.
func (s *scratch) wordRune(r rune) {
	if !s.inWord {
		s.inWord = true
		s.wordHash = fnvOffset
		s.p1, s.haveP2 = markBegin, false
	}
	s.wordHash = (s.wordHash ^ uint64(r)) * fnvPrime
	if s.haveP2 {
		s.trigram(s.p2, s.p1, r)
	}
	s.p2, s.p1, s.haveP2 = s.p1, r, true
}

// endWord emits the features that need the whole word.
func (s *scratch) endWord() {
	s.inWord = false
	s.trigram(s.p2, s.p1, markEnd)
	h := mix(s.wordHash ^ seedWord)
	s.add(h, weightWord)
	if s.havePrev {
		s.add(mix((s.prevWord*fnvPrime)^h^seedBigram), weightBigram)
	}
	s.prevWord, s.havePrev = h, true
}

func (s *scratch) trigram(a, b, c rune) {
	s.add(mix((uint64(a)<<42|uint64(b)<<21|uint64(c))^seedTrigram), weightTrigram)
}
