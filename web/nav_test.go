package web

import (
	"strings"
	"testing"
)

// TestNavHTML: the sidebar nests collections, opens those on the way to the
// current document, marks it, and escapes titles and links.
func TestNavHTML(t *testing.T) {
	got := string(navHTML([]navNode{
		{Title: "Guides <b>", IsCol: true, Open: true, Children: []navNode{
			{Title: `Install "fast" & <script>`, Href: "/s/a/d/1", Current: true},
			{Title: "Empty", IsCol: true},
		}},
		{Title: "FAQ", Href: `/s/a/d/2?x="y"`},
	}))
	want := `<ul class="tree"><li class="col"><details open><summary>Guides &lt;b&gt;</summary>` +
		`<ul class="tree"><li class="leaf current"><a href="/s/a/d/1" aria-current="page">Install &#34;fast&#34; &amp; &lt;script&gt;</a></li>` +
		`<li class="col"><details><summary>Empty</summary></details></li></ul></details></li>` +
		`<li class="leaf"><a href="/s/a/d/2?x=&#34;y&#34;">FAQ</a></li></ul>`
	if got != want {
		t.Fatalf("navHTML\n got %s\nwant %s", got, want)
	}
	if strings.Contains(got, "<script>") || strings.Contains(got, "<b>") {
		t.Fatal("a title's markup came through")
	}
}
