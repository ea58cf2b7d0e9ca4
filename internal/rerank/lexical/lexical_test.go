package lexical

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/lorekb/lore/internal/vector"
)

func TestRerankPutsRelevantDocFirst(t *testing.T) {
	docs := []string{
		"Lore stores documents in PostgreSQL and indexes them for search.",
		"The weather today is sunny with a light breeze.",
		"To reset your password, open Settings and choose Reset password. A reset link is emailed to you.",
		"Your password must be at least twelve characters long.",
	}
	res, err := New().Rerank(context.Background(), "how do I reset my password", docs, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(docs) {
		t.Fatalf("got %d results, want all %d", len(res), len(docs))
	}
	if res[0].Index != 2 {
		t.Errorf("best = doc %d (%v), want doc 2", res[0].Index, res)
	}
	for i := 1; i < len(res); i++ {
		if res[i].Score > res[i-1].Score {
			t.Errorf("results not sorted by score: %v", res)
		}
	}
	if res[1].Index != 3 || res[1].Score <= 0 {
		t.Errorf("doc 3 mentions the password and should come second: %v", res)
	}
	// The other docs share no query term: they score 0 and keep their
	// original order at the end.
	for i, want := range []int{0, 1} {
		if r := res[i+2]; r.Index != want || r.Score != 0 {
			t.Errorf("res[%d] = %v, want doc %d with score 0", i+2, r, want)
		}
	}
}

func TestRerankTopN(t *testing.T) {
	docs := []string{"alpha", "beta gamma", "gamma", "gamma gamma delta", "epsilon"}
	res, err := New().Rerank(context.Background(), "gamma", docs, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 {
		t.Fatalf("got %d results, want 2: %v", len(res), res)
	}
	// Doc 2 is only "gamma"; doc 3 has it twice but is longer. BM25 length
	// normalisation and term saturation put both above doc 1.
	got := []int{res[0].Index, res[1].Index}
	if !(got[0] == 2 && got[1] == 3) && !(got[0] == 3 && got[1] == 2) {
		t.Errorf("top 2 = %v, want docs 2 and 3", res)
	}
	// topN larger than the corpus returns every doc.
	res, _ = New().Rerank(context.Background(), "gamma", docs, 50)
	if len(res) != len(docs) {
		t.Errorf("topN=50 returned %d results", len(res))
	}
}

func TestRerankCJK(t *testing.T) {
	docs := []string{
		"本系统支持全文检索和向量检索。",
		"安装步骤：下载安装包，然后运行安装程序即可完成安装。",
		"今天天气很好。",
	}
	res, err := New().Rerank(context.Background(), "如何安装？", docs, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Index != 1 {
		t.Errorf("got %v, want doc 1 first", res)
	}
}

func TestRerankPhraseAndProximityBonus(t *testing.T) {
	// The docs contain the same terms the same number of times and have the
	// same length; doc 0 has the query as a phrase, doc 2 has its terms
	// adjacent in the other order, doc 1 has them apart.
	docs := []string{"server log rotation", "log server rotation", "rotation log server"}
	res, err := New().Rerank(context.Background(), "log rotation", docs, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Index != 0 || res[1].Index != 2 || res[2].Index != 1 {
		t.Fatalf("order = %v, want docs 0, 2, 1", res)
	}
	if diff := res[0].Score - res[1].Score; diff < PhraseBonus-1e-9 || diff > PhraseBonus+1e-9 {
		t.Errorf("score gap = %v, want PhraseBonus %v", diff, PhraseBonus)
	}
	if res[1].Score <= res[2].Score {
		t.Errorf("adjacent terms should beat distant ones: %v", res)
	}
}

func TestRerankFieldsUsesCorpusStats(t *testing.T) {
	docs := []Doc{
		{Title: "Backups", Heading: "Restore", Text: "Copy the archive back."},
		{Title: "Guide", Text: "The guide explains the guide, and restore once."},
	}
	// Among these two candidates "guide" looks rare, but the site says it is
	// everywhere and "restore" is rare: the restore section wins.
	st := &vector.KeywordStats{Docs: 1000, AvgLen: 8, DocFreq: map[string]int{"guid": 900, "restor": 3}}
	res, err := New().RerankFields(context.Background(), "restore guide", docs, 0, st)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Index != 0 {
		t.Errorf("order = %v, want the restore heading first", res)
	}
}

func TestRerankDeterministicAndEdgeCases(t *testing.T) {
	docs := []string{"a b c", "c b a", "b", "", "a a a"}
	first, _ := New().Rerank(context.Background(), "a b", docs, 0)
	for i := 0; i < 20; i++ {
		again, _ := New().Rerank(context.Background(), "a b", docs, 0)
		if !reflect.DeepEqual(first, again) {
			t.Fatalf("run %d differs: %v vs %v", i, first, again)
		}
	}
	res, err := New().Rerank(context.Background(), "   ", docs, 3)
	if err != nil || len(res) != 3 || res[0].Index != 0 || res[0].Score != 0 {
		t.Errorf("empty query: %v, %v", res, err)
	}
	res, err = New().Rerank(context.Background(), "a", nil, 3)
	if err != nil || len(res) != 0 {
		t.Errorf("no docs: %v, %v", res, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := New().Rerank(ctx, "a", docs, 3); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ctx: err = %v", err)
	}
}
