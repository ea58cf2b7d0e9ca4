package web

import (
	"strings"
	"testing"
)

// TestNav: the sidebar nests collections, opens those on the way to the
// current document (the first level on a site's own pages), marks it, and
// escapes titles and links.
func TestNav(t *testing.T) {
	nav := buildNav([]treeNode{
		{Title: "Guides <b>", Type: "collection", Children: []treeNode{
			{ID: 1, Title: `Install "fast" & <script>`, Type: "document"},
			{Title: "Empty", Type: "collection"},
			{Title: "Deeper", Type: "collection", Children: []treeNode{{ID: 3, Title: "Deep", Type: "document"}}},
		}},
		{ID: 2, Title: "FAQ", Type: "document"},
	}, "a b")
	page := func(guides, deeper, cur1, cur3, cur2 bool) string {
		open := func(b bool) string {
			if b {
				return " open"
			}
			return ""
		}
		leaf := func(id, title string, cur bool) string {
			if cur {
				return `<li class="leaf current"><a href="/s/a%20b/d/` + id + `" aria-current="page">` + title + `</a></li>`
			}
			return `<li class="leaf"><a href="/s/a%20b/d/` + id + `">` + title + `</a></li>`
		}
		return `<ul class="tree"><li class="col"><details` + open(guides) + `><summary>Guides &lt;b&gt;</summary>` +
			`<ul class="tree">` + leaf("1", "Install &#34;fast&#34; &amp; &lt;script&gt;", cur1) +
			`<li class="col"><details><summary>Empty</summary></details></li>` +
			`<li class="col"><details` + open(deeper) + `><summary>Deeper</summary><ul class="tree">` + leaf("3", "Deep", cur3) +
			`</ul></details></li></ul></details></li>` + leaf("2", "FAQ", cur2) + `</ul>`
	}
	for _, c := range []struct {
		current int64
		want    string
	}{
		{0, page(true, false, false, false, false)},
		{1, page(true, false, true, false, false)},
		{3, page(true, true, false, true, false)},
		{2, page(false, false, false, false, true)},
		{99, page(false, false, false, false, false)},
	} {
		got := string(nav.render(c.current))
		if got != c.want {
			t.Errorf("current %d\n got %s\nwant %s", c.current, got, c.want)
		}
		if strings.Contains(got, "<script>") || strings.Contains(got, "<b>") {
			t.Fatal("a title's markup came through")
		}
	}
	// Rendering leaves the shared copy as it was.
	if got := string(nav.render(2)); got != page(false, false, false, false, true) {
		t.Errorf("a second render differs: %s", got)
	}
	if got := buildNav(nil, "a").render(0); got != "" {
		t.Errorf("an empty tree renders %q", got)
	}
}
