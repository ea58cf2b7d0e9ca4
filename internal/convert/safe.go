package convert

import (
	"html"
	"strings"
)

// Imported Markdown is shown to readers, so what a file carries must stay
// text: converters escape the text they read (EscapeText) and build link
// targets with LinkTarget, and Run passes every converter's Markdown through
// Sanitize, which also covers formats that are Markdown already.

// EscapeText makes plain text from a document literal Markdown: emphasis,
// link and code characters are backslash-escaped and angle brackets become
// entities, so `<script>` in a Word paragraph is shown, never run (the HTML
// converter escapes the same way).
func EscapeText(s string) string {
	if !strings.ContainsAny(s, "\\`*_[]<>&#") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + len(s)/8)
	lineStart := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\', '`', '*', '_', '[', ']':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			if entityAt(s, i) {
				b.WriteString("&amp;")
			} else {
				b.WriteByte(c)
			}
		case '#':
			if lineStart {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
		switch c {
		case '\n':
			lineStart = true
		case ' ', '\t':
		default:
			lineStart = false
		}
	}
	return b.String()
}

// entityAt reports whether s[i:] (at an '&') reads as an HTML entity.
func entityAt(s string, i int) bool {
	for j := i + 1; j < len(s) && j <= i+33; j++ {
		c := s[j]
		switch {
		case c == ';':
			return j > i+1
		case c == '#' && j == i+1, c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		default:
			return false
		}
	}
	return false
}

// SafeLink reports whether a link target may be stored: http, https and
// mailto URLs, relative references and anchors, and an extracted image's
// temporary reference (rewritten to the file route when it is stored).
// The target is read as a browser would after Markdown rendering: escapes
// and entities decoded, tabs, newlines and leading control characters
// dropped, the scheme in any case.
func SafeLink(target string) bool {
	t := unescapeMarkdown(target)
	t = html.UnescapeString(t)
	var b strings.Builder
	for i := 0; i < len(t); i++ {
		if c := t[i]; c > ' ' && c != 0x7f {
			b.WriteByte(c)
		}
	}
	t = b.String()
	colon := strings.IndexByte(t, ':')
	if colon < 0 {
		return true
	}
	scheme := t[:colon]
	for i := 0; i < len(scheme); i++ {
		c := scheme[i]
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return true // not a scheme: a relative reference ("a/b:c", "?x=1:2", "#top:1")
		}
	}
	switch strings.ToLower(scheme) {
	case "http", "https", "mailto", strings.TrimSuffix(ImageScheme, ":"):
		return true
	}
	return false
}

// LinkTarget is target as a Markdown link destination, or "" when it is
// not a SafeLink: spaces, parentheses and angle brackets are
// percent-encoded so the destination cannot end early.
func LinkTarget(target string) string {
	target = strings.TrimSpace(target)
	if target == "" || !SafeLink(target) {
		return ""
	}
	var b strings.Builder
	for i := 0; i < len(target); i++ {
		switch c := target[i]; {
		case c <= ' ' || c == 0x7f || c == '(' || c == ')' || c == '<' || c == '>' || c == '\\' || c == '"':
			b.WriteString("%" + strings.ToUpper(string("0123456789abcdef"[c>>4])+string("0123456789abcdef"[c&15])))
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// unescapeMarkdown drops the backslash of Markdown escapes (`\:` is ':').
func unescapeMarkdown(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && isPunct(s[i+1]) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isPunct(c byte) bool {
	return c >= '!' && c <= '/' || c >= ':' && c <= '@' || c >= '[' && c <= '`' || c >= '{' && c <= '~'
}

// Sanitize makes converted Markdown safe to store, whatever produced it:
// raw HTML outside code becomes text (`<script>` is shown as "<script>"),
// a link or image whose target is not a SafeLink keeps only its text, an
// autolink or reference definition with such a target is defused. Code
// spans and fenced code blocks are kept as they are: they render as text.
// It is linear in the length of md.
func Sanitize(md string) string {
	md = strings.ReplaceAll(md, "\r\n", "\n")
	md = strings.ReplaceAll(md, "\r", "\n")
	s := sanitizer{src: md, out: make([]byte, 0, len(md)+len(md)/16)}
	s.run()
	return string(s.out)
}

type sanitizer struct {
	src      string
	out      []byte
	brackets []bracket // open '[' of the current paragraph
}

type bracket struct {
	at    int  // index of '[' in out
	image bool // preceded by '!' (at-1 in out)
}

func (s *sanitizer) run() {
	src := s.src
	i := 0
	for i < len(src) {
		end := lineEnd(src, i)
		// A fence at column 0 opens a code block, kept as it is up to its
		// closing fence (or the end).
		if fc, n := fenceOpen(src[i:end]); n > 0 {
			j := end
			for j < len(src) { // src[j] is '\n'
				next := lineEnd(src, j+1)
				closed := fenceClose(src[j+1:next], fc, n)
				j = next
				if closed {
					break
				}
			}
			if j < len(src) {
				j++
			}
			s.out = append(s.out, src[i:j]...)
			s.brackets = s.brackets[:0]
			i = j
			continue
		}
		if strings.TrimSpace(src[i:end]) == "" {
			s.brackets = s.brackets[:0] // a blank line ends the paragraph
		}
		if n := s.refDef(i); n > 0 {
			i = n
			end = lineEnd(src, i)
		}
		i = s.inline(i, end)
		if i < len(src) && src[i] == '\n' {
			s.out = append(s.out, '\n')
			i++
		}
	}
}

// fenceOpen returns the fence character and length of a code fence opening
// line at column 0, or 0.
func fenceOpen(line string) (byte, int) {
	if len(line) < 3 || line[0] != '`' && line[0] != '~' {
		return 0, 0
	}
	c := line[0]
	n := 0
	for n < len(line) && line[n] == c {
		n++
	}
	if n < 3 || c == '`' && strings.IndexByte(line[n:], '`') >= 0 {
		return 0, 0
	}
	return c, n
}

// fenceClose reports whether line closes a fence of n characters c.
func fenceClose(line string, c byte, n int) bool {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 {
		return false
	}
	k := 0
	for k < len(t) && t[k] == c {
		k++
	}
	return k >= n && strings.TrimSpace(t[k:]) == ""
}

// refDef handles a reference definition starting at line start i
// ("[id]: target"): an unsafe target is replaced by "#". It returns where
// the definition's target ends, or 0 when there is none here.
func (s *sanitizer) refDef(i int) int {
	src := s.src
	j := i
	for j < len(src) && j-i < 3 && src[j] == ' ' {
		j++
	}
	if j >= len(src) || src[j] != '[' {
		return 0
	}
	k := j + 1
	for k < len(src) && src[k] != ']' && src[k] != '\n' {
		if src[k] == '\\' {
			k++
		}
		k++
	}
	if k+1 >= len(src) || src[k] != ']' || src[k+1] != ':' {
		return 0
	}
	start, stop, ok := destination(src, k+2)
	if !ok {
		return 0
	}
	s.out = append(s.out, src[i:start]...)
	if SafeLink(strings.Trim(src[start:stop], "<>")) {
		s.out = append(s.out, src[start:stop]...)
	} else {
		s.out = append(s.out, '#')
	}
	return stop
}

// destination parses a link destination after optional spaces and at most
// one line break from at: "<...>" or a run without spaces whose
// parentheses balance. It returns its bounds.
func destination(src string, at int) (int, int, bool) {
	i := at
	newline := false
	for i < len(src) && (src[i] == ' ' || src[i] == '\t' || src[i] == '\n' && !newline) {
		if src[i] == '\n' {
			newline = true
		}
		i++
	}
	start := i
	if i < len(src) && src[i] == '<' {
		for j := i + 1; j < len(src); j++ {
			switch src[j] {
			case '\\':
				j++
			case '>':
				return start, j + 1, true
			case '\n', '<':
				return 0, 0, false
			}
		}
		return 0, 0, false
	}
	depth := 0
	j := i
	for ; j < len(src); j++ {
		c := src[j]
		if c == '\\' && j+1 < len(src) {
			j++
			continue
		}
		if c <= ' ' {
			break
		}
		if c == '(' {
			depth++
		}
		if c == ')' {
			if depth == 0 {
				break
			}
			depth--
		}
	}
	return start, j, j > start
}

// inline copies src[i:end] (one line) escaping raw HTML and defusing
// unsafe links, and returns where it stopped (end, or past a code span
// or link that ran onto later lines).
func (s *sanitizer) inline(i, end int) int {
	src := s.src
	for i < end {
		c := src[i]
		switch c {
		case '\\':
			if i+1 < len(src) && isPunct(src[i+1]) {
				s.out = append(s.out, c, src[i+1])
				i += 2
				continue
			}
		case '`':
			n := 1
			for i+n < len(src) && src[i+n] == '`' {
				n++
			}
			if close := codeClose(src[:end], i+n, n); close > 0 {
				s.out = append(s.out, src[i:close]...)
				i = close
				continue
			}
			s.out = append(s.out, src[i:i+n]...)
			i += n
			continue
		case '[':
			s.brackets = append(s.brackets, bracket{at: len(s.out), image: i > 0 && src[i-1] == '!' && len(s.out) > 0 && s.out[len(s.out)-1] == '!'})
		case ']':
			if len(s.brackets) == 0 {
				break
			}
			b := s.brackets[len(s.brackets)-1]
			s.brackets = s.brackets[:len(s.brackets)-1]
			if i+1 >= len(src) || src[i+1] != '(' {
				break
			}
			start, stop, ok := destination(src, i+2)
			if !ok {
				break
			}
			target := src[start:stop]
			if strings.HasPrefix(target, "<") {
				target = strings.Trim(target, "<>")
			}
			if SafeLink(target) {
				break
			}
			// Keep the label, drop the link: remove '[' (and an image's
			// '!') and skip "](target" up to the closing parenthesis.
			from := b.at
			if b.image {
				from--
			}
			label := append([]byte(nil), s.out[b.at+1:]...)
			s.out = append(s.out[:from], label...)
			j := stop
			for j < len(src) && src[j] != ')' && src[j] != '\n' {
				j++
			}
			if j < len(src) && src[j] == ')' {
				j++
			}
			if j > end {
				end = lineEnd(src, j)
			}
			i = j
			continue
		case '<':
			if n := autolink(src[i:]); n > 0 {
				s.out = append(s.out, src[i:i+n]...)
				i += n
				continue
			}
			if i+1 < len(src) && (isLetter(src[i+1]) || src[i+1] == '/' || src[i+1] == '!' || src[i+1] == '?') {
				s.out = append(s.out, "&lt;"...)
				i++
				continue
			}
		}
		s.out = append(s.out, c)
		i++
	}
	return i
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func lineEnd(src string, at int) int {
	if k := strings.IndexByte(src[at:], '\n'); k >= 0 {
		return at + k
	}
	return len(src)
}

// codeClose finds the run of exactly n backticks closing a code span opened
// before at, on the same line and before a table cell's '|' (a span that
// would cross either is not trusted to render as code); it returns the index
// after it, or 0.
func codeClose(line string, at, n int) int {
	for j := at; j < len(line); j++ {
		switch line[j] {
		case '|':
			return 0
		case '`':
			k := j
			for k < len(line) && line[k] == '`' {
				k++
			}
			if k-j == n {
				return k
			}
			j = k - 1
		}
	}
	return 0
}

// autolink returns the length of a safe autolink ("<https://...>",
// "<a@b.c>") at the start of s, or 0.
func autolink(s string) int {
	end := strings.IndexAny(s[1:], "<> \t\n")
	if end < 0 || s[1+end] != '>' || end == 0 {
		return 0
	}
	body := s[1 : 1+end]
	if colon := strings.IndexByte(body, ':'); colon > 0 {
		if !SafeLink(body) {
			return 0
		}
		return end + 2
	}
	if at := strings.IndexByte(body, '@'); at > 0 && at < len(body)-1 && !strings.ContainsAny(body, `\`) {
		return end + 2
	}
	return 0
}
