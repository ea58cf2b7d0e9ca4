// Package retrieve is Lore's one retrieval pipeline: what the chat's search
// tool and the admins' retrieval test run, so what an admin tests is what the
// chat gets. A query goes through up to three stages, each of which can be
// switched off to measure what it adds (make eval does):
//
//  1. recall: dense (the query's embedding against chunk vectors, above a
//     cosine floor) and keyword (BM25 over the analyzed title, heading path
//     and text, with the site's own idf);
//  2. fusion: weighted reciprocal-rank fusion of the two lists;
//  3. rerank: the configured reranker over the fused candidates that the
//     caller may show; the built-in lexical reranker scores with the site's
//     keyword statistics rather than the candidates', then again with the
//     query expanded by the words of its first pass's best documents
//     (pseudo-relevance feedback, weighted low).
//
// Every result carries the score of every stage and a relevance in [0, 1]:
// the share of the query's term weight (idf from the whole site) that the
// chunk contains. A question whose words the site never uses has relevance
// near 0 everywhere, which is how the responder knows to say the docs do not
// cover it.
package retrieve

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/lorekb/lore/internal/analyze"
	"github.com/lorekb/lore/internal/embed"
	"github.com/lorekb/lore/internal/gctune"
	"github.com/lorekb/lore/internal/rerank"
	"github.com/lorekb/lore/internal/rerank/lexical"
	"github.com/lorekb/lore/internal/vector"
)

// MaxQueryRunes bounds a query: longer ones are cut (a question is never
// this long; a pasted document would only slow every stage down).
const MaxQueryRunes = 2000

// Stages says which stages run. The zero value runs none; use AllStages.
type Stages struct {
	Dense   bool `json:"dense"`
	Keyword bool `json:"keyword"`
	Rerank  bool `json:"rerank"`
}

// AllStages is the production pipeline.
func AllStages() Stages { return Stages{Dense: true, Keyword: true, Rerank: true} }

// Options tune one run.
type Options struct {
	RecallK   int     // candidates from each recall side, and in the fused pool
	Threshold float32 // dense cosine floor
	TopK      int     // results returned
	Stages    Stages
	// DenseWeight and KeywordWeight weigh the two lists in fusion; zero
	// means DefaultDenseWeight / DefaultKeywordWeight.
	DenseWeight, KeywordWeight float64
}

// Fusion weights: the dense and keyword lists count alike for a query the
// embedder knows (the learned embedder, or a real model); see denseWeight
// for one it does not. RAG_DENSE_WEIGHT changes the dense list's weight.
const (
	DefaultDenseWeight   = 1.0
	DefaultKeywordWeight = 1.0
	rrfK                 = 60
)

// Result is one ranked chunk with the score of every stage. A stage that
// did not see the chunk leaves its score nil.
type Result struct {
	Hit       vector.Hit
	Dense     *float64 // cosine similarity
	Keyword   *float64 // BM25
	Fused     float64  // weighted reciprocal-rank fusion
	Rerank    *float64 // reranker score
	Relevance float64  // share of the query's idf mass in the chunk, 0..1
	Score     float64  // the score the ranking is by
}

// Filter keeps the hits the caller may show (published, in the wanted
// collection, of the wanted documents). It runs before reranking, so the
// reranker spends its budget on showable chunks.
type Filter func(ctx context.Context, hits []vector.Hit) ([]vector.Hit, error)

// Observer records the latency of a model call (embedding, rerank).
type Observer func(kind, model string, took time.Duration, err error)

// Pipeline holds what a run needs. Reranker may be nil when Stages.Rerank
// is off.
type Pipeline struct {
	Store    vector.Store
	Embedder embed.Embedder
	Reranker rerank.Reranker
	Observe  Observer
}

// ErrEmbed wraps a failure of the embedding call, so callers can classify
// it as a model error.
var ErrEmbed = errors.New("retrieve: embedding failed")

// ErrRerank wraps a failure of the rerank call.
var ErrRerank = errors.New("retrieve: rerank failed")

// Run retrieves the best chunks of the site for query.
func (p Pipeline) Run(ctx context.Context, siteID int64, query string, opt Options, filter Filter) ([]Result, error) {
	query = clip(query, MaxQueryRunes)
	if opt.DenseWeight <= 0 {
		opt.DenseWeight = DefaultDenseWeight
	}
	if opt.KeywordWeight <= 0 {
		opt.KeywordWeight = DefaultKeywordWeight
	}
	if opt.RecallK <= 0 || opt.TopK <= 0 || !isPrintable(query) {
		return nil, nil
	}
	// The keyword half needs no embedding, so it runs while the query is
	// embedded and searched.
	type keywordResult struct {
		hits []vector.Hit
		err  error
	}
	kctx, cancel := context.WithCancel(ctx)
	defer cancel()
	keyword := make(chan keywordResult, 1)
	go func() {
		gctune.PregrowStack() // the keyword search goes deep (pgx, the BM25 index)
		var r keywordResult
		if opt.Stages.Keyword {
			r.hits, r.err = p.Store.KeywordSearch(kctx, siteID, query, opt.RecallK)
		}
		keyword <- r
	}()
	dense, qvec, err := p.dense(ctx, siteID, query, opt)
	if err != nil {
		cancel() // the keyword half is of no use now
		<-keyword
		return nil, err
	}
	kw := <-keyword
	if kw.err != nil {
		return nil, kw.err
	}
	sparse := kw.hits
	results := fuse(dense, sparse, p.denseWeight(query, opt.DenseWeight), opt.KeywordWeight)
	if len(results) > opt.RecallK {
		results = results[:opt.RecallK] // the union is a recall pool of RecallK too
	}
	if filter != nil && len(results) > 0 {
		hits := make([]vector.Hit, len(results))
		for i, r := range results {
			hits[i] = r.Hit
		}
		kept, err := filter(ctx, hits)
		if err != nil {
			return nil, err
		}
		results = keep(results, kept)
	}
	if len(results) == 0 {
		return nil, nil
	}
	qTerms := dedupe(analyze.Terms(query))
	stats, err := p.stats(ctx, siteID, qTerms)
	if err != nil {
		return nil, err
	}
	pool := results
	if opt.Stages.Rerank && p.Reranker != nil {
		if results, err = p.rerank(ctx, siteID, query, qvec, results, opt.TopK, stats); err != nil {
			return nil, err
		}
	} else if len(results) > opt.TopK {
		results = results[:opt.TopK]
	}
	qWords := dedupe(analyze.Words(query))
	matcher, _ := embed.Unwrap(p.Embedder).(embed.TermMatcher)
	covered := sectionWords(pool, results, qWords, matcher != nil)
	bySection := make(map[section]float64, len(covered)) // a section's chunks share its figure
	for i := range results {
		sec := sectionOf(results[i].Hit)
		r, ok := bySection[sec]
		if !ok {
			r = relevance(qWords, covered[sec], stats, matcher)
			bySection[sec] = r
		}
		results[i].Relevance = r
	}
	return results, nil
}

// denseWeight is the dense list's fusion weight for query: w for a query
// the embedder fully knows, down to half of it for one it does not know at
// all (a learned model's fallback to hashing, which finds the right page
// less often than the keyword list).
func (p Pipeline) denseWeight(query string, w float64) float64 {
	c, ok := embed.Unwrap(p.Embedder).(embed.Coverer)
	if !ok {
		return w
	}
	return w * (0.5 + 0.5*c.Coverage(query))
}

// dense embeds the query and searches the site's vectors, returning the
// hits and the query's vector (nothing when the stage is off).
func (p Pipeline) dense(ctx context.Context, siteID int64, query string, opt Options) ([]vector.Hit, []float32, error) {
	if !opt.Stages.Dense || p.Embedder == nil {
		return nil, nil, nil
	}
	t0 := time.Now()
	vecs, err := p.Embedder.Embed(ctx, []string{query})
	p.observe("embedding", p.Embedder.Model(), time.Since(t0), err)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrEmbed, err)
	}
	hits, err := p.Store.Search(ctx, siteID, vecs[0], opt.RecallK, opt.Threshold)
	return hits, vecs[0], err
}

func (p Pipeline) observe(kind, model string, took time.Duration, err error) {
	if p.Observe != nil {
		p.Observe(kind, model, took, err)
	}
}

// stats are the site's keyword statistics for terms, or nil when the store
// cannot tell (scorers then fall back to the candidates).
func (p Pipeline) stats(ctx context.Context, siteID int64, terms []string) (*vector.KeywordStats, error) {
	src, ok := p.Store.(vector.StatsSource)
	if !ok || len(terms) == 0 {
		return nil, nil
	}
	st, err := src.KeywordStats(ctx, siteID, terms)
	if err != nil {
		return nil, err
	}
	if st.Docs == 0 {
		return nil, nil
	}
	return &st, nil
}

// rerank orders results by the reranker and keeps the top k.
//
// qvec is the query's embedding when the dense stage made one (nil else).
func (p Pipeline) rerank(ctx context.Context, siteID int64, query string, qvec []float32, results []Result, k int, st *vector.KeywordStats) ([]Result, error) {
	var ranked []rerank.Result
	var err error
	t0 := time.Now()
	lr, isLexical := p.Reranker.(*lexical.Reranker)
	var docs []lexical.Doc
	if isLexical {
		docs = make([]lexical.Doc, len(results))
		for i, r := range results {
			docs[i] = lexical.Doc{Title: r.Hit.Title, Heading: r.Hit.Heading, Text: r.Hit.Text}
		}
		ranked, err = lr.RerankFields(ctx, query, docs, 0, st) // all: blend cuts to k
	} else {
		texts := make([]string, len(results))
		for i, r := range results {
			texts[i] = r.Hit.Title + "\n" + r.Hit.Heading + "\n" + r.Hit.Text
		}
		ranked, err = p.Reranker.Rerank(ctx, query, texts, k)
	}
	p.observe("rerank", fmt.Sprintf("%T", p.Reranker), time.Since(t0), err)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRerank, err)
	}
	out := scored(results, ranked)
	if isLexical {
		tsim := p.titleSimilarity(ctx, query, qvec, results)
		blend(out, results, tsim)
		if FeedbackWeight > 0 && st != nil && len(out) > FeedbackDocs {
			// blend put each document's best passage first: the
			// expansion comes from the FeedbackDocs best documents.
			exp, st2, err := p.feedback(ctx, siteID, query, out[:FeedbackDocs], results, docs)
			if err != nil {
				return nil, err
			}
			if len(exp) > 0 {
				if ranked, err = lr.RerankExpanded(ctx, query, docs, 0, st2, exp); err != nil {
					return nil, fmt.Errorf("%w: %w", ErrRerank, err)
				}
				out = scored(results, ranked)
				blend(out, results, tsim)
			}
		}
		if len(out) > k {
			out = out[:k]
		}
	}
	return out, nil
}

// scored returns results in the reranker's order with its scores.
func scored(results []Result, ranked []rerank.Result) []Result {
	out := make([]Result, 0, len(ranked))
	for _, rr := range ranked {
		if rr.Index < 0 || rr.Index >= len(results) {
			continue // a misbehaving remote reranker
		}
		r := results[rr.Index]
		s := rr.Score
		r.Rerank, r.Score = &s, s
		out = append(out, r)
	}
	return out
}

// Pseudo-relevance feedback (RM3-style): the words the first pass's best
// passages share, weighted low, join the query for a second lexical pass,
// so a page that says what the question means in other words than the
// question's can rise.
const (
	FeedbackDocs   = 3    // passages the expansion is drawn from
	FeedbackTerms  = 20   // expansion terms
	FeedbackWeight = 0.25 // the best expansion term's weight; a query term's is 1
)

// feedback returns the expansion terms drawn from fb with their weights,
// and the site statistics of the query's and fb's terms.
//
// results and their scored docs (in the same order) give the feedback
// passages their analysis from the first pass.
func (p Pipeline) feedback(ctx context.Context, siteID int64, query string, fb, results []Result, scoredDocs []lexical.Doc) (map[string]float64, *vector.KeywordStats, error) {
	analyzed := make(map[string]lexical.Doc, len(results))
	for i, r := range results {
		if r.Hit.ChunkID != "" && i < len(scoredDocs) {
			analyzed[r.Hit.ChunkID] = scoredDocs[i]
		}
	}
	docs := make([]lexical.Doc, len(fb))
	seen := map[string]bool{}
	var terms []string
	for i, r := range fb {
		d, ok := analyzed[r.Hit.ChunkID]
		if !ok || d.Text != r.Hit.Text {
			d = lexical.Doc{Title: r.Hit.Title, Heading: r.Hit.Heading, Text: r.Hit.Text}
		}
		docs[i] = d
		docs[i].EachTerm(func(t string) { // the analysis scoring made
			if !seen[t] {
				seen[t] = true
				terms = append(terms, t)
			}
		})
	}
	all, err := p.stats(ctx, siteID, append(terms, analyze.Terms(query)...))
	if err != nil || all == nil {
		return nil, nil, err
	}
	n := float64(all.Docs)
	exp := lexical.FeedbackTerms(query, docs, FeedbackTerms, func(t string) float64 {
		df := all.DocFreq[t]
		if df <= 1 {
			return 0 // a word of one passage only says nothing about others
		}
		return lexical.IDF(n, float64(df))
	})
	for t := range exp {
		exp[t] *= FeedbackWeight
	}
	return exp, all, nil
}

// FusionBlend is how much of the fused recall score (scaled to the best
// candidate's) joins the lexical reranker's score (scaled likewise): the
// lexical reranker sees only words, and the fused score carries the dense
// side's evidence (character features, a real model's semantics). Measured
// on make eval.
const FusionBlend = 1.0

// blend re-sorts out (a lexical rerank of results) by rerank share plus
// FusionBlend times fused share, the document's other candidates
// (DocumentBlend) and its title's similarity to the question (titles, from
// titleSimilarity, TitleBlend).
func blend(out, results []Result, tsim map[int64]float64) {
	var maxR, maxF float64
	for _, r := range out {
		maxR = max(maxR, *r.Rerank)
	}
	for _, r := range results {
		maxF = max(maxF, r.Fused)
	}
	if maxR <= 0 || maxF <= 0 {
		return
	}
	own := make([]float64, len(out))
	doc := map[int64]float64{}
	for i, r := range out {
		own[i] = *r.Rerank/maxR + FusionBlend*r.Fused/maxF
		doc[r.Hit.DocumentID] += own[i]
	}
	var maxDoc float64
	for _, d := range doc {
		maxDoc = max(maxDoc, d)
	}
	for i := range out {
		// The chunk's document's other candidates count too: a page
		// that matches in several sections is more likely the answer
		// than a stray mention elsewhere.
		out[i].Score = own[i] + DocumentBlend*(doc[out[i].Hit.DocumentID]-own[i])/maxDoc + TitleBlend*tsim[out[i].Hit.DocumentID]
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	diversify(out)
}

// TitleBlend is the weight of a page's title in a chunk's final score: the
// similarity in meaning of the question to the title (cosine of their
// embeddings, scaled to the best candidate page's), times the share of the
// question the embedder knows. A page titled "Partial Indexes" is about an
// index "that only covers the rows matching a WHERE condition" even where
// its sections' words are not the question's. Only the learned embedder
// (a Coverer, embedded in-process) is asked: a remote model would cost a
// call per question for what its chunk vectors already carry.
const TitleBlend = 0.5

// titleSimilarity maps each candidate page to its title's TitleBlend share
// (0..1), or nil when the embedder is not the learned one or fails. qvec is
// the query's embedding if the dense stage made one; else it is embedded
// with the titles.
func (p Pipeline) titleSimilarity(ctx context.Context, query string, qvec []float32, results []Result) map[int64]float64 {
	c, ok := embed.Unwrap(p.Embedder).(embed.Coverer)
	if !ok {
		return nil
	}
	cov := c.Coverage(query)
	if cov <= 0 {
		return nil
	}
	var ids []int64
	var texts []string
	if qvec == nil {
		texts = append(texts, query)
	}
	seen := map[int64]bool{}
	for _, r := range results {
		if !seen[r.Hit.DocumentID] && r.Hit.Title != "" {
			seen[r.Hit.DocumentID] = true
			ids = append(ids, r.Hit.DocumentID)
			texts = append(texts, r.Hit.Title)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	vecs, err := p.Embedder.Embed(ctx, texts)
	if err != nil || len(vecs) != len(texts) {
		return nil // the title is a refinement; the ranking stands without it
	}
	if qvec == nil {
		qvec, vecs = vecs[0], vecs[1:]
	}
	out := make(map[int64]float64, len(ids))
	best := 0.0
	for i, id := range ids {
		out[id] = max(0, embed.Cosine(qvec, vecs[i]))
		best = max(best, out[id])
	}
	if best <= 0 {
		return nil
	}
	for id := range out {
		out[id] *= cov / best
	}
	return out
}

// diversify puts each document's best chunk first, in score order, then the
// documents' further chunks: the top of the list covers as many candidate
// documents as it can (the chat merges a document's chunks into one passage
// anyway).
func diversify(out []Result) {
	seen := make(map[int64]bool, len(out))
	firsts := make([]Result, 0, len(out))
	var rest []Result
	for _, r := range out {
		if seen[r.Hit.DocumentID] {
			rest = append(rest, r)
			continue
		}
		seen[r.Hit.DocumentID] = true
		firsts = append(firsts, r)
	}
	copy(out, append(firsts, rest...))
}

// DocumentBlend is the weight of a chunk's document's other candidates
// (their summed scores, scaled to the best document's) in its final score:
// a page that matches in several sections is more often the answer.
const DocumentBlend = 0.5

// fuse merges the two recall lists by weighted reciprocal-rank fusion.
func fuse(dense, sparse []vector.Hit, wd, wk float64) []Result {
	byID := map[string]int{}
	var out []Result
	add := func(hs []vector.Hit, w float64, isDense bool) {
		for rank, h := range hs {
			i, ok := byID[h.ChunkID]
			if !ok {
				i = len(out)
				byID[h.ChunkID] = i
				out = append(out, Result{Hit: h})
			}
			s := float64(h.Score)
			if isDense {
				out[i].Dense = &s
			} else {
				out[i].Keyword = &s
			}
			out[i].Fused += w / float64(rrfK+rank+1)
		}
	}
	add(dense, wd, true)
	add(sparse, wk, false)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Fused > out[j].Fused })
	for i := range out {
		out[i].Score = out[i].Fused
	}
	return out
}

// keep returns the results whose chunk is among kept, in results' order.
func keep(results []Result, kept []vector.Hit) []Result {
	ok := make(map[string]bool, len(kept))
	for _, h := range kept {
		ok[h.ChunkID] = true
	}
	out := results[:0]
	for _, r := range results {
		if ok[r.Hit.ChunkID] {
			out = append(out, r)
		}
	}
	return out
}

func dedupe(terms []string) []string {
	seen := make(map[string]bool, len(terms))
	out := terms[:0:0]
	for _, t := range terms {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// clip cuts s to at most n runes.
func clip(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

// isPrintable reports whether s has at least one letter or digit; a query
// of punctuation, control bytes or emoji retrieves nothing.
func isPrintable(s string) bool {
	for _, r := range s {
		if r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return true
		}
	}
	return false
}
