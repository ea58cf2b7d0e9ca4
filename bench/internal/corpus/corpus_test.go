package corpus

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sample = "# Guide\n\nIntro paragraph.\n\n## Install\n\nRun the installer.\n\n```sh\n# not a heading\nmake install\n\nmake check\n```\n\n## Upgrade\n\nStop, replace, start.\n\nSecond paragraph of upgrade.\n"

func TestSplitReachesMinimumAndKeepsFences(t *testing.T) {
	files := []File{{Path: "g.md", Title: "Guide", Text: strings.Repeat(sample, 200)}}
	docs := Split(files, 60)
	if len(docs) < 60 {
		t.Fatalf("%d documents, want at least 60", len(docs))
	}
	for _, d := range docs {
		if strings.Count(d.Content, "```")%2 != 0 {
			t.Fatalf("a fenced block was cut: %q", d.Content)
		}
		if d.Title == "" || len(d.Title) > 200 {
			t.Fatalf("title %q", d.Title)
		}
	}
	if got := Pick(docs, 5); len(got) != 5 || got[0].Content != docs[0].Content {
		t.Fatalf("pick: %d", len(got))
	}
}

func TestCollectFallsBackToHTML(t *testing.T) {
	dir := t.TempDir()
	page := `<html><head><title>x</title><style>p{}</style></head><body><h1>Hello &amp; welcome</h1><p>First <b>bold</b> text.</p><script>var a;</script><p>Second.</p></body></html>`
	if err := os.WriteFile(filepath.Join(dir, "a.html"), []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	files, src, err := Collect(dir)
	if err != nil {
		t.Fatal(err)
	}
	if src.Kind != "html" || len(files) != 1 || files[0].Title != "Hello & welcome" {
		t.Fatalf("%+v %+v", src, files)
	}
	if txt := files[0].Text; strings.Contains(txt, "<") || strings.Contains(txt, "var a") || !strings.Contains(txt, "First bold text.\n\nSecond.") {
		t.Fatalf("text %q", txt)
	}
}
