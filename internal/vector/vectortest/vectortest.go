// Package vectortest is the conformance suite every vector.Store must pass,
// so that the local store and the Milvus store behave the same and can be
// swapped without changing ingest or search code.
package vectortest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/vector"
)

// Dim is the vector dimension the suite uses: open functions passed to Run
// and RunReopen must return stores of this dimension.
const Dim = 8

// scoreTolerance absorbs float32 rounding and approximate indexes.
const scoreTolerance = 1e-3

// Run runs the conformance suite. open must return a fresh, empty store of
// dimension Dim and arrange for it to be closed (and removed) with t.Cleanup.
func Run(t *testing.T, open func(t *testing.T) vector.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s vector.Store)
	}{
		{"UpsertIdempotent", testUpsertIdempotent},
		{"UpsertReplaces", testUpsertReplaces},
		{"EmptyUpsert", testEmptyUpsert},
		{"WrongDimension", testWrongDimension},
		{"HitFields", testHitFields},
		{"DeleteStaleVersions", testDeleteStaleVersions},
		{"DeleteDocument", testDeleteDocument},
		{"DeleteSite", testDeleteSite},
		{"SiteIsolation", testSiteIsolation},
		{"Threshold", testThreshold},
		{"KLimitAndOrder", testKLimitAndOrder},
		{"ScaleInvariant", testScaleInvariant},
		{"KeywordExactTerms", testKeywordExactTerms},
		{"KeywordCJK", testKeywordCJK},
		{"KeywordFollowsWrites", testKeywordFollowsWrites},
		{"Concurrent", testConcurrent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, open(t))
		})
	}
}

// RunReopen checks that a store persists: open must open (or create) the
// store of dimension Dim kept in dir. The suite closes what it opens.
func RunReopen(t *testing.T, open func(t *testing.T, dir string) vector.Store) {
	ctx := context.Background()
	dir := t.TempDir()

	s := open(t, dir)
	chunks := []vector.Chunk{
		mk(1, 10, 1, 0, unit(0), "alpha first version"),
		mk(1, 10, 1, 1, unit(1), "beta first version"),
		mk(1, 10, 2, 0, unit(2), "gamma second version"),
		mk(1, 11, 1, 0, unit(3), "delta other document"),
		mk(2, 20, 1, 0, unit(0), "epsilon other site"),
		mk(3, 30, 1, 0, unit(4), "zeta doomed site"),
		mk(1, 12, 1, 0, unit(5), "eta doomed document"),
	}
	must(t, s.Upsert(ctx, chunks))
	must(t, s.DeleteStaleVersions(ctx, 10, 2))
	must(t, s.DeleteSite(ctx, 3))
	must(t, s.DeleteDocument(ctx, 12))
	replaced := mk(1, 11, 1, 0, unit(6), "delta replaced text")
	must(t, s.Upsert(ctx, []vector.Chunk{replaced}))
	must(t, s.Close())

	check := func(s vector.Store) {
		t.Helper()
		wantCount(t, s, 3)
		wantDocCount(t, s, 10, 1)
		wantDocCount(t, s, 11, 1)
		wantDocCount(t, s, 12, 0)
		wantDocCount(t, s, 30, 0)
		hits := search(t, s, 1, unit(2), 10, 0.5)
		wantIDs(t, hits, vector.ChunkID(10, 2, 0))
		hits = search(t, s, 1, unit(6), 10, 0.5)
		wantIDs(t, hits, vector.ChunkID(11, 1, 0))
		if hits[0].Text != "delta replaced text" {
			t.Errorf("replaced text not persisted: %q", hits[0].Text)
		}
		hits = keyword(t, s, 2, "epsilon", 10)
		wantIDs(t, hits, vector.ChunkID(20, 1, 0))
		wantIDs(t, keyword(t, s, 1, "alpha", 10))
		wantIDs(t, keyword(t, s, 3, "zeta", 10))
	}

	s = open(t, dir)
	check(s)
	// Writes after a reopen are persisted too.
	must(t, s.Upsert(ctx, []vector.Chunk{mk(4, 40, 1, 0, unit(7), "theta after reopen")}))
	must(t, s.Close())

	s = open(t, dir)
	defer s.Close()
	wantCount(t, s, 4)
	wantIDs(t, keyword(t, s, 4, "theta", 10), vector.ChunkID(40, 1, 0))
	must(t, s.DeleteSite(ctx, 4))
	check(s)
}

// mk builds a chunk with a deterministic ID and recognisable fields.
func mk(site, doc, version int64, index int, vec []float32, text string) vector.Chunk {
	return vector.Chunk{
		ID:         vector.ChunkID(doc, version, index),
		SiteID:     site,
		DocumentID: doc,
		Version:    version,
		Index:      index,
		Title:      fmt.Sprintf("Document %d", doc),
		Heading:    "Section",
		Text:       text,
		Vector:     vec,
	}
}

// unit returns the i-th basis vector.
func unit(i int) []float32 {
	v := make([]float32, Dim)
	v[i%Dim] = 1
	return v
}

// atCosine returns a unit vector whose cosine with unit(0) is c.
func atCosine(c float64) []float32 {
	v := make([]float32, Dim)
	v[0] = float32(c)
	v[1] = float32(math.Sqrt(1 - c*c))
	return v
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func wantCount(t *testing.T, s vector.Store, want int) {
	t.Helper()
	n, err := s.Count(context.Background())
	must(t, err)
	if n != want {
		t.Errorf("Count = %d, want %d", n, want)
	}
}

func wantDocCount(t *testing.T, s vector.Store, doc int64, want int) {
	t.Helper()
	n, err := s.CountDocument(context.Background(), doc)
	must(t, err)
	if n != want {
		t.Errorf("CountDocument(%d) = %d, want %d", doc, n, want)
	}
}

func search(t *testing.T, s vector.Store, site int64, vec []float32, k int, threshold float32) []vector.Hit {
	t.Helper()
	hits, err := s.Search(context.Background(), site, vec, k, threshold)
	must(t, err)
	checkOrdered(t, hits)
	return hits
}

func keyword(t *testing.T, s vector.Store, site int64, q string, k int) []vector.Hit {
	t.Helper()
	hits, err := s.KeywordSearch(context.Background(), site, q, k)
	must(t, err)
	checkOrdered(t, hits)
	for _, h := range hits {
		if h.Score <= 0 {
			t.Errorf("keyword hit %s has score %v", h.ChunkID, h.Score)
		}
	}
	return hits
}

func checkOrdered(t *testing.T, hits []vector.Hit) {
	t.Helper()
	for i := 1; i < len(hits); i++ {
		if hits[i].Score > hits[i-1].Score {
			t.Fatalf("hits not in descending score order: %v", scores(hits))
		}
	}
}

func scores(hits []vector.Hit) []float32 {
	out := make([]float32, len(hits))
	for i, h := range hits {
		out[i] = h.Score
	}
	return out
}

func ids(hits []vector.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ChunkID
	}
	return out
}

// wantIDs asserts the hits are exactly these chunks, in this order.
func wantIDs(t *testing.T, hits []vector.Hit, want ...string) {
	t.Helper()
	got := ids(hits)
	if len(got) != len(want) {
		t.Errorf("hits %v, want %v", got, want)
		return
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("hits %v, want %v", got, want)
			return
		}
	}
}

// wantIDSet asserts the hits are exactly these chunks, in any order.
func wantIDSet(t *testing.T, hits []vector.Hit, want ...string) {
	t.Helper()
	got := ids(hits)
	sort.Strings(got)
	w := append([]string(nil), want...)
	sort.Strings(w)
	wantIDs(t, hitsOf(got), w...)
}

func hitsOf(ids []string) []vector.Hit {
	out := make([]vector.Hit, len(ids))
	for i, id := range ids {
		out[i] = vector.Hit{ChunkID: id}
	}
	return out
}

func testUpsertIdempotent(t *testing.T, s vector.Store) {
	ctx := context.Background()
	var chunks []vector.Chunk
	for i := 0; i < 5; i++ {
		chunks = append(chunks, mk(1, 7, 1, i, unit(i), fmt.Sprintf("chunk %d", i)))
	}
	must(t, s.Upsert(ctx, chunks))
	wantCount(t, s, 5)
	must(t, s.Upsert(ctx, chunks)) // a retried activity
	wantCount(t, s, 5)
	wantDocCount(t, s, 7, 5)
	// Duplicates inside one batch collapse too; the last one wins.
	dup := mk(1, 7, 1, 0, unit(0), "chunk 0 final")
	early := dup
	early.Text = "chunk 0 early"
	must(t, s.Upsert(ctx, []vector.Chunk{early, dup}))
	wantCount(t, s, 5)
	hits := search(t, s, 1, unit(0), 1, 0.5)
	wantIDs(t, hits, vector.ChunkID(7, 1, 0))
	if len(hits) == 1 && hits[0].Text != "chunk 0 final" {
		t.Errorf("text %q, want the last duplicate", hits[0].Text)
	}
}

func testUpsertReplaces(t *testing.T, s vector.Store) {
	ctx := context.Background()
	c := mk(1, 7, 1, 0, unit(0), "old text about apples")
	must(t, s.Upsert(ctx, []vector.Chunk{c}))
	c.Vector = unit(3)
	c.Text = "new text about oranges"
	c.Heading = "New heading"
	must(t, s.Upsert(ctx, []vector.Chunk{c}))
	wantCount(t, s, 1)
	wantIDs(t, search(t, s, 1, unit(0), 10, 0.5))
	hits := search(t, s, 1, unit(3), 10, 0.5)
	wantIDs(t, hits, c.ID)
	if len(hits) == 1 && (hits[0].Text != c.Text || hits[0].Heading != c.Heading) {
		t.Errorf("hit not replaced: %+v", hits[0])
	}
	wantIDs(t, keyword(t, s, 1, "apples", 10))
	wantIDs(t, keyword(t, s, 1, "oranges", 10), c.ID)
}

func testEmptyUpsert(t *testing.T, s vector.Store) {
	must(t, s.Upsert(context.Background(), nil))
	wantCount(t, s, 0)
	wantIDs(t, search(t, s, 1, unit(0), 10, -1))
	wantIDs(t, keyword(t, s, 1, "anything", 10))
}

func testWrongDimension(t *testing.T, s vector.Store) {
	ctx := context.Background()
	good := mk(1, 1, 1, 0, unit(0), "good")
	bad := mk(1, 1, 1, 1, make([]float32, Dim+1), "bad")
	bad.Vector[0] = 1
	if err := s.Upsert(ctx, []vector.Chunk{good, bad}); !errors.Is(err, vector.ErrDimension) {
		t.Fatalf("Upsert with a %d-dim vector: %v, want ErrDimension", Dim+1, err)
	}
	// The batch is rejected whole.
	wantCount(t, s, 0)
	if _, err := s.Search(ctx, 1, make([]float32, Dim-1), 5, 0); !errors.Is(err, vector.ErrDimension) {
		t.Fatalf("Search with a %d-dim vector: %v, want ErrDimension", Dim-1, err)
	}
}

func testHitFields(t *testing.T, s vector.Store) {
	ctx := context.Background()
	c := vector.Chunk{
		ID: vector.ChunkID(42, 3, 7), SiteID: 9, DocumentID: 42, Version: 3, Index: 7,
		Title: "Install guide", Heading: "Install > Linux", Text: "Run the installer.",
		Vector: atCosine(0.6),
	}
	must(t, s.Upsert(ctx, []vector.Chunk{c}))
	for _, hits := range [][]vector.Hit{
		search(t, s, 9, unit(0), 1, -1),
		keyword(t, s, 9, "installer", 1),
	} {
		if len(hits) != 1 {
			t.Fatalf("got %d hits", len(hits))
		}
		h := hits[0]
		if h.ChunkID != c.ID || h.SiteID != 9 || h.DocumentID != 42 || h.Version != 3 || h.ChunkIndex != 7 ||
			h.Title != c.Title || h.Heading != c.Heading || h.Text != c.Text {
			t.Errorf("hit fields %+v do not match chunk %+v", h, c)
		}
	}
	if h := search(t, s, 9, unit(0), 1, -1)[0]; math.Abs(float64(h.Score)-0.6) > scoreTolerance {
		t.Errorf("cosine score %v, want 0.6", h.Score)
	}
}

func testDeleteStaleVersions(t *testing.T, s vector.Store) {
	ctx := context.Background()
	must(t, s.Upsert(ctx, []vector.Chunk{
		mk(1, 5, 1, 0, unit(0), "v1 c0"), mk(1, 5, 1, 1, unit(1), "v1 c1"), mk(1, 5, 1, 2, unit(2), "v1 c2"),
		mk(1, 5, 2, 0, unit(0), "v2 c0"), mk(1, 5, 2, 1, unit(1), "v2 c1"),
		mk(1, 5, 3, 0, unit(0), "v3 c0"),
		mk(1, 6, 1, 0, unit(0), "other doc"),
	}))
	wantDocCount(t, s, 5, 6)
	must(t, s.DeleteStaleVersions(ctx, 5, 2))
	wantDocCount(t, s, 5, 2)
	wantDocCount(t, s, 6, 1)
	wantCount(t, s, 3)
	wantIDSet(t, search(t, s, 1, unit(0), 10, 0.5), vector.ChunkID(5, 2, 0), vector.ChunkID(6, 1, 0))
	wantIDs(t, keyword(t, s, 1, "v1", 10))
	wantIDs(t, keyword(t, s, 1, "v3", 10))
	// Keeping a version that does not exist drops them all.
	must(t, s.DeleteStaleVersions(ctx, 5, 9))
	wantDocCount(t, s, 5, 0)
	wantDocCount(t, s, 6, 1)
}

func testDeleteDocument(t *testing.T, s vector.Store) {
	ctx := context.Background()
	must(t, s.Upsert(ctx, []vector.Chunk{
		mk(1, 5, 1, 0, unit(0), "a"), mk(1, 5, 2, 0, unit(1), "b"), mk(1, 5, 2, 1, unit(2), "c"),
		mk(1, 6, 1, 0, unit(0), "d"), mk(2, 7, 1, 0, unit(0), "e"),
	}))
	must(t, s.DeleteDocument(ctx, 5))
	wantDocCount(t, s, 5, 0)
	wantDocCount(t, s, 6, 1)
	wantDocCount(t, s, 7, 1)
	wantCount(t, s, 2)
	wantIDs(t, search(t, s, 1, unit(0), 10, -1), vector.ChunkID(6, 1, 0))
	must(t, s.DeleteDocument(ctx, 12345)) // missing: not an error
	wantCount(t, s, 2)
}

func testDeleteSite(t *testing.T, s vector.Store) {
	ctx := context.Background()
	must(t, s.Upsert(ctx, []vector.Chunk{
		mk(1, 5, 1, 0, unit(0), "site one alpha"), mk(1, 6, 1, 0, unit(1), "site one beta"),
		mk(2, 7, 1, 0, unit(0), "site two alpha"),
	}))
	must(t, s.DeleteSite(ctx, 1))
	wantCount(t, s, 1)
	wantDocCount(t, s, 5, 0)
	wantIDs(t, search(t, s, 1, unit(0), 10, -1))
	wantIDs(t, keyword(t, s, 1, "alpha", 10))
	wantIDs(t, search(t, s, 2, unit(0), 10, -1), vector.ChunkID(7, 1, 0))
	wantIDs(t, keyword(t, s, 2, "alpha", 10), vector.ChunkID(7, 1, 0))
	must(t, s.DeleteSite(ctx, 99))
	wantCount(t, s, 1)
}

func testSiteIsolation(t *testing.T, s vector.Store) {
	ctx := context.Background()
	var chunks []vector.Chunk
	for site := int64(1); site <= 3; site++ {
		for i := 0; i < 4; i++ {
			// Identical vector and text in every site.
			chunks = append(chunks, mk(site, site*100+int64(i), 1, 0, unit(0), "shared secret words"))
		}
	}
	must(t, s.Upsert(ctx, chunks))
	for site := int64(1); site <= 3; site++ {
		for _, hits := range [][]vector.Hit{
			search(t, s, site, unit(0), 100, -1),
			keyword(t, s, site, "shared secret", 100),
		} {
			if len(hits) != 4 {
				t.Errorf("site %d: %d hits, want 4", site, len(hits))
			}
			for _, h := range hits {
				if h.SiteID != site || h.DocumentID/100 != site {
					t.Fatalf("site %d search returned %s of site %d", site, h.ChunkID, h.SiteID)
				}
			}
		}
	}
	wantIDs(t, search(t, s, 4, unit(0), 100, -1))
	wantIDs(t, keyword(t, s, 4, "shared", 100))
}

func testThreshold(t *testing.T, s vector.Store) {
	ctx := context.Background()
	cos := []float64{1, 0.8, 0.5, 0, -0.5}
	var chunks []vector.Chunk
	for i, c := range cos {
		chunks = append(chunks, mk(1, int64(i+1), 1, 0, atCosine(c), fmt.Sprintf("cos %v", c)))
	}
	must(t, s.Upsert(ctx, chunks))
	for _, tc := range []struct {
		threshold float32
		want      int
	}{{0.9, 1}, {0.6, 2}, {0.4, 3}, {-0.1, 4}, {-1, 5}, {1.01, 0}} {
		hits := search(t, s, 1, unit(0), 10, tc.threshold)
		if len(hits) != tc.want {
			t.Errorf("threshold %v: %d hits %v, want %d", tc.threshold, len(hits), scores(hits), tc.want)
		}
		for i, h := range hits {
			if math.Abs(float64(h.Score)-cos[i]) > scoreTolerance {
				t.Errorf("threshold %v: hit %d score %v, want %v", tc.threshold, i, h.Score, cos[i])
			}
			if h.Score < tc.threshold {
				t.Errorf("threshold %v: hit with score %v", tc.threshold, h.Score)
			}
		}
	}
}

func testKLimitAndOrder(t *testing.T, s vector.Store) {
	ctx := context.Background()
	var chunks []vector.Chunk
	for i := 0; i < 20; i++ {
		chunks = append(chunks, mk(1, 1, 1, i, atCosine(float64(i)/20), fmt.Sprintf("ranked chunk %d", i)))
	}
	must(t, s.Upsert(ctx, chunks))
	hits := search(t, s, 1, unit(0), 3, -1)
	wantIDs(t, hits, vector.ChunkID(1, 1, 19), vector.ChunkID(1, 1, 18), vector.ChunkID(1, 1, 17))
	if got := len(search(t, s, 1, unit(0), 100, -1)); got != 20 {
		t.Errorf("k=100: %d hits, want 20", got)
	}
	if got := len(search(t, s, 1, unit(0), 0, -1)); got != 0 {
		t.Errorf("k=0: %d hits, want 0", got)
	}
	if got := len(keyword(t, s, 1, "ranked chunk", 5)); got != 5 {
		t.Errorf("keyword k=5: %d hits", got)
	}
	if got := len(keyword(t, s, 1, "ranked chunk", 0)); got != 0 {
		t.Errorf("keyword k=0: %d hits", got)
	}
}

func testScaleInvariant(t *testing.T, s vector.Store) {
	ctx := context.Background()
	v := unit(2)
	v[2] = 10 // not normalised
	must(t, s.Upsert(ctx, []vector.Chunk{mk(1, 1, 1, 0, v, "scaled")}))
	q := unit(2)
	q[2] = 0.25
	hits := search(t, s, 1, q, 1, 0.99)
	if len(hits) != 1 || math.Abs(float64(hits[0].Score)-1) > scoreTolerance {
		t.Fatalf("cosine of parallel vectors: %v", scores(hits))
	}
}

func testKeywordExactTerms(t *testing.T, s vector.Store) {
	ctx := context.Background()
	docs := []vector.Chunk{
		mk(1, 1, 1, 0, unit(0), "Deploy the app on Kubernetes with the Helm chart."),
		mk(1, 2, 1, 0, unit(0), "Back up Postgres nightly with pg_dump and keep seven copies."),
		mk(1, 3, 1, 0, unit(0), "Reset a forgotten password from the login page."),
		mk(1, 4, 1, 0, unit(0), "Postgres replication: streaming replicas follow the primary."),
		mk(1, 5, 1, 0, unit(0), "Nothing relevant here at all."),
	}
	docs[4].Title = "Troubleshooting Zookeeper"
	docs[2].Heading = "Accounts > Recovery"
	must(t, s.Upsert(ctx, docs))

	wantIDs(t, keyword(t, s, 1, "kubernetes", 10), docs[0].ID)
	wantIDs(t, keyword(t, s, 1, "HELM", 10), docs[0].ID) // case-insensitive
	wantIDSet(t, keyword(t, s, 1, "postgres", 10), docs[1].ID, docs[3].ID)
	// Title and heading are searchable.
	wantIDs(t, keyword(t, s, 1, "zookeeper", 10), docs[4].ID)
	wantIDs(t, keyword(t, s, 1, "recovery", 10), docs[2].ID)
	// The chunk matching more query terms ranks first.
	hits := keyword(t, s, 1, "postgres replication replicas", 10)
	if len(hits) != 2 || hits[0].ChunkID != docs[3].ID {
		t.Errorf("ranking: %v", ids(hits))
	}
	wantIDs(t, keyword(t, s, 1, "nonexistentterm", 10))
	wantIDs(t, keyword(t, s, 1, "", 10))
}

func testKeywordCJK(t *testing.T, s vector.Store) {
	ctx := context.Background()
	docs := []vector.Chunk{
		mk(1, 1, 1, 0, unit(0), "如何在服务器上安装数据库软件"),
		mk(1, 2, 1, 0, unit(0), "今天天气很好我们去公园散步"),
		mk(1, 3, 1, 0, unit(0), "東京の天気は晴れです"),
	}
	must(t, s.Upsert(ctx, docs))
	for q, want := range map[string]string{"安装": docs[0].ID, "数据库": docs[0].ID, "公园": docs[1].ID, "東京": docs[2].ID} {
		hits := keyword(t, s, 1, q, 10)
		if len(hits) == 0 || hits[0].ChunkID != want {
			t.Errorf("query %q: hits %v, want %s first", q, ids(hits), want)
		}
	}
	wantIDs(t, keyword(t, s, 1, "咖啡", 10))
}

func testKeywordFollowsWrites(t *testing.T, s vector.Store) {
	ctx := context.Background()
	must(t, s.Upsert(ctx, []vector.Chunk{
		mk(1, 1, 1, 0, unit(0), "unicorn stable one"),
		mk(1, 1, 2, 0, unit(0), "unicorn stable two"),
		mk(1, 2, 1, 0, unit(0), "unicorn other"),
	}))
	wantIDSet(t, keyword(t, s, 1, "unicorn", 10), vector.ChunkID(1, 1, 0), vector.ChunkID(1, 2, 0), vector.ChunkID(2, 1, 0))
	must(t, s.DeleteStaleVersions(ctx, 1, 2))
	wantIDSet(t, keyword(t, s, 1, "unicorn", 10), vector.ChunkID(1, 2, 0), vector.ChunkID(2, 1, 0))
	must(t, s.DeleteDocument(ctx, 2))
	wantIDs(t, keyword(t, s, 1, "unicorn", 10), vector.ChunkID(1, 2, 0))
	wantIDs(t, keyword(t, s, 1, "one", 10))
}

func testConcurrent(t *testing.T, s vector.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const writers, docs = 4, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers*2)
	for w := 0; w < writers; w++ {
		wg.Add(2)
		go func(w int) {
			defer wg.Done()
			for d := 0; d < docs; d++ {
				doc := int64(w*1000 + d)
				chunks := []vector.Chunk{mk(1, doc, 1, 0, unit(d), "concurrent text"), mk(1, doc, 1, 1, unit(d+1), "concurrent text")}
				if err := s.Upsert(ctx, chunks); err != nil {
					errs <- err
					return
				}
			}
		}(w)
		go func() {
			defer wg.Done()
			for i := 0; i < docs; i++ {
				hits, err := s.Search(ctx, 1, unit(i), 5, -1)
				if err == nil {
					for _, h := range hits {
						if h.SiteID != 1 {
							err = fmt.Errorf("hit from site %d", h.SiteID)
						}
					}
				}
				if err == nil {
					_, err = s.KeywordSearch(ctx, 1, "concurrent", 5)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	wantCount(t, s, writers*docs*2)
}
