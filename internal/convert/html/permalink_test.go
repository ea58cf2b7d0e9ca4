package html_test

import (
	"context"
	"strings"
	"testing"

	"github.com/lorekb/lore/internal/convert"
	"github.com/lorekb/lore/internal/convert/html"
)

// A heading's link to its own anchor (Sphinx's and Apache's ¶, others' #)
// is not part of the heading; a heading that links elsewhere, or whose
// whole text is its anchor link, keeps its text.
func TestHeadingPermalinksAreDropped(t *testing.T) {
	page := `<html><body>
<h2><a name="alias">Alias Directive</a> <a class="permalink" href="#alias" title="Permanent link">&para;</a></h2>
<p>Maps URLs to filesystem locations.</p>
<h2>Install<a class="headerlink" href="#install">#</a></h2>
<p>Run make.</p>
<h3><a href="#usage">Usage</a></h3>
<h3>See <a href="other.html">other</a></h3>
<p>Text with a <a href="#alias">¶</a> link outside a heading.</p>
</body></html>`
	res, err := html.Converter{}.Convert(context.Background(), convert.Input{Name: "p.html", Data: []byte(page)})
	if err != nil {
		t.Fatal(err)
	}
	md := res.Markdown
	for _, want := range []string{"## Alias Directive\n", "## Install\n", "### [Usage](#usage)", "### See [other](other.html)", "[¶](#alias)"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "Permanent link") || strings.Contains(md, "(#install)") {
		t.Errorf("a permalink anchor stayed:\n%s", md)
	}
}
