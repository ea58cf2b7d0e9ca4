package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/config"
	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/internal/vector"
	"github.com/lorekb/lore/models"
	"go.temporal.io/sdk/testsuite"
)

// searchFixture is an embedded Lore (SQLite, local vector store, local
// embedder and reranker) with two sites of vectorized documents.
type searchFixture struct {
	a                 *Chat
	d                 *deps.Deps
	siteA, siteB      int64
	guide, notes, old int64 // site A: a long guide, short notes, a guide unpublished after indexing
	other             int64 // site B
}

func newSearchFixture(t *testing.T) *searchFixture {
	t.Helper()
	ctx := context.Background()
	cfg, err := config.LoadFrom(config.MapSource(map[string]string{"LORE_DATA_DIR": t.TempDir(), "TEMPORAL_ADDRESS": "none",
		"LORE_CHUNK_SIZE": "200", "LORE_CHUNK_OVERLAP": "0"}))
	if err != nil {
		t.Fatal(err)
	}
	d, err := deps.Open(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	tenant, err := d.DB.EnsureDefaultTenant(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f := &searchFixture{a: NewChat(d), d: d}
	site := func(name string) int64 {
		s := &models.Site{Name: name, Slug: strings.ToLower(name), TenantID: tenant, Status: models.SiteActive}
		if err := d.DB.CreateSite(ctx, s); err != nil {
			t.Fatal(err)
		}
		return s.ID
	}
	f.siteA, f.siteB = site("Alpha"), site("Beta")
	doc := func(siteID int64, title, content string) int64 {
		x := &models.Document{TenantID: tenant, SiteID: siteID, Title: title, Content: content, Status: models.DocPublished}
		if err := d.DB.CreateDocument(ctx, x); err != nil {
			t.Fatal(err)
		}
		return x.ID
	}
	var guide strings.Builder
	for i := range 6 {
		fmt.Fprintf(&guide, "## Step %d\n\nTo install the quokka server, run the installer step %d and check the install log.\n\n", i+1, i+1)
	}
	f.guide = doc(f.siteA, "Install guide", guide.String())
	f.notes = doc(f.siteA, "Release notes", "Upgrading the quokka server keeps your settings. Install the new version over the old one.")
	f.old = doc(f.siteA, "Old install guide", "To install the quokka server in the old way, run the old installer.")
	f.other = doc(f.siteB, "Beta install", "To install the quokka server on Beta, run the Beta installer.")
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	v := NewVectorize(d)
	env.RegisterActivity(v)
	if _, err := env.ExecuteActivity(v.IndexDocuments, DocGroup{DocumentIDs: []int64{f.guide, f.notes, f.old, f.other}}); err != nil {
		t.Fatal(err)
	}
	// Unpublished after indexing: its vectors are still in the store.
	if _, err := d.DB.NewUpdate().Model((*models.Document)(nil)).Set("status = ?", models.DocDraft).Where("id = ?", f.old).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *searchFixture) search(t *testing.T, siteID int64, query string) (SearchResult, storedResult) {
	t.Helper()
	id := fmt.Sprintf("call-%d-%s", siteID, strings.ReplaceAll(query, " ", "-"))
	res, err := f.a.Search(context.Background(), SearchInput{ThreadID: "t", ToolCallID: id, TenantID: 1, SiteID: siteID,
		Arguments: fmt.Sprintf(`{"query":%q}`, query)})
	if err != nil {
		t.Fatal(err)
	}
	stored, err := f.d.DB.ToolResultContents(context.Background(), "t", []string{id})
	if err != nil {
		t.Fatal(err)
	}
	var sr storedResult
	if err := json.Unmarshal([]byte(stored[id]), &sr); err != nil {
		t.Fatalf("stored result %q: %v", stored[id], err)
	}
	return res, sr
}

// SPEC "Retrieval and chat behaviour" 2–4 against the real embedded engines.
func TestSearchRetrieval(t *testing.T) {
	f := newSearchFixture(t)
	cfg := f.d.Cfg
	cfg.RAGRecallThreshold = -1
	cfg.RAGEnableRerank = true
	cfg.RAGRerankTopK = 50

	t.Run("site isolation and visibility", func(t *testing.T) {
		res, sr := f.search(t, f.siteA, "install quokka server")
		if res.ChunkCount == 0 || len(sr.Passages) == 0 {
			t.Fatalf("nothing found: %+v", res)
		}
		for _, p := range sr.Passages {
			if p.SiteID != f.siteA || p.DocumentID == f.other {
				t.Fatalf("a passage of another site: %+v", p)
			}
			if p.DocumentID == f.old {
				t.Fatalf("an unpublished document is cited: %+v", p)
			}
		}
		res, sr = f.search(t, f.siteB, "install quokka server")
		if len(sr.Passages) != 1 || sr.Passages[0].DocumentID != f.other || res.Sources[0].DocumentID != f.other {
			t.Fatalf("site B: %+v", sr.Passages)
		}
	})

	t.Run("fragments of a document merge into one passage", func(t *testing.T) {
		_, sr := f.search(t, f.siteA, "install quokka server installer step log")
		seen := map[int64]bool{}
		var guide *Passage
		for i, p := range sr.Passages {
			if seen[p.DocumentID] {
				t.Fatalf("document %d in two passages", p.DocumentID)
			}
			seen[p.DocumentID] = true
			if p.DocumentID == f.guide {
				guide = &sr.Passages[i]
			}
		}
		if guide == nil || guide.Fragments < 2 || strings.Count(guide.Content, FragmentSeparator) != guide.Fragments-1 {
			t.Fatalf("guide passage: %+v", guide)
		}
		if i1, i2 := strings.Index(guide.Content, "Step 1"), strings.Index(guide.Content, "Step 2"); i1 > i2 && i2 >= 0 {
			t.Fatal("fragments out of document order")
		}
	})

	t.Run("rerank keeps RAG_RERANK_TOP_K", func(t *testing.T) {
		cfg.RAGRerankTopK = 2
		defer func() { cfg.RAGRerankTopK = 50 }()
		if res, _ := f.search(t, f.siteA, "install quokka server step"); res.ChunkCount != 2 {
			t.Fatalf("%d chunks, want 2", res.ChunkCount)
		}
		cfg.RAGEnableRerank = false
		defer func() { cfg.RAGEnableRerank = true }()
		if res, _ := f.search(t, f.siteA, "install quokka server step two"); res.ChunkCount != 2 {
			t.Fatalf("rerank off: %d chunks, want 2 (the top k cut still applies)", res.ChunkCount)
		}
	})

	t.Run("RAG_RECALL_MAX caps RAG_RECALL_K", func(t *testing.T) {
		if res, _ := f.search(t, f.siteA, "install quokka server installer"); res.ChunkCount <= 3 {
			t.Fatalf("uncapped: %d chunks, want more than 3", res.ChunkCount)
		}
		cfg.RAGRecallK, cfg.RAGRecallMax = 50, 3
		defer func() { cfg.RAGRecallK, cfg.RAGRecallMax = 50, 100 }()
		// Three fragments are recalled; the unpublished guide's may be
		// among them and is then dropped.
		if res, _ := f.search(t, f.siteA, "install quokka server installer step"); res.ChunkCount < 1 || res.ChunkCount > 3 {
			t.Fatalf("%d chunks, want 1..3", res.ChunkCount)
		}
	})

	t.Run("the threshold filters vector hits", func(t *testing.T) {
		// A query no document shares a word with: only vector hits, and
		// none is that similar.
		if res, _ := f.search(t, f.siteA, "zebra umbrella"); res.ChunkCount == 0 {
			t.Fatal("threshold -1 keeps every vector hit, found none")
		}
		cfg.RAGRecallThreshold = 0.99
		defer func() { cfg.RAGRecallThreshold = -1 }()
		if res, _ := f.search(t, f.siteA, "zebra umbrella"); res.ChunkCount != 0 {
			t.Fatalf("threshold 0.99 kept %d chunks", res.ChunkCount)
		}
	})

	t.Run("the stored result numbers passages from the source offset", func(t *testing.T) {
		_, sr := f.search(t, f.siteA, "upgrading settings")
		b, _ := json.Marshal(sr)
		text := FormatToolResult(string(b), 4)
		if !strings.HasPrefix(text, "[4] ") || len(sr.Passages) > 1 && !strings.Contains(text, "\n\n[5] ") {
			t.Fatalf("formatted result:\n%s", text)
		}
	})
}

// meetingStore lets a dense and a keyword search through only when both
// are under way at once, and records whether they allowed stale reads.
type meetingStore struct {
	vector.Store
	dense, keyword chan struct{}
	stale          chan bool
}

func (m *meetingStore) meet(mine, other chan struct{}) error {
	close(mine)
	select {
	case <-other:
		return nil
	case <-time.After(5 * time.Second):
		return errors.New("the dense and keyword searches did not run at the same time")
	}
}

func (m *meetingStore) Search(ctx context.Context, site int64, vec []float32, k int, th float32) ([]vector.Hit, error) {
	m.stale <- vector.StaleAllowed(ctx)
	if err := m.meet(m.dense, m.keyword); err != nil {
		return nil, err
	}
	return m.Store.Search(ctx, site, vec, k, th)
}

func (m *meetingStore) KeywordSearch(ctx context.Context, site int64, q string, k int) ([]vector.Hit, error) {
	m.stale <- vector.StaleAllowed(ctx)
	if err := m.meet(m.keyword, m.dense); err != nil {
		return nil, err
	}
	return m.Store.KeywordSearch(ctx, site, q, k)
}

// A chat search runs its dense and keyword halves at once, both allowed to
// read a few seconds stale (Bounded consistency on Milvus).
func TestSearchRecallConcurrentAndStale(t *testing.T) {
	f := newSearchFixture(t)
	dim := defaultEmbedDimension(t)
	store, err := f.d.Vectors(context.Background(), dim)
	if err != nil {
		t.Fatal(err)
	}
	m := &meetingStore{Store: store, dense: make(chan struct{}), keyword: make(chan struct{}), stale: make(chan bool, 2)}
	f.d.UseVectorStore(dim, m)
	res, sr := f.search(t, f.siteA, "install quokka server")
	if res.ChunkCount == 0 || len(sr.Passages) == 0 {
		t.Fatalf("nothing found: %+v", res)
	}
	if a, b := <-m.stale, <-m.stale; !a || !b {
		t.Errorf("stale reads allowed: %v %v, want both", a, b)
	}
}

// defaultEmbedDimension is the dimension of lore's default (local)
// embedder, whose store the fixtures' documents are indexed in.
func defaultEmbedDimension(t *testing.T) int {
	t.Helper()
	e, err := deps.LocalEmbedder("", 0)
	if err != nil {
		t.Fatal(err)
	}
	return e.Dimension()
}
