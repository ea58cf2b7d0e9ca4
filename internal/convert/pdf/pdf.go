// Package pdf converts the text layer of PDF files to Markdown (through
// internal/pdfread, a hardened copy of github.com/ledongthuc/pdf that
// reads under a context and bounds loops, nesting and unpacking): glyphs are gathered into lines top to bottom
// and left to right, lines into paragraphs, and lines set in a larger font
// than the body text become headings, the largest size first. A PDF without
// a text layer (a scan) is refused with a reason that points to an OCR
// document processor.
package pdf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/lorekb/lore/internal/convert"
	"github.com/lorekb/lore/internal/convert/pdf/internal/pdfread"
)

// MaxPages bounds the pages read from one file.
const MaxPages = 2000

// Converter reads .pdf files.
type Converter struct{}

// Name implements convert.Converter.
func (Converter) Name() string { return "pdf" }

// Formats implements convert.Converter.
func (Converter) Formats() []string { return []string{"pdf"} }

type line struct {
	text string
	size float64
	y    float64
	page int
}

// Convert implements convert.Converter.
func (Converter) Convert(ctx context.Context, in convert.Input) (*convert.Result, error) {
	if !bytes.HasPrefix(bytes.TrimLeft(in.Data[:min(len(in.Data), 1024)], "\x00\t\r\n "), []byte("%PDF-")) {
		return nil, fmt.Errorf("%w: no %%PDF- header: not a PDF file", convert.ErrCorrupt)
	}
	lim := in.Limits.Or()
	r, err := pdfread.NewReaderContext(ctx, bytes.NewReader(in.Data), int64(len(in.Data)), lim.MaxUnpacked)
	if err != nil {
		return nil, failure(err)
	}
	pages, err := r.Pages(MaxPages)
	if err != nil {
		return nil, failure(err)
	}
	var lines []line
	for i, p := range pages {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		glyphs, err := p.Texts()
		if err != nil {
			return nil, failure(err)
		}
		lines = append(lines, pageLines(glyphs, i+1)...)
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("%w: the PDF has no text layer (a scanned document?): import it with an OCR document processor", convert.ErrUnsupported)
	}
	md := render(lines)
	return &convert.Result{Markdown: md, Meta: map[string]any{"format": "pdf", "pages": len(pages)}}, nil
}

// failure names a reader error: the context's own error as it is, else
// encrypted, too large or corrupt.
func failure(err error) error {
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, pdfread.ErrInvalidPassword) || strings.Contains(strings.ToLower(err.Error()), "encrypt"):
		return fmt.Errorf("%w: %v", convert.ErrEncrypted, err)
	case errors.Is(err, pdfread.ErrTooLarge):
		return fmt.Errorf("%w: %v", convert.ErrTooLarge, err)
	}
	return fmt.Errorf("%w: %v", convert.ErrCorrupt, err)
}

// pageLines groups a page's glyphs into lines: glyphs whose baselines are
// within a third of the font size share a line; a gap wider than a quarter
// of the font size is a space.
func pageLines(glyphs []pdfread.Text, page int) []line {
	gs := make([]pdfread.Text, 0, len(glyphs))
	for _, g := range glyphs {
		if g.S != "" && g.FontSize > 0 {
			gs = append(gs, g)
		}
	}
	sort.SliceStable(gs, func(i, j int) bool {
		if math.Abs(gs[i].Y-gs[j].Y) > 0.33*math.Max(gs[i].FontSize, gs[j].FontSize) {
			return gs[i].Y > gs[j].Y
		}
		return gs[i].X < gs[j].X
	})
	var out []line
	var b strings.Builder
	var cur line
	var lastEnd float64 // where the previous glyph on the line ended
	flush := func() {
		if t := strings.TrimSpace(b.String()); t != "" {
			cur.text = strings.Join(strings.Fields(t), " ")
			out = append(out, cur)
		}
		b.Reset()
	}
	for i, g := range gs {
		if i == 0 || math.Abs(g.Y-cur.y) > 0.33*math.Max(g.FontSize, cur.size) {
			flush()
			cur = line{y: g.Y, size: 0, page: page}
		} else if g.X-lastEnd > 0.25*g.FontSize && !strings.HasSuffix(b.String(), " ") {
			b.WriteString(" ")
		}
		b.WriteString(g.S)
		cur.size = math.Max(cur.size, math.Round(g.FontSize*2)/2)
		lastEnd = g.X + g.W
	}
	flush()
	return out
}

// render turns lines into Markdown: heading levels by font size rank above
// the body size (the size most characters use), paragraphs split at larger
// vertical gaps and at page ends.
func render(lines []line) string {
	chars := map[float64]int{}
	for _, l := range lines {
		chars[l.size] += len(l.text)
	}
	body, most := 0.0, -1
	for s, n := range chars {
		if n > most || (n == most && s < body) {
			body, most = s, n
		}
	}
	var big []float64
	for s := range chars {
		if s >= body*1.15 {
			big = append(big, s)
		}
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(big)))
	levels := make(map[float64]int, len(big))
	for i, s := range big {
		levels[s] = min(i+1, 3)
	}
	var b strings.Builder
	var para []string
	endPara := func() {
		if len(para) > 0 {
			b.WriteString(convert.EscapeText(joinLines(para)) + "\n\n")
			para = nil
		}
	}
	// A heading set on several lines of the same size is one heading: its
	// lines gather here until another line comes.
	var heading strings.Builder
	headingLevel := 0
	endHeading := func() {
		if heading.Len() > 0 {
			b.WriteString(strings.Repeat("#", headingLevel) + " " + convert.EscapeText(heading.String()) + "\n\n")
			heading.Reset()
		}
	}
	for i, l := range lines {
		if lv := levels[l.size]; lv > 0 && utf8.RuneCountInString(l.text) <= 200 {
			endPara()
			if heading.Len() > 0 && lines[i-1].size == l.size && lines[i-1].page == l.page {
				heading.WriteString(" " + l.text)
				continue
			}
			endHeading()
			heading.WriteString(l.text)
			headingLevel = lv
			continue
		}
		endHeading()
		if i > 0 && len(para) > 0 {
			prev := lines[i-1]
			if prev.page != l.page || prev.y-l.y > 1.8*math.Max(l.size, prev.size) || prev.size != l.size {
				endPara()
			}
		}
		para = append(para, l.text)
	}
	endPara()
	endHeading()
	return b.String()
}

// joinLines joins the lines of a paragraph, undoing hyphenation at line ends.
func joinLines(ls []string) string {
	var b strings.Builder
	for i, l := range ls {
		if i > 0 && !hyphenated(ls[i-1]) {
			b.WriteString(" ")
		}
		if i < len(ls)-1 && hyphenated(l) {
			l = l[:len(l)-1]
		}
		b.WriteString(l)
	}
	return b.String()
}

func hyphenated(l string) bool { return len(l) > 1 && strings.HasSuffix(l, "-") }
