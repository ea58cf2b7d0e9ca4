package retrieve

import (
	"context"
	"testing"

	"github.com/lorekb/lore/internal/analyze"
	"github.com/lorekb/lore/internal/embed"
	"github.com/lorekb/lore/internal/embed/local"
	"github.com/lorekb/lore/internal/rerank/lexical"
	"github.com/lorekb/lore/internal/vector"
)

// matcher is an embedder that knows a few word pairs' similarity.
type matcher struct {
	*local.Embedder
	sim      map[[2]string]float64
	near     map[string]float64
	coverage float64
}

func (m matcher) MostSimilar(a string, words map[string]bool) float64 {
	best := 0.0
	for w := range words {
		best = max(best, m.sim[[2]string{a, w}])
	}
	return best
}
func (m matcher) NeighbourSimilarity(t string) float64 { return m.near[t] }
func (m matcher) Coverage(string) float64              { return m.coverage }

func term(w string) string { return analyze.Terms(w)[0] }

// A section that says a query word's close synonym counts for that word (at
// the similarity), one whose word is merely related does not (below
// SimilarFloor, or not among the query word's nearest words), and without an
// embedder that matches words nothing changes.
func TestRelevanceCountsWordsCloseInMeaning(t *testing.T) {
	chunks := []vector.Chunk{
		{DocumentID: 1, Heading: "Files", Text: "Delete a file from the disk."},
		{DocumentID: 2, Heading: "Files", Text: "Rename a file on the disk."},
		{DocumentID: 3, Heading: "Files", Text: "Truncate a file on the disk."},
	}
	m := matcher{Embedder: local.New(8), sim: map[[2]string]float64{
		{term("erase"), term("delete")}:   0.8,
		{term("erase"), term("rename")}:   SimilarFloor - 0.05,
		{term("erase"), term("truncate")}: 0.6, // erase's nearest words are closer
	}, near: map[string]float64{term("erase"): 0.7}}
	rel := func(p Pipeline) map[int64]float64 {
		res, err := p.Run(context.Background(), 1, "erase file", Options{RecallK: 50, TopK: 10, Stages: Stages{Keyword: true, Rerank: true}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		out := map[int64]float64{}
		for _, r := range res {
			out[r.Hit.DocumentID] = r.Relevance
		}
		return out
	}
	store := flatStore(t, chunks)
	plain := rel(Pipeline{Store: store, Reranker: lexical.New()})
	meant := rel(Pipeline{Store: store, Reranker: lexical.New(), Embedder: m})
	if plain[1] != plain[2] || plain[1] != plain[3] || plain[1] <= 0 || plain[1] >= 1 {
		t.Fatalf("without matching: %v", plain)
	}
	if meant[1] <= plain[1] || meant[1] >= 1 {
		t.Errorf("the synonym's section: %v, want above %v and below 1", meant[1], plain[1])
	}
	if meant[2] != plain[2] {
		t.Errorf("a related word below the floor counted: %v, want %v", meant[2], plain[2])
	}
	if meant[3] != plain[3] {
		t.Errorf("a word that is not among the nearest counted: %v, want %v", meant[3], plain[3])
	}
}

// A section word with a digit never stands in for a query word: "tax" sat
// near "100" in the learned model, which let "How do I file my income
// taxes?" through on a section about HTTP status codes.
func TestRelevanceNumbersAreNoSynonyms(t *testing.T) {
	chunks := []vector.Chunk{
		{DocumentID: 1, Heading: "Status", Text: "Send a file with status 100 first."},
		{DocumentID: 2, Heading: "Status", Text: "Send a file with the levy first."},
	}
	m := matcher{Embedder: local.New(8), sim: map[[2]string]float64{
		{term("tax"), "100"}:        0.8,
		{term("tax"), term("levy")}: 0.8,
	}, near: map[string]float64{term("tax"): 0.5}}
	res, err := Pipeline{Store: flatStore(t, chunks), Reranker: lexical.New(), Embedder: m}.Run(context.Background(), 1, "file tax",
		Options{RecallK: 50, TopK: 10, Stages: Stages{Keyword: true, Rerank: true}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rel := map[int64]float64{}
	for _, r := range res {
		rel[r.Hit.DocumentID] = r.Relevance
	}
	if rel[2] <= rel[1] || rel[1] <= 0 {
		t.Fatalf("relevance with a synonym %v, with a number %v: the number must not count", rel[2], rel[1])
	}
}

// The dense list weighs what was asked for a query the embedder fully
// knows, half of it for one it does not know at all.
func TestDenseWeightFollowsCoverage(t *testing.T) {
	for _, c := range []struct{ cov, want float64 }{{1, 2}, {0, 1}, {0.5, 1.5}} {
		p := Pipeline{Embedder: matcher{Embedder: local.New(8), coverage: c.cov}}
		if got := p.denseWeight("q", 2); got != c.want {
			t.Errorf("coverage %v: weight %v, want %v", c.cov, got, c.want)
		}
	}
	// Through a per-request wrapper (a chat over several sites) too.
	if got := (Pipeline{Embedder: embed.Once(matcher{Embedder: local.New(8), coverage: 0})}).denseWeight("q", 2); got != 1 {
		t.Errorf("through embed.Once: %v, want 1", got)
	}
	if got := (Pipeline{Embedder: local.New(8)}).denseWeight("q", 2); got != 2 {
		t.Errorf("an embedder without coverage: %v", got)
	}
}

// Words close in meaning only add to a section that holds one of the
// question's own words: a section of other countries' names is not about
// "capital of Australia", however near those names sit to it.
func TestRelevanceNeedsOneOfTheQuestionsOwnWords(t *testing.T) {
	m := matcher{Embedder: local.New(8), sim: map[[2]string]float64{
		{term("erase"), term("delete")}: 0.8,
	}, near: map[string]float64{term("erase"): 0.7}}
	synonymOnly := &sectionTerms{have: map[string]bool{}, words: map[string]bool{term("delete"): true}}
	if got := relevance([]string{term("erase"), term("file")}, synonymOnly, nil, m); got != 0 {
		t.Errorf("a section with only a synonym: relevance %v, want 0", got)
	}
	both := &sectionTerms{have: map[string]bool{term("file"): true}, words: map[string]bool{term("delete"): true}}
	literalOnly := &sectionTerms{have: map[string]bool{term("file"): true}, words: map[string]bool{}}
	q := []string{term("erase"), term("file")}
	if got, base := relevance(q, both, nil, m), relevance(q, literalOnly, nil, m); got <= base || base <= 0 {
		t.Errorf("a section with the question's word and a synonym: %v, want above %v (> 0)", got, base)
	}
}

// A page's title close in meaning to the question lifts its chunks: the
// share is the title's similarity scaled to the best candidate title's,
// times the share of the question the embedder knows; an embedder that
// cannot say what it knows (a remote model) is not asked.
func TestTitleSimilarityLiftsAPageAboutTheQuestion(t *testing.T) {
	results := []Result{
		{Hit: vector.Hit{DocumentID: 1, Title: "Network sockets", Text: "Use the tool to erase files."}},
		{Hit: vector.Hit{DocumentID: 2, Title: "Erasing files", Text: "Use the tool to erase files."}},
	}
	m := matcher{Embedder: local.New(64), coverage: 0.5}
	sim := Pipeline{Embedder: m}.titleSimilarity(context.Background(), "erase files", nil, results)
	if sim[2] != 0.5 || sim[1] >= sim[2] {
		t.Fatalf("title shares %v, want the matching title at 0.5 (coverage) and the other below", sim)
	}
	qv, err := m.Embed(context.Background(), []string{"erase files"})
	if err != nil {
		t.Fatal(err)
	}
	if reused := (Pipeline{Embedder: m}).titleSimilarity(context.Background(), "erase files", qv[0], results); reused[1] != sim[1] || reused[2] != sim[2] {
		t.Errorf("with the dense stage's query vector: %v, want %v", reused, sim)
	}
	if got := (Pipeline{Embedder: local.New(64)}).titleSimilarity(context.Background(), "erase files", nil, results); got != nil {
		t.Errorf("an embedder without coverage was asked: %v", got)
	}
	m.coverage = 0
	if got := (Pipeline{Embedder: m}).titleSimilarity(context.Background(), "erase files", nil, results); got != nil {
		t.Errorf("a question the embedder does not know got title shares %v", got)
	}
	// Two chunks alike in every other score: the title decides.
	one, two := 1.0, 1.0
	out := []Result{results[0], results[1]}
	out[0].Rerank, out[1].Rerank = &one, &two
	out[0].Fused, out[1].Fused = 0.5, 0.5
	blend(out, out, map[int64]float64{1: 0.2, 2: 1})
	if out[0].Hit.DocumentID != 2 {
		t.Errorf("the page whose title is the question's ranks %d", out[0].Hit.DocumentID)
	}
}
