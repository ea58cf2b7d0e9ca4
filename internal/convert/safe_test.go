package convert_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/convert"
)

// TestSanitize: links and images keep their text when their target is not
// http, https, mailto, relative or an anchor (however it is spelled), raw
// HTML is shown as text, code is left alone.
func TestSanitize(t *testing.T) {
	cases := []struct{ in, want string }{
		{"[js](javascript:alert%281%29) after", "js after"},
		{"[d](data:text/html,%3Cb%3E) x", "d x"},
		{"![img](javascript:x) y", "img y"},
		{"[e](JaVaScRiPt:alert(1))", "e"},
		{"[e](java\\script:alert(1))", "[e](java\\script:alert(1))"}, // backslash before a letter is kept: "java\script:" is no scheme
		{"[e](javascript&#58;alert(1))", "e"},
		{"[e](javascript\\:alert(1))", "e"},
		{"[e](<javascript:alert(1)>)", "e"},
		{"[e](\njavascript:alert(1))", "e"},
		{"[e](vbscript:x) [f](file:///etc/passwd)", "e f"},
		{"[ok](https://example.com/a_(b)) [m](mailto:a@b.c) [r](../x.md) [t](#top) [q](?a=b:c)", "[ok](https://example.com/a_(b)) [m](mailto:a@b.c) [r](../x.md) [t](#top) [q](?a=b:c)"},
		{"![](lore-image:image1.png)", "![](lore-image:image1.png)"},
		{"[a [b](javascript:x) c](https://ok)", "[a b c](https://ok)"},
		{"[id]: javascript:alert(1)\n\n[x][id]", "[id]: #\n\n[x][id]"},
		{"[id]: https://ok \"t\"", "[id]: https://ok \"t\""},
		{"<javascript:alert(1)> <https://ok> <a@b.c>", "&lt;javascript:alert(1)> <https://ok> <a@b.c>"},
		{"<script>alert(1)</script>", "&lt;script>alert(1)&lt;/script>"},
		{"a <img src=x onerror=alert(1)> b < c", "a &lt;img src=x onerror=alert(1)> b < c"},
		{"<!-- c --> <?php ?>", "&lt;!-- c --> &lt;?php ?>"},
		{"`<script>` and \\<b>", "`<script>` and \\<b>"},
		{"```\n<script>\n[a](javascript:x)\n```\n<b>", "```\n<script>\n[a](javascript:x)\n```\n&lt;b>"},
		// A span that crosses a table cell's pipe or a line is not trusted as code.
		{"| `x | <script> | y` |", "| `x | &lt;script> | y` |"},
		{"`a\n<b>`", "`a\n&lt;b>`"},
		{"`a\n```\n<b>`", "`a\n```\n<b>`"}, // the fence interrupts the paragraph: code to the end
		// A fence indented inside a list item ends with the item: not trusted.
		{"- a\n  ```\n<script>", "- a\n  ```\n&lt;script>"},
	}
	for _, c := range cases {
		if got := convert.Sanitize(c.in); got != c.want {
			t.Errorf("Sanitize(%q)\n = %q\nwant %q", c.in, got, c.want)
		}
	}
}

// TestSanitizeLinear: a long document of links, brackets and tags is
// sanitized in linear time.
func TestSanitizeLinear(t *testing.T) {
	in := strings.Repeat("[a](javascript:x) [[[ <b> `c` ", 200000)
	start := time.Now()
	out := convert.Sanitize(in)
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %v", d)
	}
	if strings.Contains(out, "javascript:") || strings.Contains(out, "<b>") {
		t.Fatalf("%.200q", out)
	}
}

// TestEscapeText: document text stays text.
func TestEscapeText(t *testing.T) {
	got := convert.EscapeText("# <script>alert(1)</script> a*b_c [x](y) `z` AT&T &amp; \\")
	want := "\\# &lt;script&gt;alert(1)&lt;/script&gt; a\\*b\\_c \\[x\\](y) \\`z\\` AT&T &amp;amp; \\\\"
	if got != want {
		t.Fatalf("%q\nwant %q", got, want)
	}
	if convert.LinkTarget("javascript:alert(1)") != "" || convert.LinkTarget(" data:text/html,x") != "" {
		t.Fatal("unsafe link target kept")
	}
	if got := convert.LinkTarget("https://x.test/a b)(<c>"); got != "https://x.test/a%20b%29%28%3Cc%3E" {
		t.Fatalf("%q", got)
	}
}

type stuck struct{ release chan struct{} }

func (stuck) Name() string      { return "stuck" }
func (stuck) Formats() []string { return []string{"x"} }
func (s stuck) Convert(ctx context.Context, in convert.Input) (*convert.Result, error) {
	<-s.release // ignores ctx, like a third-party library in a loop
	return &convert.Result{Markdown: "late"}, nil
}

// TestRunBudget: a conversion past its budget fails at the budget as
// ErrTooSlow (a named, permanent failure) even when the converter ignores
// its context; a caller's cancellation is returned as such.
func TestRunBudget(t *testing.T) {
	s := stuck{release: make(chan struct{})}
	defer close(s.release)
	start := time.Now()
	_, err := convert.Run(context.Background(), s, convert.Input{Name: "a.x", Data: []byte("x"),
		Limits: convert.Limits{Timeout: 200 * time.Millisecond}})
	if !convert.Permanent(err) || !strings.Contains(err.Error(), "took too long") {
		t.Fatalf("%v, want ErrTooSlow", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("returned after %v", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err = convert.Run(ctx, s, convert.Input{Name: "a.x", Data: []byte("x"), Limits: convert.Limits{Timeout: time.Hour}})
	if err != context.Canceled {
		t.Fatalf("%v, want context.Canceled", err)
	}
	if d := convert.DefaultLimits.Timeout; d <= 0 || (convert.Limits{}).Or().Timeout != d {
		t.Fatal("no default budget")
	}
}
