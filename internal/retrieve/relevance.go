package retrieve

import (
	"unicode"

	"github.com/lorekb/lore/internal/embed"
	"github.com/lorekb/lore/internal/rerank/lexical"
	"github.com/lorekb/lore/internal/vector"
)

// section identifies a document's section: chunks cut from one section
// share its heading path.
type section struct {
	doc     int64
	heading string
}

func sectionOf(h vector.Hit) section { return section{h.DocumentID, h.Heading} }

// sectionWords returns, for each section of the shown results, which of the
// query words qWords its chunks in the recall pool contain together (title,
// heading or text; only those sections' chunks are analyzed). A section longer than a chunk is cut into several, and the
// answer to a question often spans the cut (the call in one chunk, what it
// returns in the next): judged chunk by chunk, the section that answers
// would look as if it covered only half the question. Only the recall pool's
// chunks count, never a chunk the query did not retrieve, and never another
// section of the document: words scattered over a long page are no
// evidence that it answers the question (counting the whole page's
// candidates let "明天北京的天气怎么样？" through the responder's threshold).
func sectionWords(pool, shown []Result, qWords []string, all bool) map[section]*sectionTerms {
	want := make(map[string]bool, len(qWords))
	for _, w := range qWords {
		want[w] = true
	}
	out := make(map[section]*sectionTerms, len(shown))
	for _, r := range shown {
		st := &sectionTerms{have: make(map[string]bool, len(qWords))}
		if all {
			st.words = map[string]bool{}
		}
		out[sectionOf(r.Hit)] = st
	}
	for _, r := range pool {
		st, ok := out[sectionOf(r.Hit)]
		if !ok {
			continue
		}
		// The chunk's distinct words, in the order they first come: a repeat
		// would change nothing (the maps only grow, so one not kept for
		// maxSectionWords the first time is not kept the next).
		for _, t := range wordsOf(r.Hit) {
			if want[t] {
				st.have[t] = true
			} else if st.words != nil && len(st.words) < maxSectionWords && !hasDigit(t) {
				// A number or an identifier with digits ("100",
				// "y2008m01") is no synonym of anything, however near
				// its vector sits (hasDigit: the query side likewise).
				st.words[t] = true
			}
		}
	}
	return out
}

// sectionTerms are the query words a section holds and, for matching
// words by meaning, its other words.
type sectionTerms struct {
	have  map[string]bool
	words map[string]bool
}

// maxSectionWords bounds the words kept per section for matching by
// meaning (a section is a few chunks; this only stops a pathological one).
const maxSectionWords = 4000

// A section's word stands in for a query word the section lacks, at their
// similarity in meaning (the cosine of their vectors) times the query word's
// weight, when it is one of the query word's nearest words in the model's
// vocabulary (embed.TermMatcher.NeighbourSimilarity) and at least
// SimilarFloor similar: a synonym or a close inflection counts for the word,
// a word merely used in the same documents does not. Nearness is asked
// relative to each word's own neighbourhood because cosines are not alike
// across words: a common word's neighbours are all fairly close to it, a
// rare or specific word's few true synonyms may sit well below them.
const SimilarFloor = 0.4

// relevance is the share of the query words' idf that have (the words a
// chunk's section holds, see sectionWords) contains, and 0 for a section
// that holds none of the query's own words, whatever its words mean (as the
// lexical reranker scores such a chunk 0): words close in meaning confirm a
// section on the question's topic, they do not make one. Words the site never
// uses weigh the most, so a question about something else scores near 0
// even when one common word matches. It counts whole words only
// (analyze.Words): the characters of Chinese words help ranking, but a
// question sharing only characters with the docs (法国 with 法律) is not
// covered by them.
func relevance(qWords []string, sec *sectionTerms, st *vector.KeywordStats, m embed.TermMatcher) float64 {
	if len(qWords) == 0 || sec == nil {
		return 0
	}
	n := 1000.0 // without statistics every term weighs alike
	if st != nil {
		n = float64(st.Docs)
	}
	var got, all float64
	literal := false
	for _, q := range qWords {
		df := 1.0
		if st != nil {
			df = float64(st.DocFreq[q])
		}
		w := lexical.IDF(n, df)
		if sec.have[q] {
			got += w
			all += w
			literal = true
		} else if !hasDigit(q) {
			all += w
			if m != nil {
				got += w * bestSimilar(q, sec.words, m)
			}
		}
	}
	if all == 0 || !literal {
		return 0
	}
	return got / all
}

// hasDigit reports whether a query word holds a digit: an example value the
// reader typed (a UUID, a port, a year, "page=2") rather than vocabulary a
// page must share. Such a word counts for a section that holds it and is
// left out of the question's weight for one that does not (it is a word the
// site never uses, so it would weigh the most and sink every page).
func hasDigit(w string) bool {
	for _, r := range w {
		if unicode.IsDigit(r) {
			return true
		}
	}
	return false
}

// bestSimilar is the highest similarity in meaning of q to one of words, if
// that word is one of q's nearest and reaches SimilarFloor (else 0).
func bestSimilar(q string, words map[string]bool, m embed.TermMatcher) float64 {
	best := max(0, m.MostSimilar(q, words))
	if best < max(SimilarFloor, m.NeighbourSimilarity(q)) {
		return 0
	}
	return best
}
