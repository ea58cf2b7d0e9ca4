package extractive

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/lorekb/lore/internal/analyze"
)

var listMarkerRe = regexp.MustCompile(`^(?:[-*+•]|\d{1,3}[.)])\s+`)

// blocks splits text into segments that no sentence may cross: paragraphs
// (blank lines), fragment boundaries ("[...]") and structural lines
// (headings, list items, quotes, code fences). Wrapped lines of one paragraph
// are joined. Fences are dropped since they make poor answers.
func blocks(text string) []string {
	var (
		out []string
		cur []string
	)
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.Join(cur, " "))
			cur = nil
		}
	}
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case t == "" || t == "[...]" || t == "…" || strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~"):
			flush()
		case strings.HasPrefix(t, "#"):
			// A heading (a passage's heading path) stands on its own: an
			// answer may sit in it.
			flush()
			if h := strings.TrimSpace(strings.TrimLeft(t, "#")); h != "" {
				out = append(out, h)
			}
		case listMarkerRe.MatchString(t) || strings.HasPrefix(t, ">") || strings.HasPrefix(t, "|"):
			// A list item, quote or table row stands on its own.
			flush()
			t = listMarkerRe.ReplaceAllString(t, "")
			t = strings.TrimSpace(strings.TrimLeft(t, ">"))
			if t != "" {
				out = append(out, t)
			}
		default:
			if len(cur) > 0 && endsSentence(cur[len(cur)-1]) {
				flush()
			}
			cur = append(cur, t)
		}
	}
	flush()
	return out
}

// endsSentence reports whether a line ends with sentence-final punctuation
// (or a colon), in which case the next line starts a new sentence.
func endsSentence(line string) bool {
	r, _ := utf8.DecodeLastRuneInString(line)
	return strings.ContainsRune(".!?:;。！？：；…", r)
}

// --- text helpers ---

// truncateRunes shortens s to at most max runes, preferring a word boundary,
// and marks the cut with "…".
func truncateRunes(s string, max int) string {
	r := []rune(s)
	if len(r) <= max {
		return s
	}
	cut := max - 1
	for i := cut; i > max/2; i-- {
		if unicode.IsSpace(r[i]) {
			cut = i
			break
		}
	}
	return strings.TrimRightFunc(string(r[:cut]), unicode.IsSpace) + "…"
}

// words splits text into streaming pieces: each word with its trailing
// spaces, and each CJK character (with any punctuation after it) on its own,
// so the pieces concatenate back to text exactly.
func words(text string) []string {
	var (
		out       []string
		start     int
		prevSpace bool
		prevCJK   bool
	)
	for i, r := range text {
		space, cjk := unicode.IsSpace(r), analyze.IsCJK(r)
		if i > start && !space && (prevSpace || ((prevCJK || cjk) && !unicode.IsPunct(r))) {
			out = append(out, text[start:i])
			start = i
		}
		prevSpace, prevCJK = space, cjk
	}
	if start < len(text) {
		out = append(out, text[start:])
	}
	return out
}

// runeChunks splits s into pieces of at most n runes.
func runeChunks(s string, n int) []string {
	var out []string
	for len(s) > 0 {
		i, count := 0, 0
		for i < len(s) && count < n {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			count++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}
