// Package gen generates deterministic, realistic-looking Markdown documents
// for the API benchmark: titles, headings, paragraphs, lists and code blocks
// drawn from a Zipf-distributed vocabulary of common English and generated
// technical words, so substring search has real work to do.
package gen

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Keyword is planted in a fixed share of the documents; no vocabulary word
// contains it (checked in New).
const Keyword = "quokkafrost"

var common = strings.Fields(`the of and to in is for that on with as by this are be it from or an at can not
you your we will all when which use one if has more also each its after only before must other new should
may these into than then used using set sets value values file files request response server client data
user users page pages site sites document documents search index query result results error errors config
configuration option options default time timeout limit size version update create delete list read write
start stop run running process service cache memory disk network port address host path name key token
session message event events stream buffer queue worker job task tasks retry backoff policy schema table
column row field type types string number boolean array object method function module package library
install upgrade release build deploy test tests check status state health metric metrics log logs trace
level mode system local remote public private admin access role permission password account email team
project workspace branch commit merge review change changes note notes guide section example examples
first second last next previous return returns called call calls handle handler route routes api endpoint
upload download image images link links text content title summary author category tag tags view views
chunk chunks vector vectors embedding model models answer question questions chat assistant source sources`)

var syllables = strings.Fields(`ka lo ri ven tor mal dex sen qua ber lin tra vos mir pel dor gan fis hel zur
bra cin dal eph gor hum ix jel kor lum myr nex orb pra quen ros sil tev ulm vor wex yor zan ath bel cor dun`)

// Generator makes documents; it is not safe for concurrent use.
type Generator struct {
	rng   *rand.Rand
	vocab []string
	zipf  *rand.Zipf
}

// New returns a generator seeded deterministically.
func New(seed uint64) *Generator {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	seen := map[string]bool{}
	vocab := make([]string, 0, 6000)
	for _, w := range common {
		if !seen[w] {
			seen[w] = true
			vocab = append(vocab, w)
		}
	}
	for len(vocab) < 6000 {
		n := 2 + rng.IntN(3)
		var b strings.Builder
		for range n {
			b.WriteString(syllables[rng.IntN(len(syllables))])
		}
		w := b.String()
		if seen[w] || strings.Contains(w, Keyword) {
			continue
		}
		seen[w] = true
		vocab = append(vocab, w)
	}
	// Interleave so that the frequent ranks mix common and technical words.
	rng.Shuffle(len(vocab)-40, func(i, j int) { vocab[40+i], vocab[40+j] = vocab[40+j], vocab[40+i] })
	return &Generator{rng: rng, vocab: vocab, zipf: rand.NewZipf(rng, 1.07, 2, uint64(len(vocab)-1))}
}

func (g *Generator) word() string { return g.vocab[g.zipf.Uint64()] }

func (g *Generator) words(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = g.word()
	}
	return out
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func (g *Generator) sentence() string {
	ws := g.words(6 + g.rng.IntN(14))
	ws[0] = capitalize(ws[0])
	if g.rng.IntN(6) == 0 {
		ws[g.rng.IntN(len(ws))] = "`" + g.word() + "`"
	}
	end := "."
	if g.rng.IntN(12) == 0 {
		end = "?"
	}
	return strings.Join(ws, " ") + end
}

func (g *Generator) paragraph() string {
	n := 2 + g.rng.IntN(5)
	s := make([]string, n)
	for i := range s {
		s[i] = g.sentence()
	}
	return strings.Join(s, " ")
}

// Title returns a title of a few capitalised words.
func (g *Generator) Title() string {
	ws := g.words(3 + g.rng.IntN(5))
	for i := range ws {
		ws[i] = capitalize(ws[i])
	}
	return strings.Join(ws, " ")
}

// Document returns a Markdown document of about size bytes under title; with
// keyword true, Keyword appears once in a paragraph.
func (g *Generator) Document(title string, size int, keyword bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n%s\n\n", title, g.paragraph())
	var paras []int // byte offsets where a paragraph was written
	for b.Len() < size {
		switch r := g.rng.IntN(10); {
		case r == 0:
			fmt.Fprintf(&b, "## %s\n\n", g.Title())
		case r == 1:
			for range 2 + g.rng.IntN(4) {
				fmt.Fprintf(&b, "- %s\n", strings.Join(g.words(3+g.rng.IntN(8)), " "))
			}
			b.WriteString("\n")
		case r == 2 && g.rng.IntN(2) == 0:
			fmt.Fprintf(&b, "```\n%s --%s=%d\n%s(%s)\n```\n\n", g.word(), g.word(), g.rng.IntN(1000), g.word(), g.word())
		default:
			paras = append(paras, b.Len())
			b.WriteString(g.paragraph())
			b.WriteString("\n\n")
		}
	}
	out := b.String()
	if keyword && len(paras) > 0 {
		at := paras[g.rng.IntN(len(paras))]
		out = out[:at] + "The " + Keyword + " setting is described here. " + out[at:]
	}
	return out
}

// Summary returns a one-sentence summary.
func (g *Generator) Summary() string { return g.sentence() }
