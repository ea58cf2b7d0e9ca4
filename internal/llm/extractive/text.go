package extractive

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/lorekb/lore/internal/analyze"
)

var (
	listMarkerRe = regexp.MustCompile(`^(?:[-*+•]|\d{1,3}[.)])\s+`)
	// tableRuleRe is a table's rule row (|---|:--:|), which says nothing.
	tableRuleRe = regexp.MustCompile(`^\|?[\s:|-]*-[\s:|-]*$`)
)

// segKind tells prose from code: an answer quotes prose as sentences and
// code only as a block.
type segKind int

const (
	segText    segKind = iota // a paragraph, list item or quote
	segHeading                // a heading line (a fragment's heading path)
	segCode                   // the inside of a code fence, lines kept
	segRow                    // a table row: its cells, without the header that says what they are
)

// segment is one unit no sentence may cross, with the heading it sits
// under (what it is about, for a sentence that does not repeat it).
type segment struct {
	text    string
	kind    segKind
	heading string
}

// cellSep joins a table row's cells in its segment's text.
const cellSep = " – "

// segments splits text into paragraphs (blank lines), fragment boundaries
// ("[...]"), headings, list items, quotes, table rows and fenced code.
// Wrapped lines of one paragraph are joined; a table's rule row and header
// row are dropped (they hold no statement), its other rows become their
// cells joined by " – " (for summaries, and answers quote a row that
// describes, see describes).
func segments(text string) []segment {
	var (
		out     []segment
		cur     []string
		code    []string
		inCode  bool
		heading string
		lastRow = -1 // index in out of the table row on the line before, if any
		inQuote bool // this line is a quote's (">")
		// inComment: an HTML comment is open (what it holds is not on the
		// page, so no answer quotes it: Node.js's docs keep their change
		// history in YAML there)
		inComment bool
	)
	flush := func() {
		if len(cur) > 0 {
			out = append(out, segment{text: strings.Join(cur, " "), heading: heading})
			cur = nil
		}
	}
	add := func(t string, kind segKind) {
		if t != "" {
			out = append(out, segment{text: t, kind: kind, heading: heading})
		}
	}
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		row := lastRow
		lastRow = -1
		quote := inQuote // the line before was a quote's
		inQuote = false
		fence := strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")
		if !inCode && (inComment || strings.Contains(t, "<!--")) {
			if t, inComment = uncomment(t, inComment); t == "" {
				continue
			}
			fence = strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")
		}
		if inCode {
			if fence {
				inCode = false
				add(strings.Trim(strings.Join(code, "\n"), "\n"), segCode)
				code = nil
			} else {
				code = append(code, strings.TrimRightFunc(line, unicode.IsSpace))
			}
			continue
		}
		switch {
		case fence:
			flush()
			inCode = true
		case linkDefRe.MatchString(t):
			// A link reference definition ([`Agent`]: #class-httpsagent):
			// the page shows nothing of it.
			flush()
		case t == "" || t == "[...]" || t == "…":
			flush()
			if t != "" {
				heading = "" // the next fragment brings its own heading path
			}
		case strings.HasPrefix(t, "#"):
			flush()
			if h := strings.TrimSpace(strings.TrimLeft(t, "#")); h != "" {
				heading = h
				add(h, segHeading)
			}
		case strings.HasPrefix(t, "|"):
			flush()
			if tableRuleRe.MatchString(t) {
				if row >= 0 && row == len(out)-1 {
					out = out[:row] // the row above a rule row is the table's header
				}
				continue
			}
			var cells []string
			for _, c := range strings.Split(strings.Trim(t, "|"), "|") {
				if c = strings.TrimSpace(c); c != "" {
					cells = append(cells, c)
				}
			}
			if n := len(out); len(cells) > 0 {
				add(strings.Join(cells, cellSep), segRow)
				lastRow = n
			}
		case listMarkerRe.MatchString(t):
			// A list item stands on its own; its wrapped lines (the
			// default case) continue it.
			flush()
			if t = strings.TrimSpace(listMarkerRe.ReplaceAllString(t, "")); t != "" {
				cur = append(cur, t)
			}
		case strings.HasPrefix(t, ">"):
			// A quote stands on its own, its ">" lines one text.
			t = strings.TrimSpace(strings.TrimLeft(t, ">"))
			if !quote || t == "" || (len(cur) > 0 && endsSentence(cur[len(cur)-1])) {
				flush()
			}
			if t != "" {
				cur = append(cur, t)
			}
			inQuote = true
		default:
			if len(cur) > 0 && endsSentence(cur[len(cur)-1]) {
				flush()
			}
			cur = append(cur, t)
		}
	}
	flush()
	if inCode {
		add(strings.Trim(strings.Join(code, "\n"), "\n"), segCode) // an unclosed fence (a cut fragment)
	}
	return out
}

// uncomment returns line without its HTML comments and whether one is still
// open at its end; open says one was open before it. "<!--" in an inline
// code span is text.
func uncomment(line string, open bool) (string, bool) {
	var b strings.Builder
	for {
		if open {
			end := strings.Index(line, "-->")
			if end < 0 {
				return strings.TrimSpace(b.String()), true
			}
			line, open = line[end+3:], false
			continue
		}
		i := strings.Index(line, "<!--")
		if i < 0 {
			break
		}
		if strings.Count(b.String()+line[:i], "`")%2 == 1 {
			b.WriteString(line[:i+4])
			line = line[i+4:]
			continue
		}
		b.WriteString(line[:i])
		line, open = line[i+4:], true
	}
	b.WriteString(line)
	return strings.Join(strings.Fields(b.String()), " "), false // no gap where a comment was
}

// Links an answer cannot carry: a reference link ([text][ref], [text][])
// whose definition is elsewhere on the page, and an inline link to a path
// relative to the page, which would point nowhere from the chat.
var (
	refLinkRe      = regexp.MustCompile(`\[([^\[\]]+)\]\[[^\[\]]*\]`)
	relativeLinkRe = regexp.MustCompile(`\[([^\[\]]+)\]\((?:[^():\s]+)(?:\s+"[^"]*")?\)`)
)

// linkDefRe matches a link reference definition line.
var linkDefRe = regexp.MustCompile(`^\[[^\[\]]+\]:\s*\S+(\s+("[^"]*"|'[^']*'|\([^)]*\)))?$`)

// shownLinks keeps of such links the text the page shows; links with a
// scheme (https://…) stay links.
func shownLinks(s string) string {
	if !strings.Contains(s, "][") && !strings.Contains(s, "](") {
		return s
	}
	return linkText(linkText(s, refLinkRe), relativeLinkRe)
}

// linkText replaces each match of re (a link whose first group is its text)
// by its text, but not an image's (![alt](src)).
func linkText(s string, re *regexp.Regexp) string {
	var b strings.Builder
	last := 0
	for _, m := range re.FindAllStringSubmatchIndex(s, -1) {
		if m[0] > 0 && s[m[0]-1] == '!' {
			continue
		}
		b.WriteString(s[last:m[0]])
		b.WriteString(s[m[2]:m[3]])
		last = m[1]
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// blocks is the prose of text, headings included, as summaries read it.
func blocks(text string) []string {
	var out []string
	for _, s := range segments(text) {
		if s.kind != segCode {
			out = append(out, s.text)
		}
	}
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
