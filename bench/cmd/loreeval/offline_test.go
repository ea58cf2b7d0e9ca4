package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/lorekb/lore/internal/retrieve"
	"github.com/lorekb/lore/internal/vector"
)

func TestListMissShowsTopThreeAndRelevantChunks(t *testing.T) {
	files := map[int64]string{1: "api/cli.md", 2: "api/util.md", 3: "api/fs.md", 4: "api/os.md", 5: "api/process.md"}
	rr := 9.5
	var res []retrieve.Result
	for i, doc := range []int64{1, 2, 3, 4, 5, 1} {
		res = append(res, retrieve.Result{Hit: vector.Hit{DocumentID: doc, Heading: "H" + string(rune('a'+i))}, Rerank: &rr, Score: float64(10 - i)})
	}
	q := question{q: "How do I read the command line arguments?", file: "api/process.md"}
	var asked int
	var b strings.Builder
	err := listMiss(&b, "nodejs-doc", q, 5, files, func(n int) ([]retrieve.Result, error) { asked = n; return res, nil })
	if err != nil {
		t.Fatal(err)
	}
	if asked != 20 {
		t.Errorf("asked for %d results, want 20", asked)
	}
	out := b.String()
	for _, want := range []string{`miss [nodejs-doc] "How do I read the command line arguments?" (api/process.md): rank 5`, "api/cli.md", "api/util.md", "api/fs.md", " 5 api/process.md", "rerank   9.50", "[He]"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, not := range []string{"api/os.md", "[Hf]"} {
		if strings.Contains(out, not) {
			t.Errorf("output lists %q (neither in the first three nor the relevant file):\n%s", not, out)
		}
	}
	boom := errors.New("boom")
	if err := listMiss(&b, "nodejs-doc", q, 0, files, func(int) ([]retrieve.Result, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Errorf("err = %v, want the run's error", err)
	}
}
