package extractive

import (
	"maps"

	"github.com/lorekb/lore/internal/analyze"
	"github.com/lorekb/lore/internal/lru"
)

// The chat answers and scores its sources from the same popular passages
// turn after turn, and analyzing them (segments, sentences, stemmed terms)
// was most of the cost of Support and of an answer. Only the term weights
// and whether the question asks how depend on the question, so the process
// keeps the rest of each passage's analysis, keyed by its title and text:
// an analysis is a function of those alone, so an entry can never be stale
// (a changed passage is another key), and passages with the same text share
// one (as the lexical reranker keeps its analyses, internal/rerank/lexical).
const (
	maxCachedPassages = 2048
	maxCachedBytes    = 32 << 20
)

// passageKey is a passage's title and text, the key of its analysis.
type passageKey struct{ title, text string }

// analysis is what newCorpus reads of a passage whatever the question.
// It is shared once cached and must not be changed.
type analysis struct {
	segments []segment
	cjk      bool            // it holds CJK text, so it can hold the question's CJK terms
	all      map[string]bool // every term of the passage (corpus.pterms)
	// units are the passage's quotable units, with passage 0, for a
	// question that does not ask how ([0]) and for one that does ([1]):
	// the second also has code blocks on their own, and a sentence that
	// introduces code also has the code's terms in its context.
	units [2][]unit
	size  int // estimated bytes held
}

// analyses is the process's cache of passage analyses.
var analyses = lru.New[passageKey, *analysis](maxCachedPassages, maxCachedBytes)

// analysisOf is the analysis of the passage with title and text (the
// passage's content, which segments splits), from the cache where it has
// one.
func analysisOf(title, text string) *analysis {
	k := passageKey{title, text}
	if a, ok := analyses.Get(k); ok {
		return a
	}
	a := analyzePassage(title, segments(text))
	a.cjk = hasCJK(title) || hasCJK(text)
	a.size += len(title) + len(text)
	analyses.Add(k, a, a.size)
	return a
}

// analyzePassage splits a passage into the units a question may quote, for
// both kinds of question (see analysis.units), and gathers its terms.
func analyzePassage(title string, segs []segment) *analysis {
	a := &analysis{segments: segs, size: 128}
	sized := func(m map[string]bool) map[string]bool {
		a.size += 48
		for t := range m {
			a.size += 24 + len(t)
		}
		return m
	}
	all := termSet(title)
	ctxOf := map[string]map[string]bool{} // by heading; never changed once made
	var (
		lastSeg = [2]int{-2, -2} // the segment each variant's previous unit came from
		pos     [2]int
		howSeg  []int // the segment of each unit of units[1]
	)
	for si, seg := range segs {
		a.size += 48 + len(seg.text) + len(seg.heading)
		ctx, ok := ctxOf[seg.heading]
		if !ok {
			ctx = sized(termSet(title, seg.heading))
			ctxOf[seg.heading] = ctx
		}
		switch {
		case seg.kind == segHeading, seg.kind == segRow && !describes(seg.text):
			// Said by the page, but not quotable: a heading is what the
			// sentences under it are about, and a row of short cells
			// ("Debian – lore.deb") lacks the header that says what
			// they are. A row with a cell that is a statement (a
			// reference table's "L – last – Stop the rewriting process
			// immediately") is quoted like a sentence.
			analyze.Each(seg.text, func(t string) { all[t] = true })
		case seg.kind == segCode:
			code := boundCode(seg.text)
			terms := sized(termSet(seg.text))
			maps.Copy(all, terms)
			for v, how := range []bool{false, true} {
				us := a.units[v]
				if n := len(us); lastSeg[v] == si-1 && n > 0 && us[n-1].code == "" {
					// The sentence right before a code block introduces it
					// ("To install, run:"): the code is what it says to do.
					us[n-1].code = code
					a.size += len(code)
					if how {
						// Its context says the code's terms, and so does that
						// of the other sentences of its segment, which share
						// it; a copy, since the context may be another
						// segment's too and is the other variant's.
						ctx := maps.Clone(us[n-1].context)
						maps.Copy(ctx, terms)
						sized(ctx)
						for j := n - 1; j >= 0 && howSeg[j] == si-1; j-- {
							us[j].context = ctx
						}
					}
				} else if how {
					a.units[v] = append(us, unit{code: code, pos: pos[v], terms: terms, context: ctx})
					howSeg = append(howSeg, si)
					pos[v]++
					a.size += 80 + len(code)
				}
				lastSeg[v] = si
			}
		default:
			for _, s := range analyze.Sentences(seg.text) {
				terms := termSet(s)
				maps.Copy(all, terms)
				if !substantive(s) {
					continue
				}
				sized(terms)
				for v := range a.units {
					a.units[v] = append(a.units[v], unit{text: s, pos: pos[v], terms: terms, context: ctx})
					pos[v]++
					lastSeg[v] = si
					a.size += 80 + len(s)
				}
				howSeg = append(howSeg, si)
			}
		}
	}
	a.all = sized(all)
	return a
}
