package chunk

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// checkPieces asserts the invariants every Split result must hold.
func checkPieces(t testing.TB, pieces []Piece, size int) {
	t.Helper()
	for i, p := range pieces {
		if p.Index != i {
			t.Fatalf("piece %d has Index %d", i, p.Index)
		}
		if !utf8.ValidString(p.Text) || !utf8.ValidString(p.Heading) {
			t.Fatalf("piece %d is not valid UTF-8: %q", i, p.Text)
		}
		if strings.TrimSpace(p.Text) == "" {
			t.Fatalf("piece %d is empty", i)
		}
		if p.Text != strings.TrimSpace(p.Text) {
			t.Fatalf("piece %d is not trimmed: %q", i, p.Text)
		}
		if n := utf8.RuneCountInString(p.Text); n > size {
			t.Fatalf("piece %d has %d runes, more than %d: %q", i, n, size, p.Text)
		}
	}
}

func TestEmptyInput(t *testing.T) {
	for _, in := range []string{"", " ", "\n\n\t \r\n", "\u00a0\u3000"} {
		if got := Split(in, Options{}); len(got) != 0 {
			t.Errorf("Split(%q) = %d pieces, want 0: %+v", in, len(got), got)
		}
	}
}

func TestHeadingPath(t *testing.T) {
	doc := `Preamble text.

# Install

Intro to installing.

## Linux ##

Use apt.

### Debian

Use apt-get.

## macOS

Use brew.

# Usage

Run it.

#### Deep

Skipped levels are fine.

Setext Title
============

Under setext.

Sub
---

Under sub.
`
	got := Split(doc, Options{})
	checkPieces(t, got, DefaultSize)
	want := []struct{ heading, text string }{
		{"", "Preamble text."},
		{"Install", "Intro to installing."},
		{"Install > Linux", "Use apt."},
		{"Install > Linux > Debian", "Use apt-get."},
		{"Install > macOS", "Use brew."},
		{"Usage", "Run it."},
		{"Usage > Deep", "Skipped levels are fine."},
		{"Setext Title", "Under setext."},
		{"Setext Title > Sub", "Under sub."},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d pieces, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].Heading != w.heading || got[i].Text != w.text {
			t.Errorf("piece %d = {%q, %q}, want {%q, %q}", i, got[i].Heading, got[i].Text, w.heading, w.text)
		}
	}
}

func TestNotHeadings(t *testing.T) {
	doc := "#hashtag is not a heading\n    # indented code is not one\n####### seven is not one\n\n- item\n---\n\nC# is a language"
	got := Split(doc, Options{})
	checkPieces(t, got, DefaultSize)
	for _, p := range got {
		if p.Heading != "" {
			t.Errorf("unexpected heading %q", p.Heading)
		}
	}
	all := joinTexts(got)
	for _, s := range []string{"#hashtag", "# indented code", "####### seven", "- item", "C# is a language"} {
		if !strings.Contains(all, s) {
			t.Errorf("lost %q from %q", s, all)
		}
	}
}

func joinTexts(ps []Piece) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.Text)
		b.WriteString("\n")
	}
	return b.String()
}

// words returns the whitespace-separated words of s.
func words(s string) []string { return strings.Fields(s) }

func TestSizesRespectedAndNothingLost(t *testing.T) {
	var b strings.Builder
	b.WriteString("# Guide\n\n")
	for p := 0; p < 30; p++ {
		for s := 0; s < 2+p%7; s++ {
			fmt.Fprintf(&b, "Paragraph %d sentence %d talks about configuring the widget number %d carefully. ", p, s, p*10+s)
		}
		b.WriteString("\n\n")
	}
	// One paragraph far larger than a piece.
	for s := 0; s < 60; s++ {
		fmt.Fprintf(&b, "Huge paragraph sentence %d explains something at length! ", s)
	}
	doc := b.String()
	for _, size := range []int{80, 200, 800} {
		got := Split(doc, Options{Size: size, Overlap: -1})
		checkPieces(t, got, size)
		if len(got) < 2 {
			t.Fatalf("size %d: only %d pieces", size, len(got))
		}
		// Without overlap, the pieces hold exactly the document's words in order.
		var out []string
		for _, p := range got {
			out = append(out, words(p.Text)...)
		}
		in := words(strings.TrimPrefix(doc, "# Guide\n\n"))
		if !reflect.DeepEqual(out, in) {
			t.Fatalf("size %d: words differ: got %d words, want %d", size, len(out), len(in))
		}
		// Pieces cut inside a paragraph end at sentence boundaries when
		// sentences fit.
		for i, p := range got[:len(got)-1] {
			if r, _ := utf8.DecodeLastRuneInString(p.Text); r != '.' && r != '!' {
				t.Errorf("size %d: piece %d does not end a sentence: %q", size, i, p.Text)
			}
		}
	}
}

func TestParagraphsPackedTogether(t *testing.T) {
	doc := "One.\n\nTwo.\n\nThree."
	got := Split(doc, Options{})
	if len(got) != 1 || got[0].Text != "One.\n\nTwo.\n\nThree." {
		t.Fatalf("got %+v", got)
	}
}

func TestCJKWithoutSpaces(t *testing.T) {
	sentence := "这是一个没有空格的中文句子用于测试分块器是否能正确处理汉字。"
	doc := "# 安装\n\n" + strings.Repeat(sentence, 40)
	size := 100
	got := Split(doc, Options{Size: size, Overlap: -1})
	checkPieces(t, got, size)
	total := utf8.RuneCountInString(strings.Repeat(sentence, 40))
	if len(got) < total/size {
		t.Fatalf("got %d pieces for %d runes", len(got), total)
	}
	var b strings.Builder
	for _, p := range got {
		if p.Heading != "安装" {
			t.Errorf("heading %q", p.Heading)
		}
		// Sentences are shorter than the budget, so every cut is after 。
		if !strings.HasSuffix(p.Text, "。") {
			t.Errorf("piece does not end at a CJK full stop: %q", p.Text)
		}
		b.WriteString(p.Text)
	}
	if b.String() != strings.Repeat(sentence, 40) {
		t.Fatal("CJK text not preserved exactly")
	}
}

func TestCJKPunctuationBoundaries(t *testing.T) {
	doc := strings.Repeat("甲乙丙丁戊己庚辛！", 5) + strings.Repeat("子丑寅卯辰巳午未？", 5) + strings.Repeat("一二三四五六七八；", 5)
	got := Split(doc, Options{Size: 30, Overlap: -1})
	checkPieces(t, got, 30)
	for _, p := range got {
		r, _ := utf8.DecodeLastRuneInString(p.Text)
		if r != '！' && r != '？' && r != '；' {
			t.Errorf("piece ends with %q: %q", r, p.Text)
		}
	}
}

func TestRuneFallbackNeverCutsRunes(t *testing.T) {
	// No spaces and no punctuation at all: only rune cuts are possible.
	han := strings.Repeat("漢字かなカナ한국어", 200)
	emoji := strings.Repeat("👩‍👩‍👧‍👦👍🏽é🇯🇵", 100)
	for _, doc := range []string{han, emoji, han + emoji} {
		for _, size := range []int{7, 33, 100} {
			got := Split(doc, Options{Size: size, Overlap: -1})
			checkPieces(t, got, size)
			var b strings.Builder
			for _, p := range got {
				b.WriteString(p.Text)
			}
			if b.String() != doc {
				t.Fatalf("size %d: text not preserved", size)
			}
		}
	}
}

func TestEmojiSequencesKeptWhole(t *testing.T) {
	family := "👩‍👩‍👧‍👦" // 7 runes joined by ZWJ
	doc := strings.Repeat(family, 20)
	got := Split(doc, Options{Size: 10, Overlap: -1})
	checkPieces(t, got, 10)
	for _, p := range got {
		//lint:ignore SA1024 the cutset is the sequence's runes, repeats and all
		if strings.Trim(p.Text, family) != "" {
			t.Errorf("piece splits a ZWJ sequence: %q", p.Text)
		}
	}
}

func TestInvalidUTF8Repaired(t *testing.T) {
	doc := "caf\xe9 au lait\xff\xfe and more text"
	got := Split(doc, Options{})
	checkPieces(t, got, DefaultSize)
	if len(got) != 1 || !strings.Contains(got[0].Text, "\uFFFD") {
		t.Fatalf("got %+v", got)
	}
}

func TestOverlap(t *testing.T) {
	var b strings.Builder
	b.WriteString("# First\n\n")
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, "Sentence number %d of the first section. ", i)
	}
	b.WriteString("\n\n# Second\n\n")
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, "Line %d of section two. ", i)
	}
	size, overlap := 200, 50
	got := Split(b.String(), Options{Size: size, Overlap: overlap})
	checkPieces(t, got, size)
	noOverlap := Split(b.String(), Options{Size: size, Overlap: -1})
	overlapped := 0
	for i := 1; i < len(got); i++ {
		prev, cur := got[i-1], got[i]
		if prev.Heading != cur.Heading {
			// A new section starts fresh: its first piece has no overlap.
			if !strings.HasPrefix(cur.Text, "Line 0 ") {
				t.Errorf("piece %d starts a section with overlap: %q", i, cur.Text)
			}
			continue
		}
		// The piece starts with a non-empty suffix of the previous piece of at
		// most overlap runes, beginning at a word boundary.
		found := false
		for k := 1; k <= overlap && k <= utf8.RuneCountInString(prev.Text); k++ {
			tail := lastRunes(prev.Text, k)
			if strings.HasPrefix(cur.Text, tail) && (tail[0] != ' ') && strings.HasPrefix(cur.Text[len(tail):], " ") {
				found = true
			}
		}
		if !found {
			t.Errorf("piece %d does not start with the tail of piece %d:\nprev: %q\ncur:  %q", i, i-1, prev.Text, cur.Text)
		}
		overlapped++
	}
	if overlapped < 4 {
		t.Fatalf("only %d overlapped pieces", overlapped)
	}
	if len(got) < len(noOverlap) {
		t.Errorf("overlap produced fewer pieces (%d) than none (%d)", len(got), len(noOverlap))
	}
}

func lastRunes(s string, n int) string {
	i := len(s)
	for ; n > 0 && i > 0; n-- {
		_, w := utf8.DecodeLastRuneInString(s[:i])
		i -= w
	}
	return s[i:]
}

func TestOverlapDefaultsAndCJK(t *testing.T) {
	doc := strings.Repeat("这是一个测试句子。", 300)
	got := Split(doc, Options{}) // defaults: 800 runes, 100 overlap
	checkPieces(t, got, DefaultSize)
	if len(got) < 3 {
		t.Fatalf("got %d pieces", len(got))
	}
	for i := 1; i < len(got); i++ {
		// The overlap is the longest whole-sentence tail of at most 100 runes:
		// 11 sentences of 9 runes.
		tail := lastRunes(got[i-1].Text, 99)
		if !strings.HasPrefix(got[i].Text, tail) || !strings.HasPrefix(tail, "这是") {
			t.Errorf("piece %d does not start with the whole-sentence tail %q of the previous one: %q", i, tail, got[i].Text)
		}
	}
}

func TestCodeFences(t *testing.T) {
	doc := "# Setup\n\nRun this:\n\n```bash\n# not a heading\necho hi\n\n## still code\n```\n\nAfter the code.\n\n~~~\n# tilde fence\n~~~\n\n## Next\n\nDone."
	got := Split(doc, Options{})
	checkPieces(t, got, DefaultSize)
	if len(got) != 2 {
		t.Fatalf("got %d pieces: %+v", len(got), got)
	}
	if got[0].Heading != "Setup" || got[1].Heading != "Setup > Next" {
		t.Fatalf("headings %q, %q", got[0].Heading, got[1].Heading)
	}
	for _, s := range []string{"```bash\n# not a heading\necho hi\n\n## still code\n```", "~~~\n# tilde fence\n~~~", "After the code."} {
		if !strings.Contains(got[0].Text, s) {
			t.Errorf("piece 0 lacks %q: %q", s, got[0].Text)
		}
	}
}

func TestUnclosedFenceRunsToEnd(t *testing.T) {
	doc := "# A\n\n```\n# B\ncode"
	got := Split(doc, Options{})
	if len(got) != 1 || got[0].Heading != "A" || !strings.Contains(got[0].Text, "# B") {
		t.Fatalf("got %+v", got)
	}
}

func TestOversizeCodeBlockStaysFenced(t *testing.T) {
	var b strings.Builder
	b.WriteString("```go\n")
	for i := 0; i < 50; i++ {
		fmt.Fprintf(&b, "\tfmt.Println(\"line %d\")\n", i)
	}
	b.WriteString("```\n")
	size := 200
	got := Split(b.String(), Options{Size: size, Overlap: -1})
	checkPieces(t, got, size)
	if len(got) < 3 {
		t.Fatalf("got %d pieces", len(got))
	}
	n := 0
	for _, p := range got {
		if !strings.HasPrefix(p.Text, "```go\n") || !strings.HasSuffix(p.Text, "\n```") {
			t.Errorf("part not fenced: %q", p.Text)
		}
		n += strings.Count(p.Text, "fmt.Println")
		if strings.Contains(p.Text, "\n\tfmt") == false {
			t.Errorf("indentation lost: %q", p.Text)
		}
	}
	if n != 50 {
		t.Errorf("got %d code lines, want 50", n)
	}
}

func TestFrontMatter(t *testing.T) {
	doc := "---\ntitle: Hello\ntags: [a]\n---\n\n# Body\n\nText."
	got := Split(doc, Options{})
	if len(got) != 2 || got[0].Heading != "" || !strings.Contains(got[0].Text, "title: Hello") || got[1].Heading != "Body" {
		t.Fatalf("got %+v", got)
	}
}

func TestDeterministic(t *testing.T) {
	doc := strings.Repeat("# H\n\nSome text here. More text there！中文。\n\n```\ncode\n```\n\n", 50)
	a := Split(doc, Options{Size: 120, Overlap: 30})
	b := Split(doc, Options{Size: 120, Overlap: 30})
	if !reflect.DeepEqual(a, b) {
		t.Fatal("Split is not deterministic")
	}
}

func TestTinySizes(t *testing.T) {
	doc := "Hello world. 你好世界。 👍🏽 done"
	for size := 1; size < 12; size++ {
		for _, ov := range []int{-1, 0, 1, 5} {
			got := Split(doc, Options{Size: size, Overlap: ov})
			checkPieces(t, got, size)
			if len(got) == 0 {
				t.Fatalf("size %d: no pieces", size)
			}
		}
	}
}

func FuzzSplit(f *testing.F) {
	f.Add("# Title\n\nHello world. Second sentence!\n\n## Sub\n\n```\n# code\n```", 50, 10)
	f.Add(strings.Repeat("中文没有空格。", 30), 20, 5)
	f.Add("👩‍👩‍👧‍👦👍🏽\u0301\u200d\ufe0f", 2, 1)
	f.Add("Setext\n===\n---\n\xff\xfe", 3, -1)
	f.Add("", 0, 0)
	f.Fuzz(func(t *testing.T, doc string, size, overlap int) {
		size = size%500 + 1
		if size < 1 {
			size += 500
		}
		overlap %= 300
		got := Split(doc, Options{Size: size, Overlap: overlap})
		checkPieces(t, got, size)
		if strings.TrimSpace(strings.ToValidUTF8(doc, "")) != "" && len(got) == 0 && !onlyMarkup(doc) {
			t.Fatalf("non-empty input %q gave no pieces", doc)
		}
	})
}

// onlyMarkup reports whether doc holds nothing but headings and rules, which
// legitimately produce no pieces.
func onlyMarkup(doc string) bool {
	doc = strings.ReplaceAll(doc, "\r", "\n")
	lines := strings.Split(doc, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) == "" || isThematicBreak(l) {
			continue
		}
		if _, _, ok := atxHeading(l); ok {
			continue
		}
		if _, ok := setextUnderline(l); ok {
			continue
		}
		if i+1 < len(lines) {
			if _, ok := setextUnderline(lines[i+1]); ok {
				continue
			}
		}
		return false
	}
	return true
}

func TestLeadIsTheFirstProseParagraph(t *testing.T) {
	doc := "# Path\n\nStability: 2 - Stable\n\nSource Code: lib/path.js\n\n```js\nconst path = require('node:path');\n```\n\n" +
		"| a | b c d e f g h i |\n|---|---|\n\nThe `node:path` module provides utilities for working with\nfile and directory paths.\n\n## Windows\n\nMore text here."
	if got, want := Lead(doc), "The `node:path` module provides utilities for working with file and directory paths."; got != want {
		t.Fatalf("Lead = %q, want %q", got, want)
	}
	// A breadcrumb or a bar of links is no prose, however many words.
	chrome := "# mod_deflate\n\nModules | Directives | FAQ | Glossary | Sitemap | Report a bug now\n\n" +
		"Apache > HTTP Server > Documentation > Version 2.4 > Modules > Filters\n\n" +
		"The mod_deflate module compresses output from your server before it is sent to the client.\n"
	if got, want := Lead(chrome), "The mod_deflate module compresses output from your server before it is sent to the client."; got != want {
		t.Fatalf("Lead = %q, want %q", got, want)
	}
	if got := Lead("# Title\n\nShort label\n\n```\ncode code code code code code code code code\n```"); got != "" {
		t.Fatalf("a document without prose has no lead, got %q", got)
	}
	long := strings.Repeat("A word and another. ", 50)
	got := Lead(long)
	if n := utf8.RuneCountInString(got); n > leadMaxRunes || n < leadMaxRunes/2 || strings.HasSuffix(got, " ") || !strings.HasPrefix(long, got) {
		t.Fatalf("a long lead is cut at a word within %d runes: %d runes, %q", leadMaxRunes, n, got)
	}
}
func TestEmbedTextCarriesThePageLeadOnce(t *testing.T) {
	doc := "# CREATE TRIGGER\n\nThe CREATE TRIGGER statement adds triggers to the database schema, operations performed automatically on an event.\n\n" +
		"## Syntax\n\n" + strings.Repeat("A trigger fires for each row that the statement changes. ", 30)
	pieces := Split(doc, Options{Size: 300})
	lead := Lead(doc)
	if len(pieces) < 3 || lead == "" {
		t.Fatalf("want several pieces and a lead, got %d pieces, lead %q", len(pieces), lead)
	}
	first := EmbedText("CREATE TRIGGER", lead, pieces[0])
	if strings.Count(first, "performed automatically") != 1 {
		t.Fatalf("the piece holding the lead repeats it: %q", first)
	}
	deep := EmbedText("CREATE TRIGGER", lead, pieces[len(pieces)-1])
	if !strings.HasPrefix(deep, "CREATE TRIGGER\n"+lead+"\nCREATE TRIGGER > Syntax\n") {
		t.Fatalf("a piece from deep inside the page lacks the title, lead and heading: %q", deep)
	}
}

func TestLeadLooksOnlyNearTheTop(t *testing.T) {
	filler := strings.Repeat("short\n\n", leadWithin/7+10)
	prose := "The path module provides utilities for working with file and directory paths on every platform."
	if got := Lead(filler + prose); got != "" {
		t.Fatalf("a paragraph past the first %d bytes is no lead, got %q", leadWithin, got)
	}
	if got := Lead(prose + "\n\n" + filler); got != prose {
		t.Fatalf("Lead = %q, want %q", got, prose)
	}
	if got := Lead(strings.Repeat("é", leadWithin)); got != "" && !utf8.ValidString(got) {
		t.Fatalf("a cut inside one long line keeps valid UTF-8, got %d bytes", len(got))
	}
}

// TestOverlapNeverOpensInsideCode: a piece whose overlap would begin inside
// the previous piece's code block starts after the block instead, so every
// piece's fences pair up (a stray closing fence would read as an opening one
// and turn the piece's prose into code).
func TestOverlapNeverOpensInsideCode(t *testing.T) {
	var b strings.Builder
	b.WriteString("# Reading\n\n")
	for i := 0; i < 6; i++ {
		fmt.Fprintf(&b, "Prose sentence %d says how a stream is read. ", i)
	}
	b.WriteString("\n\n```js\nconst r = getStream();\n")
	for i := 0; i < 6; i++ {
		fmt.Fprintf(&b, "r.on('data', (c) => console.log(%d, c.length));\n", i)
	}
	b.WriteString("```\n\n")
	for i := 0; i < 12; i++ {
		fmt.Fprintf(&b, "Each call %d returns a chunk of data or null. ", i)
	}
	doc := b.String()
	size, overlap := 600, 150
	got := Split(doc, Options{Size: size, Overlap: overlap})
	checkPieces(t, got, size)
	fenced := false
	for i, p := range got {
		fences := 0
		for _, line := range strings.Split(p.Text, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				fences++
			}
		}
		if fences%2 != 0 || strings.HasPrefix(p.Text, "```\n") || strings.HasPrefix(p.Text, "r.on(") {
			t.Errorf("piece %d opens inside code or leaves a fence unpaired:\n%s", i, p.Text)
		}
		fenced = fenced || fences > 0
	}
	if !fenced || len(got) < 3 {
		t.Fatalf("the document should make 3+ pieces, one with the code block: %d pieces", len(got))
	}
	// The piece after the code block still overlaps: with the prose after it.
	for i := 1; i < len(got); i++ {
		if strings.Contains(got[i-1].Text, "```") && !strings.HasPrefix(got[i].Text, "Each call") {
			t.Errorf("piece %d after the code block starts %q", i, got[i].Text[:min(40, len(got[i].Text))])
		}
	}
}

// TestOverlapIsWholeSentences: the overlap is the previous piece's last
// whole sentences; when its last sentence alone is longer than the overlap,
// the next piece starts without one (a clause cut from the middle of a
// sentence is nothing a reader can use), unless the previous piece itself
// ends mid-sentence, where the tail lets either half of the cut sentence be
// found.
func TestOverlapIsWholeSentences(t *testing.T) {
	long := "Sessions can be used for keeping track of whether a user has been logged in, or for other per user information that should be kept available across requests."
	for _, tc := range []struct {
		name, prev, want string
	}{
		{"short last sentences", "First one here. Second one. Third one is short.", "Second one. Third one is short."},
		{"a long last sentence", "This module provides support. " + long, ""},
		{"cut mid-sentence", "The list goes on and on with words that never end because this sentence is far too long for a piece and keeps going", "for a piece and keeps going"},
	} {
		got := overlapTail(tc.prev, 40, tc.name == "cut mid-sentence")
		if tc.name == "cut mid-sentence" {
			if got == "" || !strings.HasSuffix(tc.prev, got) || strings.HasPrefix(got, " ") {
				t.Errorf("%s: overlap %q, want a word-aligned tail of the previous piece", tc.name, got)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("%s: overlap %q, want %q", tc.name, got, tc.want)
		}
	}
	// Through Split: no piece of a section of long sentences starts with a
	// clause of the one before it.
	doc := "# Sessions\n\n" + strings.Repeat(long+" ", 12)
	for i, p := range Split(doc, Options{Size: 400, Overlap: 100}) {
		if !strings.HasPrefix(p.Text, "Sessions can") {
			t.Errorf("piece %d starts mid-sentence: %q", i, p.Text[:40])
		}
	}
}
