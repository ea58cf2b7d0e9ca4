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

func TestHTMLToMarkdown(t *testing.T) {
	page := `<html><head><title>VACUUM &amp; more</title><script>x()</script></head><body>
<div class=nosearch><div class="menu"><a href="index.html">Home</a></div><div>Search</div></div>
<div class=fancy><div class=nosearch><div class="fancy_title">VACUUM</div></div>
<h1 id="syntax"><span>1. </span>Syntax</h1>
<p><b>vacuum-stmt:</b><button onclick='x'>hide</button></p>
<div><svg viewBox="0 0 1 1"><text>VACUUM</text></svg></div>
<h2><span>2.1. </span>Why</h2>
<ul><li><p>Frees   pages.
</p></li><li> Defragments.</li></ul>
<pre>
# not a heading
  indented   code &lt;x&gt;
</pre>
<table><tr><td>%d</td><td></td><td>day of month</td></tr></table>
<!-- a comment -->
</div></body></html>`
	title, md := HTMLToMarkdown(page)
	if title != "VACUUM & more" {
		t.Errorf("title %q", title)
	}
	want := "# VACUUM & more\n\n## Syntax\n\nvacuum-stmt:\n\n### Why\n\n- Frees pages.\n\n- Defragments.\n\n```\n# not a heading\n  indented   code <x>\n```\n\n%d | day of month"
	if md != want {
		t.Errorf("markdown\n%q\nwant\n%q", md, want)
	}
	for _, not := range []string{"Home", "Search", "hide", "x()", "comment"} {
		if strings.Contains(md, not) {
			t.Errorf("markdown keeps %q", not)
		}
	}
	// A page whose first <h1> is its title keeps its levels.
	if _, md := HTMLToMarkdown(`<title>Guide</title><h1>Guide</h1><h2>Install</h2><p>Run it.</p>`); md != "# Guide\n\n## Install\n\nRun it." {
		t.Errorf("markdown %q", md)
	}
}
