package retrieve

import (
	"context"
	"strings"
	"testing"

	"github.com/lorekb/lore/internal/embed/local"
	"github.com/lorekb/lore/internal/rerank/lexical"
	"github.com/lorekb/lore/internal/vector"
	vlocal "github.com/lorekb/lore/internal/vector/local"
)

// fixture is a site of a few chunks in a real embedded store, embedded by
// the local embedder.
func fixture(t *testing.T) Pipeline {
	t.Helper()
	emb := local.New(0)
	store, err := vlocal.Open(t.TempDir(), emb.Dimension())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	chunks := []vector.Chunk{
		{DocumentID: 1, Title: "Backups", Heading: "Backups > Restoring a backup", Text: "Stop the server, then copy the archive back into the data directory."},
		{DocumentID: 2, Title: "Install", Heading: "Install > Linux", Text: "Download the package and run the installer as root."},
		{DocumentID: 3, Title: "磁盘", Heading: "磁盘 > 查看使用情况", Text: "使用 df 命令显示文件系统的磁盘使用情况。"},
		{DocumentID: 4, Title: "FAQ", Heading: "FAQ", Text: "How do I do it? What is it? How is it done? It is what it is."},
	}
	texts := make([]string, len(chunks))
	for i := range chunks {
		chunks[i].SiteID, chunks[i].Version = 1, 1
		chunks[i].ID = vector.ChunkID(chunks[i].DocumentID, 1, 0)
		texts[i] = chunks[i].Title + "\n" + chunks[i].Heading + "\n" + chunks[i].Text
	}
	vecs, err := emb.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i := range chunks {
		chunks[i].Vector = vecs[i]
	}
	if err := store.Upsert(context.Background(), chunks); err != nil {
		t.Fatal(err)
	}
	return Pipeline{Store: store, Embedder: emb, Reranker: lexical.New()}
}

func opts(st Stages) Options { return Options{RecallK: 50, Threshold: -1, TopK: 3, Stages: st} }

func TestRunRanksAndScoresEveryStage(t *testing.T) {
	p := fixture(t)
	res, err := p.Run(context.Background(), 1, "How do I restore a backup?", opts(AllStages()), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) == 0 || res[0].Hit.DocumentID != 1 {
		t.Fatalf("top = %+v, want document 1", res)
	}
	top := res[0]
	if top.Dense == nil || top.Keyword == nil || top.Rerank == nil || top.Fused <= 0 {
		t.Errorf("stage scores missing: %+v", top)
	}
	if top.Relevance != 1 {
		t.Errorf("relevance = %v, want 1 (both content words present)", top.Relevance)
	}
	// The stop-word chunk never outranks the answer, and scores nothing in
	// relevance.
	for _, r := range res {
		if r.Hit.DocumentID == 4 && r.Relevance != 0 {
			t.Errorf("stop-word chunk relevance %v", r.Relevance)
		}
	}
}

func TestRunStagesOff(t *testing.T) {
	p := fixture(t)
	ctx := context.Background()
	res, err := p.Run(ctx, 1, "restore backup", opts(Stages{Keyword: true}), nil)
	if err != nil || len(res) != 1 || res[0].Dense != nil || res[0].Rerank != nil || res[0].Keyword == nil {
		t.Fatalf("keyword only: %+v, %v", res, err)
	}
	res, err = p.Run(ctx, 1, "restore backup", opts(Stages{Dense: true}), nil)
	if err != nil || len(res) == 0 || res[0].Keyword != nil || res[0].Dense == nil {
		t.Fatalf("dense only: %+v, %v", res, err)
	}
	res, err = p.Run(ctx, 1, "restore backup", opts(Stages{}), nil)
	if err != nil || len(res) != 0 {
		t.Fatalf("no stage: %+v, %v", res, err)
	}
}

func TestRunChineseAndOffTopic(t *testing.T) {
	p := fixture(t)
	ctx := context.Background()
	res, err := p.Run(ctx, 1, "怎样查看磁盘使用情况", opts(AllStages()), nil)
	if err != nil || len(res) == 0 || res[0].Hit.DocumentID != 3 || res[0].Relevance < 0.5 {
		t.Fatalf("Chinese: %+v, %v", res, err)
	}
	res, err = p.Run(ctx, 1, "What is the capital of France?", opts(AllStages()), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Relevance > 0 {
			t.Errorf("off-topic chunk %d has relevance %v", r.Hit.DocumentID, r.Relevance)
		}
	}
}

// TestRunChineseSharedCharacterIsNotCoverage: a Chinese question that shares
// only characters with a chunk (the 磁 and 盘 of 磁盘 in 磁带 and 光盘) finds it
// through the keyword stage, but its relevance counts whole words only, so
// the responder still says the docs do not cover the question.
func TestRunChineseSharedCharacterIsNotCoverage(t *testing.T) {
	p := fixture(t)
	ctx := context.Background()
	res, err := p.Run(ctx, 1, "磁带光盘", opts(Stages{Keyword: true, Rerank: true}), nil)
	if err != nil || len(res) != 1 || res[0].Hit.DocumentID != 3 {
		t.Fatalf("keyword by character: %+v, %v", res, err)
	}
	if res[0].Relevance != 0 {
		t.Errorf("relevance = %v, want 0 (no word of the question is in the chunk)", res[0].Relevance)
	}
}

func TestRunFilterAndBadQueries(t *testing.T) {
	p := fixture(t)
	ctx := context.Background()
	only2 := func(_ context.Context, hits []vector.Hit) ([]vector.Hit, error) {
		var out []vector.Hit
		for _, h := range hits {
			if h.DocumentID == 2 {
				out = append(out, h)
			}
		}
		return out, nil
	}
	res, err := p.Run(ctx, 1, "restore backup install", opts(AllStages()), only2)
	if err != nil || len(res) != 1 || res[0].Hit.DocumentID != 2 {
		t.Fatalf("filter: %+v, %v", res, err)
	}
	for _, q := range []string{"", "   ", "?!…", "\x00\x01\xff", strings.Repeat("backup ", 5000)} {
		if _, err := p.Run(ctx, 1, q, opts(AllStages()), nil); err != nil {
			t.Errorf("query %.20q: %v", q, err)
		}
	}
	if res, _ := p.Run(ctx, 2, "restore backup", opts(AllStages()), nil); len(res) != 0 {
		t.Errorf("another site's chunks: %+v", res)
	}
}
