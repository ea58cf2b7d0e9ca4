package convert

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

var (
	refTrailSpace = regexp.MustCompile(`[ \t]+\n`)
	refBlankRuns  = regexp.MustCompile(`\n{3,}`)
)

// cleanRef is Clean as two regexps: what every converter's output was.
func cleanRef(md string) string {
	md = strings.ReplaceAll(md, "\r\n", "\n")
	md = strings.ReplaceAll(md, "\r", "\n")
	md = strings.TrimPrefix(md, "\ufeff")
	md = refTrailSpace.ReplaceAllString(md, "\n")
	md = refBlankRuns.ReplaceAllString(md, "\n\n")
	return strings.TrimSpace(md) + "\n"
}

// Clean gives what the regexps gave on texts made of the characters that
// matter to it (line ends, spaces, tabs, other white space, a BOM) and words.
func TestCleanMatchesTheRegexps(t *testing.T) {
	parts := []string{"a", "word", " ", "\t", "\n", "\n", "\r", "\r\n", "\v", "\u00a0", "\ufeff", "# h", "  \n"}
	r := rand.New(rand.NewPCG(1, 2))
	cases := []string{"", "\n", " \n \n", "\ufeffa\r\n\r\n\r\n\r\nb \t", "a\n\n\nb", "a \n\t\n \nb\n"}
	for range 20000 {
		var b strings.Builder
		for range r.IntN(24) {
			b.WriteString(parts[r.IntN(len(parts))])
		}
		cases = append(cases, b.String())
	}
	for _, c := range cases {
		if got, want := Clean(c), cleanRef(c); got != want {
			t.Fatalf("Clean(%q) = %q, want %q", c, got, want)
		}
	}
}

// BenchmarkClean compares Clean with the two regexps it replaced on a
// converted page's worth of Markdown (go test -bench Clean ./internal/convert).
func BenchmarkClean(b *testing.B) {
	md := strings.Repeat("# Heading  \n\nA paragraph of text with trailing space \t\nand a second line.\n\n\n\n- item\n- item  \n", 300)
	b.Run("one-pass", func(b *testing.B) {
		for b.Loop() {
			Clean(md)
		}
	})
	b.Run("regexps", func(b *testing.B) {
		for b.Loop() {
			cleanRef(md)
		}
	})
}
