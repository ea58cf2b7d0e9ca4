package extractive

import (
	"math"
	"regexp"
	"sort"
	"strings"
	"unicode"

	"github.com/lorekb/lore/internal/analyze"
)

const (
	maxAnswerSentences = 4
	maxSentenceRunes   = 400
	// A quoted code block is bounded: the answer points at the command,
	// the page has the rest.
	maxCodeLines = 8
	maxCodeRunes = 400
)

// AbstainBelow is the relevance (the search's share of the question's term
// weight that a passage's section holds) under which a passage is not
// evidence enough: when no passage reaches it, the responder says the
// documentation does not cover the question instead of quoting an unrelated
// passage. Calibrated on make eval: off-topic questions stay under it,
// answerable ones rarely fall below it.
const AbstainBelow = 0.5

// supportsPart is the share of a question part's term weight a sentence
// must hold to count as answering that part: the share AbstainBelow asks of
// a passage, asked of a sentence.
const supportsPart = AbstainBelow

// contextShare is what a question term counts for when a sentence does not
// say it but its heading or the page's title does: the sentence is about it,
// without stating it.
const contextShare = 0.5

// rankPrior discounts a passage by its place in the search's order: mild,
// so it breaks near-ties between sentences but never outweighs a sentence
// that holds clearly more of the question (the fifth passage keeps 5/6).
func rankPrior(rank int) float64 { return 1 / (1 + float64(rank)/25) }

// leadMargin is how much more of the question's weight (support, 0..1) a
// sentence of a later relevant passage must state than the first relevant
// passage's best sentence to lead the answer instead: a sentence stating
// nearly all of the question beats one stating under half of it, while
// near-ties keep the search's order.
const leadMargin = 0.4

// --- answering ---

// unit is a sentence (or a code block) that may be quoted.
type unit struct {
	text    string // the sentence; "" for a code block on its own
	code    string // a code block quoted with it
	passage int    // index in the passage list (the search's order)
	pos     int
	terms   map[string]bool // what it says
	context map[string]bool // what its heading and the page title say
}

// corpus is the question and the passages' units, with the term weights
// that support is measured with.
type corpus struct {
	passages []passage
	units    []unit
	parts    []part
	how      bool
	weight   map[string]float64 // idf of each question term over the units
	pterms   []map[string]bool  // every term of each passage
}

func termSet(texts ...string) map[string]bool {
	set := map[string]bool{}
	for _, s := range texts {
		analyze.Each(s, func(t string) { set[t] = true })
	}
	return set
}

// newCorpus builds the corpus of query over passages from their cached
// analyses: only whether the question asks how and the term weights are
// the question's.
func newCorpus(query string, passages []passage) *corpus {
	c := &corpus{passages: passages, parts: questionParts(query), how: howRe.MatchString(query)}
	variant := 0
	if c.how {
		variant = 1
	}
	size := 0
	for _, p := range passages {
		size += len(p.an.units[variant])
	}
	c.units = make([]unit, 0, size)
	c.pterms = make([]map[string]bool, len(passages))
	for pi, p := range passages {
		for _, u := range p.an.units[variant] {
			u.passage = pi // a copy: the maps it shares are only read
			c.units = append(c.units, u)
		}
		c.pterms[pi] = p.an.all
	}
	// A term weighs by its rarity among the units; one that no unit holds
	// weighs as much as the rarest held one.
	n := float64(len(c.units))
	c.weight = map[string]float64{}
	for _, p := range c.parts {
		for _, t := range p {
			df := 0
			for _, u := range c.units {
				if u.terms[t] {
					df++
				}
			}
			c.weight[t] = math.Log(1 + n/float64(max(df, 1)))
		}
	}
	return c
}

// substantive reports whether a sentence can say something: at least three
// words (a CJK character counting half, since Chinese words are mostly two
// characters long) of the text a reader sees, so without link targets and
// image sources, and not only links. A lone heading word, "Yes.", a page's
// "back to top" image link or a table of contents' entry cannot answer.
func substantive(s string) bool {
	if strings.Contains(s, "](") { // a Markdown link or image
		s = reMarkdownImage.ReplaceAllString(s, "$1")
		if !strings.ContainsFunc(reMarkdownLink.ReplaceAllString(s, ""), unicode.IsLetter) {
			return false // only links: a table of contents' entry points, it does not state
		}
		s = reMarkdownLink.ReplaceAllString(s, "$1")
	}
	n := 0.0
	inWord := false
	for _, r := range s {
		switch {
		case analyze.IsCJK(r):
			n += 0.5
			inWord = false
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if !inWord {
				n++
			}
			inWord = true
		default:
			inWord = false
		}
	}
	return n >= 3
}

var (
	reMarkdownImage = regexp.MustCompile(`!\[([^\]]*)\]\([^)]*\)`)
	reMarkdownLink  = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// describes reports whether a table row (cells joined by cellSep) has a cell
// of at least five words: a description, not only names and values.
func describes(row string) bool {
	for _, cell := range strings.Split(row, cellSep) {
		if len(strings.Fields(cell)) >= 5 {
			return true
		}
	}
	return false
}

// boundCode cuts a code block to maxCodeLines lines and maxCodeRunes runes.
func boundCode(code string) string {
	lines := strings.Split(code, "\n")
	cut := len(lines) > maxCodeLines
	if cut {
		lines = lines[:maxCodeLines]
	}
	code = strings.Join(lines, "\n")
	if r := []rune(code); len(r) > maxCodeRunes {
		code, cut = string(r[:maxCodeRunes]), true
	}
	if cut {
		code += "\n…"
	}
	return code
}

// countable reports whether term t of the question can be evidence in
// passage pi: a CJK term only in a passage that holds CJK text. An English
// page cannot say 冲突, so a Chinese question's Chinese words neither count
// for nor against it; its English words (git rebase) still do.
func (c *corpus) countable(t string, pi int) bool {
	return !isCJKTerm(t) || c.passages[pi].an.cjk
}

// support is the share of part p's term weight that unit u holds, in [0,1]:
// a term u says counts fully, one only its heading or the page title says
// counts contextShare. ok is false when no term of the part can be evidence
// in u's passage.
func (c *corpus) support(u unit, p part) (s float64, ok bool) {
	var got, all float64
	for _, t := range p {
		if !c.countable(t, u.passage) {
			continue
		}
		w := c.weight[t]
		all += w
		switch {
		case u.terms[t]:
			got += w
		case u.context[t]:
			got += contextShare * w
		}
	}
	if all == 0 {
		return 0, false
	}
	return got / all, true
}

// mixedScript reports whether the question has CJK terms and others.
func (c *corpus) mixedScript() (cjk, other bool) {
	for _, p := range c.parts {
		for _, t := range p {
			if isCJKTerm(t) {
				cjk = true
			} else {
				other = true
			}
		}
	}
	return cjk, other
}

// relevanceOf is passage pi's relevance to the question: the search's, or,
// for a question in two scripts and a passage without CJK text, at least the
// share of the question's non-CJK term weight the passage holds, since the
// search's figure counts words the passage cannot be written in.
func (c *corpus) relevanceOf(pi int) float64 {
	r := c.passages[pi].relevance
	if cjk, other := c.mixedScript(); !cjk || !other || c.passages[pi].an.cjk {
		return r
	}
	var got, all float64
	for _, p := range c.parts {
		for _, t := range p {
			if isCJKTerm(t) {
				continue
			}
			all += c.weight[t]
			if c.pterms[pi][t] {
				got += c.weight[t]
			}
		}
	}
	return max(r, got/all) // all > 0: the question has non-CJK terms
}

// nearDuplicate reports whether u says what v says: most of their terms
// are shared (a sentence repeated on two pages, or reworded slightly).
func nearDuplicate(u, v unit) bool {
	if u.text == v.text && u.code == v.code {
		return true
	}
	shared := 0
	for t := range u.terms {
		if v.terms[t] {
			shared++
		}
	}
	union := len(u.terms) + len(v.terms) - shared
	return union > 0 && float64(shared) >= 0.8*float64(union)
}

// answer composes the cited reply to query from passages (see the package
// documentation).
func answer(query string, passages []passage) string {
	c := newCorpus(query, passages)
	known := false
	relevant := make([]bool, len(passages))
	anyRelevant := false
	for i, p := range passages {
		known = known || p.relevance >= 0
		relevant[i] = c.relevanceOf(i) >= AbstainBelow
	}
	for i := range relevant {
		// Without the search's figures every passage it returned counts.
		relevant[i] = relevant[i] || !known
		anyRelevant = anyRelevant || relevant[i]
	}
	if !anyRelevant || len(c.units) == 0 {
		return NotFoundAnswer
	}
	// The search measures a passage against the whole question, so a page
	// that answers one part of a question asking two holds only that part's
	// share of it: each of its sentences still has to support its part.
	eligible := func(u unit) bool {
		return relevant[u.passage] || len(c.parts) > 1
	}
	score := func(i int, p part) (float64, float64) {
		s, ok := c.support(c.units[i], p)
		if !ok {
			return 0, 0
		}
		return s, s * rankPrior(c.units[i].passage)
	}

	var (
		picked   []int
		isPicked = map[int]bool{}
		forPart  = map[int]int{}                 // the part a unit was picked for
		covered  = map[string]bool{}             // question terms picked sentences say
		best     = make([]float64, len(c.parts)) // support of each part's best sentence
	)
	quoted := map[int]bool{} // passages a picked unit comes from
	pick := func(i, p int) {
		picked = append(picked, i)
		quoted[c.units[i].passage] = true
		isPicked[i], forPart[i] = true, p
		for t := range c.units[i].terms {
			covered[t] = true
		}
	}
	duplicate := func(i int) bool {
		for _, j := range picked {
			if nearDuplicate(c.units[i], c.units[j]) {
				return true
			}
		}
		return false
	}

	// The search's first relevant passage leads with its best sentence:
	// the search ranks pages better than one sentence's words can, and the
	// first citation is the one a reader follows. Unless another relevant
	// passage has a sentence that states clearly more of the question
	// (leadMargin): "Returns the string path of the current user's home
	// directory" answers "Where is the current user's home directory?"
	// better than the first page's sentence that says "directory" once.
	// (A question of several parts is answered part by part, in its own
	// order.)
	lead, lscore := -1, 0.0
	for i, u := range c.units {
		if len(c.parts) != 1 {
			break
		}
		if lead >= 0 && u.passage != c.units[lead].passage {
			break
		}
		if !relevant[u.passage] || !eligible(u) {
			continue
		}
		for _, terms := range c.parts {
			if _, sc := score(i, terms); sc > lscore {
				lead, lscore = i, sc
			}
		}
	}
	if lead >= 0 {
		ls, _ := score(lead, c.parts[0])
		for i, u := range c.units {
			if !relevant[u.passage] || u.passage == c.units[lead].passage || u.text == "" {
				continue // a code block alone names the question's words without stating an answer
			}
			if s, _ := score(i, c.parts[0]); s >= ls+leadMargin {
				lead, ls = i, s
			}
		}
		// A sentence that states under half of the question is weak
		// evidence of where the answer is: then the search's first
		// passage, which its order puts above the relevant ones on more
		// than shared words (meaning, title, the page's other sections),
		// leads with its best sentence instead, even below AbstainBelow.
		if ls < supportsPart && !relevant[0] && c.units[lead].passage != 0 {
			first, fs := -1, 0.0
			for i, u := range c.units {
				if u.passage != 0 {
					break // units come in passage order
				}
				if s, _ := score(i, c.parts[0]); s > fs {
					first, fs = i, s
				}
			}
			if first >= 0 {
				lead = first
			}
		}
		pick(lead, 0)
	}
	// Each part the passages support gets its best sentence: from a
	// passage the search judged relevant to the whole question when one
	// supports the part, since a sentence elsewhere that happens to say the
	// part's words is weaker evidence than the page that answers the rest.
	for p, terms := range c.parts {
		bi, bs, bscore := -1, 0.0, 0.0
		for _, strict := range []bool{true, false} {
			for i, u := range c.units {
				if !eligible(u) || strict && !relevant[u.passage] {
					continue
				}
				if s, sc := score(i, terms); s >= supportsPart && sc > bscore {
					bi, bs, bscore = i, s, sc
				}
			}
			if bi >= 0 {
				break
			}
		}
		best[p] = bs
		if bi >= 0 && !isPicked[bi] && !duplicate(bi) && len(picked) < maxAnswerSentences {
			pick(bi, p)
		}
	}
	// Then more while they add to the answer: a sentence that supports a
	// part, stating some of it itself (not only under a heading that does),
	// goes in when it continues a passage already quoted, supports the part
	// as well as its best one, or says a term of it no quoted sentence says.
	if len(picked) > 0 {
		order := make([]int, 0, len(c.units))
		top := make([]float64, len(c.units))
		for i, u := range c.units {
			if !eligible(u) || isPicked[i] {
				continue
			}
			for _, terms := range c.parts {
				_, sc := score(i, terms)
				top[i] = max(top[i], sc)
			}
			order = append(order, i)
		}
		sort.SliceStable(order, func(a, b int) bool { return top[order[a]] > top[order[b]] })
		for _, i := range order {
			if len(picked) >= maxAnswerSentences {
				break
			}
			for p, terms := range c.parts {
				s, _ := score(i, terms)
				if s < supportsPart || !c.states(i, terms) ||
					(s < best[p] && !quoted[c.units[i].passage] && !c.addsTerm(i, terms, covered)) {
					continue
				}
				if !duplicate(i) {
					pick(i, p)
				}
				break
			}
		}
	}
	if len(picked) == 0 {
		// No sentence holds half of any part (or the question has no
		// content words, or none in the passages' script), but the search
		// judged a passage relevant: quote its best sentence, or its opening.
		opening, bi, bscore := -1, -1, 0.0
		for i, u := range c.units {
			if !relevant[u.passage] {
				continue
			}
			if opening < 0 {
				opening = i
			}
			for _, terms := range c.parts {
				if _, sc := score(i, terms); sc > bscore {
					bi, bscore = i, sc
				}
			}
		}
		if bi < 0 {
			bi = opening
		}
		if bi < 0 {
			return NotFoundAnswer
		}
		picked = []int{bi}
	}
	return c.render(picked, forPart, lead)
}

// states reports whether unit i itself says a countable term of p.
func (c *corpus) states(i int, p part) bool {
	return c.addsTerm(i, p, nil)
}

// addsTerm reports whether unit i says a countable term of p that no quoted
// sentence says.
func (c *corpus) addsTerm(i int, p part, covered map[string]bool) bool {
	u := c.units[i]
	for _, t := range p {
		if u.terms[t] && !covered[t] && c.countable(t, u.passage) {
			return true
		}
	}
	return false
}

// render writes the picked units, grouped by passage (the lead's passage
// first, then groups in the order of the question part each first answers,
// then in the search's order, so the first citation is the passage that
// answers best) and in passage order within a group, each cited with its
// passage's number.
func (c *corpus) render(picked []int, forPart map[int]int, lead int) string {
	first := map[int]int{} // passage -> rank of the group
	for _, i := range picked {
		pi := c.units[i].passage
		key := forPart[i]*len(c.passages) + pi
		if i == lead {
			key = -1
		}
		if r, ok := first[pi]; !ok || key < r {
			first[pi] = key
		}
	}
	sort.SliceStable(picked, func(a, b int) bool {
		ua, ub := c.units[picked[a]], c.units[picked[b]]
		if ua.passage != ub.passage {
			return first[ua.passage] < first[ub.passage]
		}
		return ua.pos < ub.pos
	})
	var b strings.Builder
	for k, i := range picked {
		u := c.units[i]
		cite := "[" + c.passages[u.passage].num + "]"
		if k > 0 {
			if strings.HasSuffix(b.String(), "```") {
				b.WriteString("\n\n")
			} else {
				b.WriteString(" ")
			}
		}
		if u.text != "" {
			b.WriteString(truncateRunes(shownLinks(u.text), maxSentenceRunes) + " " + cite)
		}
		if u.code != "" && c.how {
			if u.text != "" {
				b.WriteString("\n\n")
			}
			b.WriteString("```\n" + u.code + "\n```")
			if u.text == "" {
				b.WriteString("\n" + cite)
			}
		}
	}
	return b.String()
}

// Support is how well each search passage (its title and its content as
// the search stores it) supports query, in [0,1]: for each part of the
// question, the share of that part's term weight (idf over the passages'
// sentences) that the passage's best sentence holds, a term only its
// heading or the page's title says counting half, averaged over the parts
// by their weight. 1 means a sentence of the passage states every content
// term of the question, 0.5 that its best sentences hold half the question's
// weight, 0 that none holds any. A term in a script the passage is not
// written in is not counted (an English page is judged on a Chinese
// question's English words). The chat lists it as each source's score.
func Support(query string, titles, contents []string) []float64 {
	passages := make([]passage, len(contents))
	for i, content := range contents {
		title := ""
		if i < len(titles) {
			title = titles[i]
		}
		passages[i] = passage{title: title, relevance: -1, an: analysisOf(title, content)}
	}
	c := newCorpus(strings.TrimSpace(query), passages)
	out := make([]float64, len(passages))
	for pi := range passages {
		var got, all float64
		for _, p := range c.parts {
			var w float64
			for _, t := range p {
				if c.countable(t, pi) {
					w += c.weight[t]
				}
			}
			if w == 0 {
				continue
			}
			bs := 0.0
			for _, u := range c.units {
				if u.passage == pi {
					s, _ := c.support(u, p)
					bs = max(bs, s)
				}
			}
			got += bs * w
			all += w
		}
		if all > 0 {
			out[pi] = math.Round(got/all*1000) / 1000
		}
	}
	return out
}
