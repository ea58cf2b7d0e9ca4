// Package chunk splits Markdown documents into retrieval-sized pieces.
//
// Retrieval quality depends on chunks that are small enough to embed well yet
// keep their context, so Split cuts on structure first (headings, then
// blank-line separated blocks), then on sentence boundaries (including the CJK
// full stops 。！？；), and only as a last resort inside a sentence, always on a
// rune boundary. Each piece carries its heading path ("Install > Linux") so the
// caller can show or embed it as context without repeating the heading text in
// every chunk.
package chunk

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/lorekb/lore/internal/analyze"
)

// DefaultSize is the target maximum number of runes per piece when
// Options.Size is zero: about 200 English words, which embeds well with common
// embedding models and still answers a question on its own.
const DefaultSize = 800

// DefaultOverlap is the number of runes of the previous piece repeated at the
// start of the next one when Options.Overlap is zero, so that a sentence cut in
// two by a chunk boundary is still found by either half.
const DefaultOverlap = 100

// Options tunes Split. The zero value selects the defaults, so callers only set
// what they mean to change.
type Options struct {
	// Size is the maximum number of runes in a piece's Text, overlap included
	// (DefaultSize when zero or negative).
	Size int
	// Overlap is the number of runes from the end of the previous piece of the
	// same section prefixed to the next piece (DefaultOverlap when zero; a
	// negative value disables overlap). It is capped at Size/2 so that every
	// piece still makes progress through the text.
	Overlap int
}

// Piece is one chunk of a document, in document order.
type Piece struct {
	// Index is the piece's position in the document, from 0, so chunk IDs are
	// stable for the same input and options.
	Index int
	// Heading is the heading path of the section the piece comes from, outer
	// heading first, joined with " > " (empty before the first heading).
	Heading string
	// Text is the piece's content: trimmed, valid UTF-8, never empty, and at
	// most Options.Size runes.
	Text string
}

// headingSep joins the levels of a heading path.
const headingSep = " > "

// SplitHeading cuts a heading path into its parents and its last heading
// ("A > B > C" gives "A > B" and "C").
func SplitHeading(path string) (parents, leaf string) {
	if i := strings.LastIndex(path, headingSep); i >= 0 {
		return path[:i], path[i+len(headingSep):]
	}
	return "", path
}

// Split cuts markdown into pieces of at most opt.Size runes. It is
// deterministic, never cuts inside a UTF-8 sequence (invalid input bytes are
// replaced by U+FFFD), keeps fenced code blocks whole where they fit and never
// treats a '#' line inside a fence as a heading, and returns no pieces for
// empty or whitespace-only input.
func Split(markdown string, opt Options) []Piece {
	size, overlap, budget := limits(opt)
	if !utf8.ValidString(markdown) {
		markdown = strings.ToValidUTF8(markdown, "\uFFFD")
	}
	if strings.Contains(markdown, "\r") {
		markdown = strings.ReplaceAll(markdown, "\r\n", "\n")
		markdown = strings.ReplaceAll(markdown, "\r", "\n")
	}
	var pieces []Piece
	for _, sec := range parse(markdown) {
		var units []unit
		for _, b := range sec.blocks {
			units = b.units(units, budget)
		}
		for _, text := range pack(units, size, overlap, budget) {
			pieces = append(pieces, Piece{Index: len(pieces), Heading: sec.heading, Text: text})
		}
	}
	return pieces
}

// limits resolves the options into the piece size, the overlap and the
// budget for a piece's own (non-overlap) content.
func limits(opt Options) (size, overlap, budget int) {
	size = opt.Size
	if size <= 0 {
		size = DefaultSize
	}
	overlap = opt.Overlap
	switch {
	case overlap == 0:
		overlap = DefaultOverlap
	case overlap < 0:
		overlap = 0
	}
	if overlap > size/2 {
		overlap = size / 2
	}
	// Room for the overlap plus a separator of up to two runes ("\n\n").
	budget = size - overlap - 2
	if overlap == 0 || budget < 1 {
		overlap, budget = 0, size
	}
	return size, overlap, budget
}

// unit is an indivisible run of text (at most the budget in runes) that pack
// places whole into a piece.
type unit struct {
	text string // trimmed, non-empty
	sep  string // separator before it when it follows another unit in a piece
	cut  bool   // it ends inside a sentence (hardSplit cut a longer one)
}

// pack greedily fills pieces with units. The first piece of a section may use
// the whole size; later ones keep room for the overlap taken from the piece
// before them.
func pack(units []unit, size, overlap, budget int) []string {
	var (
		out   []string
		b     strings.Builder
		n     int // runes in b
		first unit
		count int  // units in b
		cut   bool // the last unit in b ends inside a sentence
		// prevCut: the piece before ends inside a sentence
		prevCut bool
	)
	flush := func() {
		if count == 0 {
			return
		}
		body := b.String()
		if len(out) > 0 && overlap > 0 {
			if tail := overlapTail(out[len(out)-1], overlap, prevCut); tail != "" {
				body = tail + first.sep + body
			}
		}
		out = append(out, body)
		b.Reset()
		n, count, prevCut = 0, 0, cut
	}
	for _, u := range units {
		un := utf8.RuneCountInString(u.text)
		capacity := budget
		if len(out) == 0 {
			capacity = size
		}
		if count > 0 && n+utf8.RuneCountInString(u.sep)+un > capacity {
			flush()
		}
		if count > 0 {
			b.WriteString(u.sep)
			n += utf8.RuneCountInString(u.sep)
		} else {
			first = u
		}
		b.WriteString(u.text)
		n += un
		count++
		cut = u.cut
	}
	flush()
	return out
}

// overlapTail returns at most n runes from the end of s: its last whole
// sentences that fit. When the last sentence alone is longer than n, the tail
// is a fragment that starts mid-sentence (at a word boundary); it is kept
// only when s ends inside a sentence (midSentence: a sentence longer than a
// piece was cut there), where it lets either half be found. After a whole
// sentence it would be a clause a reader cannot use (the chat quoted such
// fragments), so the piece then starts without overlap.
func overlapTail(s string, n int, midSentence bool) string {
	start := len(s)
	for i := 0; i < n && start > 0; i++ {
		_, w := utf8.DecodeLastRuneInString(s[:start])
		start -= w
	}
	if start == 0 {
		return strings.TrimSpace(s)
	}
	before, _ := utf8.DecodeLastRuneInString(s[:start])
	at, _ := utf8.DecodeRuneInString(s[start:])
	if isWordRune(before) && isWordRune(at) {
		// Mid-word: skip to the next space if there is one in the tail.
		if sp := strings.IndexFunc(s[start:], unicode.IsSpace); sp >= 0 {
			start += sp
		}
	}
	if !startsSentence(s, start) {
		if e := sentenceEnd(s[start:]); e > 0 && start+e < len(s) {
			start += e
		} else if !midSentence {
			return ""
		}
	}
	start = cleanStart(s, start)
	return strings.TrimSpace(s[outsideFence(s, start):])
}

// outsideFence moves start past the fenced code block it falls in (fence
// lines included), or returns it as it is outside one. An overlap that
// opened inside a block would begin with the block's closing fence, which
// a reader of the piece (the chunker's own parse, the chat's answer) takes
// for an opening one: the piece's code would read as prose and its prose
// as code.
func outsideFence(s string, start int) int {
	var (
		ch      byte
		n       int
		in, hit bool // in a block; start is in this block
	)
	for off := 0; off < len(s); {
		next := len(s)
		if i := strings.IndexByte(s[off:], '\n'); i >= 0 {
			next = off + i + 1
		}
		line := s[off:next]
		here := start >= off && start < next
		switch {
		case in && closesFence(line, ch, n):
			in = false
			if hit || here {
				return next
			}
		case in:
			hit = hit || here
		default:
			if c, k, ok := openFence(line); ok {
				ch, n, in, hit = c, k, true, here
			} else if here {
				return start
			}
		}
		off = next
	}
	if in && hit {
		return len(s)
	}
	return start
}

// sentenceEnd returns the byte offset just after the first sentence end in s
// (the same boundaries splitSentences uses), or -1.
func sentenceEnd(s string) int {
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		switch r {
		case '\n':
			if hardBreak(s, i) {
				return i + w
			}
		case '.', '!', '?':
			if j := skipClosers(s, i+w); j < len(s) {
				if nr, _ := utf8.DecodeRuneInString(s[j:]); unicode.IsSpace(nr) {
					return j
				}
			}
		case '。', '！', '？', '；', '…':
			return skipClosers(s, i+w)
		}
		i += w
	}
	return -1
}

// isWordRune reports whether r belongs to a space-delimited word (CJK
// ideographs and kana are not, since any rune boundary between them is fine).
func isWordRune(r rune) bool {
	return (unicode.IsLetter(r) || unicode.IsDigit(r)) && !analyze.IsCJK(r)
}

// section is the run of blocks under one heading path.
type section struct {
	heading string
	blocks  []block
}

// block is a paragraph-level unit of Markdown: a paragraph, list, table or a
// fenced code block.
type block struct {
	text string
	// For fenced blocks: the fence lines and the lines between them, so that
	// an oversize block can be cut into parts that are each fenced again.
	fenced     bool
	open, shut string
	inner      []string
}

// units appends the block's units to dst, cutting it when it exceeds budget.
func (b block) units(dst []unit, budget int) []unit {
	t := strings.TrimSpace(b.text)
	if t == "" {
		return dst
	}
	if utf8.RuneCountInString(t) <= budget {
		return append(dst, unit{text: t, sep: "\n\n"})
	}
	if b.fenced {
		if parts, ok := b.splitFenced(budget); ok {
			for _, p := range parts {
				dst = append(dst, unit{text: p, sep: "\n\n"})
			}
			return dst
		}
	}
	n0 := len(dst)
	dst = splitSentences(dst, t, budget)
	if len(dst) > n0 {
		dst[n0].sep = "\n\n"
	}
	return dst
}

// splitFenced cuts an oversize fenced block between lines, wrapping every
// part in the original fences so each stays a valid code block.
func (b block) splitFenced(budget int) ([]string, bool) {
	open := strings.TrimSpace(b.open)
	shut := strings.TrimSpace(b.shut)
	wrap := utf8.RuneCountInString(open) + 1
	if shut != "" {
		wrap += utf8.RuneCountInString(shut) + 1
	}
	room := budget - wrap
	if room < 16 {
		return nil, false
	}
	var (
		parts []string
		cur   []string
		n     int
	)
	emit := func() {
		body := strings.Trim(strings.Join(cur, "\n"), "\n")
		cur, n = cur[:0], 0
		if strings.TrimSpace(body) == "" {
			return
		}
		p := open + "\n" + body
		if shut != "" {
			p += "\n" + shut
		}
		parts = append(parts, p)
	}
	for _, line := range b.inner {
		line = strings.TrimRight(line, " \t")
		for _, piece := range hardSplit(nil, line, room) {
			ln := utf8.RuneCountInString(piece.text)
			if len(cur) > 0 && n+1+ln > room {
				emit()
			}
			if len(cur) > 0 {
				n++
			}
			cur = append(cur, piece.text)
			n += ln
		}
		if line == "" {
			if len(cur) > 0 && n+1 <= room {
				cur = append(cur, "")
				n++
			}
		}
	}
	emit()
	return parts, len(parts) > 0
}

// splitSentences appends the sentences of t as units, cutting sentences longer
// than budget with hardSplit. Sentences end after . ! ? followed by space,
// after the CJK marks 。！？； (no space needed), and at line breaks that are
// not a paragraph's wrapping (hardBreak).
func splitSentences(dst []unit, t string, budget int) []unit {
	start := 0
	trailing := "" // whitespace that ended the previous sentence
	add := func(end int) {
		seg := t[start:end]
		body := strings.TrimLeftFunc(seg, unicode.IsSpace)
		lead := seg[:len(seg)-len(body)]
		trimmed := strings.TrimRightFunc(body, unicode.IsSpace)
		if trimmed == "" {
			trailing += seg
			return
		}
		n0 := len(dst)
		dst = hardSplit(dst, trimmed, budget)
		if len(dst) > n0 {
			dst[n0].sep = joinSep(trailing + lead)
		}
		trailing = body[len(trimmed):]
	}
	for i := 0; i < len(t); {
		r, w := utf8.DecodeRuneInString(t[i:])
		end := -1
		switch r {
		case '\n':
			if hardBreak(t, i) {
				end = i + w
			}
		case '.', '!', '?':
			if j := skipClosers(t, i+w); j < len(t) {
				if nr, _ := utf8.DecodeRuneInString(t[j:]); unicode.IsSpace(nr) {
					end = j
				}
			}
		case '。', '！', '？', '；', '…':
			end = skipClosers(t, i+w)
		}
		if end > 0 {
			add(end)
			start, i = end, end
			continue
		}
		i += w
	}
	if start < len(t) {
		add(len(t))
	}
	return dst
}

// hardBreak reports whether the line break at t[i] ends a unit: the next
// line is blank or starts a list item, quote, heading, table row or fence,
// or the line it ends is a table row or a Markdown hard break (two trailing
// spaces, a backslash). Other breaks only wrap a paragraph's sentence (the
// reader sees one line), so a piece cut there would start mid-sentence.
func hardBreak(t string, i int) bool {
	line := t[strings.LastIndexByte(t[:i], '\n')+1 : i]
	if strings.HasSuffix(line, "  ") || strings.HasSuffix(line, "\\") || strings.HasPrefix(strings.TrimSpace(line), "|") {
		return true
	}
	next := t[i+1:]
	if j := strings.IndexByte(next, '\n'); j >= 0 {
		next = next[:j]
	}
	// The block starts parse knows: list items, quotes, headings, fences.
	if t := strings.TrimSpace(next); t == "" || t[0] == '|' || startsContainer(next) {
		return true
	}
	_, _, heading := atxHeading(next)
	_, _, fence := openFence(next)
	return heading || fence
}

// startsSentence reports whether s[i:] starts a sentence: what comes before
// it ends one, or a unit (hardBreak).
func startsSentence(s string, i int) bool {
	before := strings.TrimRightFunc(s[:i], func(r rune) bool { return r == ' ' || r == '\t' })
	if strings.HasSuffix(before, "\n") {
		return hardBreak(s, len(before)-1)
	}
	return endsSentence(strings.TrimRightFunc(before, unicode.IsSpace))
}

// endsSentence reports whether s ends a sentence: its last rune, closing
// quotes and brackets aside, is a sentence's final punctuation.
func endsSentence(s string) bool {
	for s != "" {
		r, w := utf8.DecodeLastRuneInString(s)
		switch r {
		case '"', '\'', ')', ']', '”', '’', '」', '』', '）', '】', '》':
			s = s[:len(s)-w]
		case '.', '!', '?', '。', '！', '？', '…':
			return true
		default:
			return false
		}
	}
	return false
}

// skipClosers advances past closing quotes and brackets after a full stop, so
// they stay with their sentence.
func skipClosers(t string, i int) int {
	for i < len(t) {
		r, w := utf8.DecodeRuneInString(t[i:])
		switch r {
		case '"', '\'', ')', ']', '”', '’', '」', '』', '）', '】', '》':
			i += w
		default:
			return i
		}
	}
	return i
}

// joinSep chooses how two parts of the same block are rejoined in a piece,
// from the whitespace that separated them.
func joinSep(ws string) string {
	switch {
	case strings.Contains(ws, "\n"):
		return "\n"
	case ws != "":
		return " "
	}
	return ""
}

// hardSplit appends s (trimmed) as units of at most budget runes. Each cut
// goes at the last space in the second half of the window when there is one,
// and otherwise at a rune boundary that does not separate a base character
// from a combining mark, variation selector or zero-width joiner.
func hardSplit(dst []unit, s string, budget int) []unit {
	sep := ""
	n := utf8.RuneCountInString(s)
	for s != "" {
		if n <= budget {
			return append(dst, unit{text: s, sep: sep})
		}
		cut := 0
		for i := 0; i < budget; i++ {
			_, w := utf8.DecodeRuneInString(s[cut:])
			cut += w
		}
		if sp := strings.LastIndexFunc(s[:cut], unicode.IsSpace); sp > 0 && utf8.RuneCountInString(s[:sp]) >= budget/2 {
			cut = sp
		} else {
			cut = cleanCut(s, cut)
		}
		part := strings.TrimRightFunc(s[:cut], unicode.IsSpace)
		rest := strings.TrimLeftFunc(s[cut:], unicode.IsSpace)
		dst = append(dst, unit{text: part, sep: sep, cut: true})
		sep = joinSep(s[len(part) : len(s)-len(rest)])
		n -= utf8.RuneCountInString(s[:len(s)-len(rest)])
		s = rest
	}
	return dst
}

// cleanCut moves a cut at byte offset i of s back by at most a few runes so
// that it does not strand a combining mark, variation selector, emoji skin
// tone or zero-width joiner from the rune it modifies. It returns i unchanged
// when no such position is near, since some cut must be made.
func cleanCut(s string, i int) int {
	j := i
	for step := 0; step <= 8 && j > 0 && j < len(s); step++ {
		r, _ := utf8.DecodeRuneInString(s[j:])
		prev, pw := utf8.DecodeLastRuneInString(s[:j])
		if !isJoining(r) && prev != '\u200d' {
			return j
		}
		j -= pw
	}
	return i
}

// cleanStart moves a start offset i of s forward past runes that attach to the
// rune before them, so an overlap never begins with a dangling mark.
func cleanStart(s string, i int) int {
	for step := 0; step <= 8 && i < len(s); step++ {
		r, w := utf8.DecodeRuneInString(s[i:])
		prev, _ := utf8.DecodeLastRuneInString(s[:i])
		if i == 0 || (!isJoining(r) && prev != '\u200d') {
			return i
		}
		i += w
	}
	return i
}

// isJoining reports whether r attaches to the rune before it.
func isJoining(r rune) bool {
	switch {
	case r == '\u200d', // zero-width joiner
		r >= 0xFE00 && r <= 0xFE0F,   // variation selectors
		r >= 0x1F3FB && r <= 0x1F3FF, // emoji skin tones
		r >= 0xE0020 && r <= 0xE007F: // emoji tag sequences
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Mc)
}

// proseEnd finds the end of a sentence: what a paragraph of prose has and
// a breadcrumb ("Docs > Version 2.4 > Modules") or a bar of links does not.
var proseEnd = regexp.MustCompile(`[.!?](\s|$)|[。！？]`)

// Lead bounds: a lead is prose (a sentence, not a label such as
// "Stability: 2 - Stable" or "Source Code: lib/path.js"), cut to about the
// length of an abstract.
const (
	leadMinWords = 8
	leadMaxRunes = 300
	// leadWithin bounds how far into a document its lead is looked for (a
	// paragraph further in opens no page), so vectorizing a large
	// document does not parse it twice.
	leadWithin = 16 << 10
)

// Lead returns the document's first paragraph of prose (at most
// leadMaxRunes runes, cut at a word), or "" when it has none. A page's
// opening paragraph says what the page is about, which a chunk from deep
// inside it seldom does.
func Lead(markdown string) string {
	if len(markdown) > leadWithin {
		// Whole lines only, so a cut never splits a rune or a heading.
		if i := strings.LastIndexByte(markdown[:leadWithin], '\n'); i > 0 {
			markdown = markdown[:i]
		} else {
			markdown = strings.ToValidUTF8(markdown[:leadWithin], "")
		}
	}
	for _, sec := range parse(markdown) {
		for _, b := range sec.blocks {
			if b.fenced || strings.HasPrefix(strings.TrimSpace(b.text), "|") {
				continue // code and tables are not prose
			}
			if len(analyze.Words(b.text)) < leadMinWords || !proseEnd.MatchString(b.text) {
				continue // a label, a breadcrumb or a navigation bar: no sentence
			}
			text := strings.Join(strings.Fields(b.text), " ")
			if utf8.RuneCountInString(text) <= leadMaxRunes {
				return text
			}
			r := []rune(text)[:leadMaxRunes]
			if i := strings.LastIndexFunc(string(r), unicode.IsSpace); i > leadMaxRunes/2 {
				return string(r)[:i]
			}
			return string(r)
		}
	}
	return ""
}

// EmbedText is what gets embedded for a chunk: the document's title and
// lead (Lead) and the chunk's heading path give the fragment its
// context, so a passage from deep inside a page still carries what the page
// is about. The first chunk holds the lead already.
func EmbedText(title, lead string, p Piece) string {
	var b strings.Builder
	b.Grow(len(title) + len(lead) + len(p.Heading) + len(p.Text) + 3)
	b.WriteString(title)
	if lead != "" && !strings.Contains(strings.Join(strings.Fields(p.Text), " "), lead) {
		b.WriteString("\n")
		b.WriteString(lead)
	}
	if p.Heading != "" {
		b.WriteString("\n")
		b.WriteString(p.Heading)
	}
	b.WriteString("\n")
	b.WriteString(p.Text)
	return b.String()
}
