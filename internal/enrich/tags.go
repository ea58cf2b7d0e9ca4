package enrich

import (
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/lorekb/lore/internal/analyze"
)

// Weights of one occurrence of a term, by where it stands: the words that
// name a document or its sections say more about it than body text.
const (
	weightTitle   = 4.0
	weightHeading = 2.0
	weightBody    = 1.0
)

// generic words are not stop words (the index keeps them) but make poor
// tags: they fit any document.
const genericWords = `use used using uses example examples also following follow follows see note notes new
make makes made get gets set sets one two first second way ways thing things need needs want can may might
must will would should could however since without within return returns value values default defaults
true false null none different several many much more most other others same such via like just only`

var genericTerms = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(genericWords) {
		for _, t := range analyze.Terms(w) {
			m[t] = true
		}
	}
	return m
})

// termStat is what the text says about one analyzed term.
type termStat struct {
	score float64
	first int            // position of its first occurrence
	spell map[string]int // spellings in the text → occurrences
}

// salientTerms returns up to max tags: the analyzed terms with the highest
// weighted counts (ties: the earlier term), each spelled as the text most
// often spells it (a stem like "restor" is never shown). Terms are the
// keyword analyzer's, so a tag is a word the search index knows.
func salientTerms(d *parsed, max int) []string {
	stats := map[string]*termStat{}
	pos := 0
	add := func(text string, w float64) {
		for _, field := range strings.Fields(text) {
			terms, spellings := fieldTerms(field)
			for i, t := range terms {
				st := stats[t]
				if st == nil {
					st = &termStat{first: pos, spell: map[string]int{}}
					stats[t] = st
				}
				pos++
				st.score += w
				if spellings[i] != "" {
					st.spell[spellings[i]]++
				}
			}
		}
	}
	title := d.metaTitle
	headings := d.headings
	if title == "" && len(headings) > 0 {
		title, headings = headings[0], headings[1:]
	}
	add(title, weightTitle)
	for _, h := range headings {
		add(h, weightHeading)
	}
	for _, p := range d.paragraphs {
		add(p, weightBody)
	}
	for _, it := range d.items {
		add(it, weightBody)
	}

	type cand struct {
		tag   string
		score float64
		first int
	}
	var cands []cand
	generic := genericTerms()
	for t, st := range stats {
		if generic[t] {
			continue
		}
		tag := bestSpelling(st.spell)
		if !goodTag(tag) {
			continue
		}
		cands = append(cands, cand{tag, st.score, st.first})
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].score != cands[j].score {
			return cands[i].score > cands[j].score
		}
		return cands[i].first < cands[j].first
	})
	out := []string{}
	seen := map[string]bool{}
	for _, c := range cands {
		if len(out) == max {
			break
		}
		if k := strings.ToLower(c.tag); !seen[k] {
			seen[k] = true
			out = append(out, c.tag)
		}
	}
	return out
}

// fieldTerms returns the analyzed terms of one whitespace-separated field
// and the characters each came from ("" when that cannot be told): a CJK
// term is its own spelling; a field of one term, or of as many terms as it
// has word pieces ("Node.js"), maps piece by piece. An identifier
// ("readFileSync") counts as its whole word only: for a tag it is one thing,
// not the words inside it.
func fieldTerms(field string) ([]string, []string) {
	terms := analyze.Terms(field)
	out := make([]string, len(terms))
	pieces := strings.FieldsFunc(field, func(r rune) bool { return !isWordRune(r) })
	switch {
	case len(terms) == 0:
	case len(pieces) == len(terms):
		for i := range terms {
			if !hasCJK(pieces[i]) {
				out[i] = pieces[i]
			}
		}
	case len(pieces) == 1 && !hasCJK(pieces[0]):
		return terms[:1], []string{pieces[0]}
	}
	for i, t := range terms {
		if hasCJK(t) {
			out[i] = t
		}
	}
	return terms, out
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }

func hasCJK(s string) bool {
	for _, r := range s {
		if analyze.IsCJK(r) {
			return true
		}
	}
	return false
}

// bestSpelling is the most frequent spelling, counting a capitalised word
// ("Install" at a sentence start) as its lower-case form when the text also
// has that.
func bestSpelling(spell map[string]int) string {
	merged := map[string]int{}
	for s, n := range spell {
		lower := strings.ToLower(s)
		if s != lower && spell[lower] > 0 && isCapitalised(s) {
			s = lower
		}
		merged[s] += n
	}
	best, bestN := "", 0
	for s, n := range merged {
		if n > bestN || n == bestN && preferSpelling(s, best) {
			best, bestN = s, n
		}
	}
	return best
}

// preferSpelling breaks a tie between two spellings: lower case first, then
// the shorter, then the alphabetically first (so the choice is stable).
func preferSpelling(a, b string) bool {
	la, lb := a == strings.ToLower(a), b == strings.ToLower(b)
	switch {
	case la != lb:
		return la
	case len(a) != len(b):
		return len(a) < len(b)
	}
	return a < b
}

func isCapitalised(s string) bool {
	r, size := utf8.DecodeRuneInString(s)
	return unicode.IsUpper(r) && s[size:] == strings.ToLower(s[size:])
}

// goodTag keeps words of 3 to MaxTagRunes characters (2 for CJK) that are
// not plain numbers.
func goodTag(s string) bool {
	n := utf8.RuneCountInString(s)
	if n > MaxTagRunes || n < 2 || n < 3 && !hasCJK(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsDigit(r) && r != '_' {
			return true
		}
	}
	return false
}
