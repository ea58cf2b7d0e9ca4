// Package lexical is a local reranker that needs no network or model: it
// scores each document with BM25 over the query terms (analyzed by package
// analyze, as the keyword index is), with idf from the site's keyword index
// when the caller has it (RerankFields) or from the candidates otherwise,
// plus bonuses when query terms sit next to each other or form the whole
// query as a phrase. It is the default so that a fresh install ranks passages sensibly
// without a paid reranking service, and it is deterministic so results are
// reproducible in tests and Temporal replays.
package lexical

import (
	"context"
	"math"
	"sort"
	"sync"

	"github.com/lorekb/lore/internal/analyze"
	"github.com/lorekb/lore/internal/rerank"
	"github.com/lorekb/lore/internal/vector"
)

// BM25 parameters. k1 is below the usual 1.2 so that repeats of one query
// term saturate sooner and a passage holding more of the question's terms
// beats one that repeats a few of them (an overview or reference page that
// names a topic many times).
const (
	k1    = 0.9
	bm25b = 0.75
)

// PhraseBonus is added to a document's score when the whole query (two or
// more terms) occurs in it as a contiguous phrase. It is small next to a
// typical BM25 score so it reorders near-ties rather than overriding term
// evidence.
const PhraseBonus = 0.5

// Reranker is the BM25 [rerank.Reranker]. The zero value is ready to use.
// RerankFields and RerankExpanded take the analyses of docs they scored
// lately from a cache (cache.go); the package's functions analyze afresh.
type Reranker struct {
	once  sync.Once
	cache *bagCache
}

func (r *Reranker) bags() *bagCache {
	r.once.Do(func() { r.cache = newBagCache(maxCachedDocs, maxCachedBytes) })
	return r.cache
}

var _ rerank.Reranker = (*Reranker)(nil)

// New returns a lexical Reranker. It exists for symmetry with the remote
// rerankers' constructors.
func New() *Reranker { return &Reranker{} }

// Rerank scores every doc against query and returns the best topN (all when
// topN <= 0), highest score first, ties broken by original index. Documents
// sharing no term with the query score 0 and come last. Scores are raw BM25
// values, not normalised to [0,1].
func (r *Reranker) Rerank(ctx context.Context, query string, docs []string, topN int) ([]rerank.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return rank(Score(query, docs), topN), nil
}

// Score returns the BM25-plus-phrase score of each doc for query, in doc
// order, treating docs as the whole corpus. It is exported for callers that
// need scores without ranking (for example to score sentences of passages).
func Score(query string, docs []string) []float64 {
	fields := make([]Doc, len(docs))
	for i, d := range docs {
		fields[i] = Doc{Text: d}
	}
	return ScoreFields(query, fields, nil)
}

// Doc is a passage with its fields apart, so a term weighs what it weighs
// in the keyword index (vector.EachFieldTerm).
type Doc struct {
	Title, Heading, Text string

	// an is the doc's analysis, made by the first scoring of the doc in
	// its slice (or taken from the Reranker's cache) and reused by the
	// next: the retrieval pipeline scores the same candidates twice
	// (RerankFields, then RerankExpanded), and analyzing every candidate's
	// text again was most of the second pass. A slice of docs must
	// therefore not be scored from two goroutines at once.
	an *bag
}

// bag is a doc's analysis: weighted term counts, their total and the terms
// of its text in order.
type bag struct {
	tf   map[string]int
	len  int
	text []string
}

// analysis returns d's bag, analyzing d on the first call.
func (d *Doc) analysis() *bag {
	if d.an == nil {
		tf, n, text := fieldBag(*d)
		d.an = &bag{tf: tf, len: n, text: text}
	}
	return d.an
}

// EachTerm calls fn with each distinct term of d's fields, from its
// analysis (made on the first call if scoring has not made it).
func (d *Doc) EachTerm(fn func(string)) {
	for t := range d.analysis().tf {
		fn(t)
	}
}

// RerankFields ranks docs like Rerank, scoring with the corpus statistics st
// (the site's, from the keyword index) so a term's weight is its rarity in
// the whole site, not among the candidates; st nil falls back to the
// candidates.
func (r *Reranker) RerankFields(ctx context.Context, query string, docs []Doc, topN int, st *vector.KeywordStats) ([]rerank.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	analyzeCached(r.bags(), docs)
	return rank(ScoreFields(query, docs, st), topN), nil
}

// RerankExpanded is RerankFields with the expansion terms exp (see
// ScoreExpanded); st should hold their statistics too.
func (r *Reranker) RerankExpanded(ctx context.Context, query string, docs []Doc, topN int, st *vector.KeywordStats, exp map[string]float64) ([]rerank.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	analyzeCached(r.bags(), docs)
	return rank(ScoreExpanded(query, docs, st, exp), topN), nil
}

// ScoreFields returns the score of each doc for query: BM25 over the
// weighted fields with idf and mean length from st (or from docs when st is
// nil), plus PhraseBonus when the whole query occurs as a phrase and a
// proximity bonus for each pair of adjacent query terms that is adjacent in
// the doc too.
func ScoreFields(query string, docs []Doc, st *vector.KeywordStats) []float64 {
	return ScoreExpanded(query, docs, st, nil)
}

// ScoreExpanded is ScoreFields with expansion terms: each term of exp that
// is not a query term adds its weight times its BM25 term score (idf from st
// too, so st should hold the expansion terms' statistics). Expansion terms
// earn no phrase or proximity bonus, and a doc matching none of the query's
// own terms scores 0 whatever it shares with the expansion.
func ScoreExpanded(query string, docs []Doc, st *vector.KeywordStats, exp map[string]float64) []float64 {
	scores := make([]float64, len(docs))
	qTerms := analyze.Terms(query)
	if len(qTerms) == 0 || len(docs) == 0 {
		return scores
	}
	unique := dedupe(qTerms)
	bags := make([]*bag, len(docs))
	totalLen := 0
	for i := range docs {
		bags[i] = docs[i].analysis()
		totalLen += bags[i].len
	}
	isQuery := make(map[string]bool, len(unique))
	for _, q := range unique {
		isQuery[q] = true
	}
	all := unique
	for t := range exp {
		if !isQuery[t] {
			all = append(all[:len(all):len(all)], t)
		}
	}
	idf := make(map[string]float64, len(all))
	var n, avgLen float64
	if st != nil && st.Docs > 0 {
		n, avgLen = float64(st.Docs), st.AvgLen
		for _, q := range all {
			idf[q] = IDF(n, float64(st.DocFreq[q]))
		}
	} else {
		n, avgLen = float64(len(docs)), float64(totalLen)/float64(len(docs))
		for _, q := range all {
			df := 0
			for _, b := range bags {
				if b.tf[q] > 0 {
					df++
				}
			}
			idf[q] = IDF(n, float64(df))
		}
	}
	if avgLen == 0 {
		avgLen = 1
	}
	for i, b := range bags {
		dl := float64(b.len)
		var s float64
		for _, q := range unique {
			tf := float64(b.tf[q])
			if tf == 0 {
				continue
			}
			s += idf[q] * tf * (k1 + 1) / (tf + k1*(1-bm25b+bm25b*dl/avgLen))
		}
		if s == 0 {
			continue
		}
		for t, w := range exp {
			tf := float64(b.tf[t])
			if tf == 0 || isQuery[t] {
				continue
			}
			s += w * idf[t] * tf * (k1 + 1) / (tf + k1*(1-bm25b+bm25b*dl/avgLen))
		}
		if len(qTerms) >= 2 && containsSeq(b.text, qTerms) {
			s += PhraseBonus
		}
		s += ProximityWeight * adjacentPairs(b.text, qTerms, idf)
		scores[i] = s
	}
	return scores
}

// FeedbackTerms returns up to n terms of the feedback docs fb (the best
// candidates of a first pass, best first) that are not query terms, for
// pseudo-relevance feedback (RM3-style query expansion): a term weighs the
// sum over the docs of its share of the doc's terms, the doc's weight
// falling with its rank, times idf(term) (from idf, the site's rarity),
// so the words the top passages share and the site seldom uses come first.
// Weights are scaled so the best term weighs 1.
func FeedbackTerms(query string, fb []Doc, n int, idf func(string) float64) map[string]float64 {
	isQuery := map[string]bool{}
	for _, q := range analyze.Terms(query) {
		isQuery[q] = true
	}
	rm := map[string]float64{}
	for i := range fb {
		b := fb[i].analysis()
		tf, dl := b.tf, b.len
		if dl == 0 {
			continue
		}
		for t, c := range tf {
			if !isQuery[t] {
				rm[t] += float64(c) / float64(dl) / float64(i+1)
			}
		}
	}
	type tw struct {
		t string
		w float64
	}
	var ranked []tw
	for t, w := range rm {
		if w *= idf(t); w > 0 {
			ranked = append(ranked, tw{t, w})
		}
	}
	sort.Slice(ranked, func(i, j int) bool {
		if ranked[i].w != ranked[j].w {
			return ranked[i].w > ranked[j].w
		}
		return ranked[i].t < ranked[j].t
	})
	if len(ranked) > n {
		ranked = ranked[:n]
	}
	out := make(map[string]float64, len(ranked))
	for _, r := range ranked {
		out[r.t] = r.w / ranked[0].w
	}
	return out
}

// ProximityWeight scales the bonus for query terms that sit next to each
// other in a passage ("restore backup" near each other beats the two words
// pages apart): each adjacent query pair found adjacent adds this share of
// the pair's mean idf.
const ProximityWeight = 0.3

// adjacentPairs sums the mean idf of the query's adjacent term pairs that
// occur adjacent (in either order) in text.
func adjacentPairs(text, q []string, idf map[string]float64) float64 {
	if len(q) < 2 || len(text) < 2 {
		return 0
	}
	want := make(map[[2]string]float64, len(q))
	for i := 0; i+1 < len(q); i++ {
		if q[i] != q[i+1] {
			w := (idf[q[i]] + idf[q[i+1]]) / 2
			want[[2]string{q[i], q[i+1]}] = w
			want[[2]string{q[i+1], q[i]}] = w
		}
	}
	var sum float64
	for i := 0; i+1 < len(text); i++ {
		p := [2]string{text[i], text[i+1]}
		if w, ok := want[p]; ok {
			sum += w
			delete(want, p) // each pair counts once
			delete(want, [2]string{p[1], p[0]})
		}
	}
	return sum
}

// IDF is the BM25 inverse document frequency of a term found in df of n
// documents (never negative). Exported so every scorer weighs terms alike.
func IDF(n, df float64) float64 {
	return math.Log(1 + (n-df+0.5)/(df+0.5))
}

// rank turns scores into results, best first, ties by original index.
func rank(scores []float64, topN int) []rerank.Result {
	results := make([]rerank.Result, len(scores))
	for i, s := range scores {
		results[i] = rerank.Result{Index: i, Score: s}
	}
	return rerank.Top(results, topN)
}

func dedupe(terms []string) []string {
	seen := make(map[string]bool, len(terms))
	out := make([]string, 0, len(terms))
	for _, t := range terms {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// containsSeq reports whether needle occurs contiguously in hay.
func containsSeq(hay, needle []string) bool {
	if len(needle) == 0 || len(needle) > len(hay) {
		return false
	}
outer:
	for i := 0; i+len(needle) <= len(hay); i++ {
		for j, t := range needle {
			if hay[i+j] != t {
				continue outer
			}
		}
		return true
	}
	return false
}

// fieldBag returns the weighted term counts of d (as vector.EachFieldTerm
// counts them for the keyword index), their total and the terms of its text
// in order. The text is analyzed once: its terms, needed in order for the
// phrase and proximity bonuses, also count in the bag with weight 1 (what
// EachFieldTerm gives text terms; TestFieldBagMatchesIndex holds the two
// together). The text is most of a chunk, and analyzing it twice was most
// of a rerank's CPU.
func fieldBag(d Doc) (tf map[string]int, n int, text []string) {
	text = analyze.Terms(d.Text)
	tf = make(map[string]int, len(text))
	vector.EachFieldTerm(d.Title, d.Heading, "", func(t string, w int) {
		tf[t] += w
		n += w
	})
	for _, t := range text {
		tf[t]++
	}
	return tf, n + len(text), text
}
