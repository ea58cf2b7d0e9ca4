package lexical

import (
	"maps"
	"testing"

	"github.com/lorekb/lore/internal/vector"
)

// The rerank's term bag analyzes a chunk's text once; it must count exactly
// what the keyword index counts (vector.EachFieldTerm), or BM25 with the
// site's statistics would weigh terms differently from the index.
func TestFieldBagMatchesIndex(t *testing.T) {
	docs := []Doc{
		{Title: "Streams API", Heading: "Guide > Readable streams", Text: "A readable stream is an abstraction for a source of data. Streams, streams!"},
		{Title: "", Heading: "", Text: "fs.readFile() reads the entire contents of a file; camelCaseWords and snake_case_words"},
		{Title: "知识库", Heading: "文档 > 检索增强生成", Text: "检索增强生成 (RAG) 把知识库的段落交给模型。"},
		{Title: "only a title", Heading: "Top > Leaf", Text: ""},
	}
	for _, d := range docs {
		want := map[string]int{}
		wantN := 0
		vector.EachFieldTerm(d.Title, d.Heading, d.Text, func(term string, w int) {
			want[term] += w
			wantN += w
		})
		tf, n, _ := fieldBag(d)
		if !maps.Equal(tf, want) || n != wantN {
			t.Errorf("fieldBag(%+v) = %v (%d), the index counts %v (%d)", d, tf, n, want, wantN)
		}
	}
}

// A doc slice scored twice (the pipeline's rerank, then its expanded
// rerank) is analyzed once, and the second scoring is what a fresh slice
// gives.
func TestScoringReusesTheAnalysis(t *testing.T) {
	mk := func() []Doc {
		return []Doc{{Title: "Install guide", Heading: "Linux", Text: "Run the installer, then restart the quokka server."},
			{Title: "Notes", Text: "Upgrading keeps your settings; install over the old version."}}
	}
	docs := mk()
	first := ScoreFields("install quokka", docs, nil)
	for i := range docs {
		if docs[i].an == nil {
			t.Fatalf("doc %d not kept analyzed after scoring", i)
		}
	}
	an := docs[0].an
	exp := map[string]float64{"restart": 0.5}
	again, fresh := ScoreExpanded("install quokka", docs, nil, exp), ScoreExpanded("install quokka", mk(), nil, exp)
	if docs[0].an != an {
		t.Error("the second scoring analyzed the doc again")
	}
	for i := range again {
		if again[i] != fresh[i] {
			t.Errorf("doc %d: %v with the kept analysis, %v fresh", i, again[i], fresh[i])
		}
	}
	if len(first) != 2 || first[0] == 0 {
		t.Errorf("scores = %v", first)
	}
}
