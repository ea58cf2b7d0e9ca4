// Package docx converts Word documents (.docx, Office Open XML) to Markdown:
// paragraphs in order, Title and Heading styles as headings, list
// paragraphs as list items, bold and italic runs, hyperlinks, tables as
// Markdown tables and embedded pictures as images.
package docx

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/lorekb/lore/internal/convert"
)

// Converter reads .docx files.
type Converter struct{}

// Name implements convert.Converter.
func (Converter) Name() string { return "docx" }

// Formats implements convert.Converter.
func (Converter) Formats() []string { return []string{"docx"} }

// Convert implements convert.Converter.
func (Converter) Convert(ctx context.Context, in convert.Input) (*convert.Result, error) {
	z, err := convert.OpenZip(in.Data, in.Limits)
	if err != nil {
		return nil, err
	}
	if !z.Has("word/document.xml") {
		return nil, fmt.Errorf("%w: no word/document.xml: not a Word document", convert.ErrCorrupt)
	}
	data, err := z.Read("word/document.xml")
	if err != nil {
		return nil, err
	}
	root, err := convert.ParseXMLContext(ctx, data)
	if err != nil {
		return nil, err
	}
	body := root.Find("body")
	if body == nil {
		return nil, fmt.Errorf("%w: the document has no body", convert.ErrCorrupt)
	}
	w := &writer{ctx: ctx, rels: z.Rels("word/_rels/document.xml.rels"), images: convert.NewImageCollector(z)}
	w.headingStyles = headingStyles(z)
	var b strings.Builder
	for _, blk := range blocks(body) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if s := w.block(blk); s != "" {
			b.WriteString(s)
			b.WriteString("\n\n")
		}
		if w.err != nil {
			return nil, w.err
		}
	}
	res := &convert.Result{Markdown: b.String(), Title: z.CoreTitle(), Images: w.images.Images,
		Meta: map[string]any{"format": "docx"}}
	return res, nil
}

// blocks are the paragraphs and tables of a container, looking through
// content controls (sdt) and their content.
func blocks(n *convert.Node) []*convert.Node {
	var out []*convert.Node
	for _, c := range n.Children {
		switch c.Name {
		case "p", "tbl":
			out = append(out, c)
		case "sdt", "sdtContent", "customXml":
			out = append(out, blocks(c)...)
		}
	}
	return out
}

// headingStyles maps style ids whose name is "heading N" or "Title" to a
// level (documents from other languages use localised style ids).
func headingStyles(z *convert.Zip) map[string]int {
	out := map[string]int{}
	data, err := z.Read("word/styles.xml")
	if err != nil {
		return out
	}
	root, err := convert.ParseXML(data)
	if err != nil {
		return out
	}
	for _, st := range root.All("style") {
		name := strings.ToLower(st.Child("name").Get("val"))
		if lvl := levelOfName(name); lvl > 0 {
			out[st.Get("styleId")] = lvl
		}
		if ol := st.Find("outlineLvl"); ol != nil {
			if n, err := strconv.Atoi(ol.Get("val")); err == nil && n < 6 {
				if _, ok := out[st.Get("styleId")]; !ok {
					out[st.Get("styleId")] = n + 1
				}
			}
		}
	}
	return out
}

func levelOfName(name string) int {
	name = strings.ToLower(strings.ReplaceAll(name, " ", ""))
	if name == "title" {
		return 1
	}
	if rest, ok := strings.CutPrefix(name, "heading"); ok {
		if n, err := strconv.Atoi(rest); err == nil && n >= 1 && n <= 6 {
			return n
		}
	}
	return 0
}

type writer struct {
	ctx           context.Context
	err           error // the context's error, once noticed
	runs          int
	rels          map[string]string
	images        *convert.ImageCollector
	headingStyles map[string]int
}

func (w *writer) block(n *convert.Node) string {
	if n.Name == "tbl" {
		return w.table(n)
	}
	return w.paragraph(n)
}

func (w *writer) paragraph(p *convert.Node) string {
	text := strings.TrimSpace(w.inline(p))
	if text == "" {
		return ""
	}
	ppr := p.Child("pPr")
	style := ppr.Child("pStyle").Get("val")
	level := w.headingStyles[style]
	if level == 0 {
		level = levelOfName(style)
	}
	if ol := ppr.Child("outlineLvl"); ol != nil && level == 0 {
		if n, err := strconv.Atoi(ol.Get("val")); err == nil && n < 6 {
			level = n + 1
		}
	}
	if level > 0 {
		return strings.Repeat("#", level) + " " + strings.ReplaceAll(stripEmphasis(text), "\n", " ")
	}
	if np := ppr.Child("numPr"); np != nil {
		depth, _ := strconv.Atoi(np.Child("ilvl").Get("val"))
		return strings.Repeat("  ", min(depth, 8)) + "- " + text
	}
	if strings.Contains(strings.ToLower(style), "list") {
		return "- " + text
	}
	return text
}

// stripEmphasis drops the run emphasis of a heading's text (escaped
// asterisks, text of the document, stay).
func stripEmphasis(s string) string {
	if !strings.Contains(s, "*") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s):
			b.WriteByte(s[i])
			b.WriteByte(s[i+1])
			i++
		case s[i] != '*':
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// inline renders the runs of a paragraph (or a hyperlink inside one).
func (w *writer) inline(n *convert.Node) string {
	var b strings.Builder
	for _, c := range n.Children {
		// A paragraph may hold hundreds of thousands of runs: look at the
		// context every few thousand.
		if w.runs++; w.runs&4095 == 0 && w.err == nil {
			w.err = w.ctx.Err()
		}
		if w.err != nil {
			return ""
		}
		switch c.Name {
		case "r":
			b.WriteString(w.run(c))
		case "hyperlink":
			label := strings.TrimSpace(w.inline(c))
			target := w.rels[c.Get("id")]
			if a := c.Get("anchor"); target == "" && a != "" {
				target = "#" + a
			}
			if dest := convert.LinkTarget(target); dest != "" && label != "" {
				b.WriteString("[" + label + "](" + dest + ")")
			} else {
				b.WriteString(label)
			}
		case "ins", "smartTag", "fldSimple", "sdt", "sdtContent":
			b.WriteString(w.inline(c))
		}
	}
	return b.String()
}

func (w *writer) run(r *convert.Node) string {
	var b strings.Builder
	for _, c := range r.Children {
		switch c.Name {
		case "t":
			b.WriteString(convert.EscapeText(c.Text))
		case "tab":
			b.WriteString(" ")
		case "br", "cr":
			b.WriteString("  \n")
		case "drawing", "pict":
			if blip := c.Find("blip"); blip != nil {
				if ref := w.images.Ref(w.rels[blip.Get("embed")]); ref != "" {
					b.WriteString("![](" + ref + ")")
				}
			}
		}
	}
	s := b.String()
	if strings.TrimSpace(s) == "" || strings.Contains(s, "![") {
		return s
	}
	rpr := r.Child("rPr")
	bold, italic := on(rpr.Child("b")), on(rpr.Child("i"))
	lead, core, trail := splitSpace(s)
	switch {
	case bold && italic:
		core = "***" + core + "***"
	case bold:
		core = "**" + core + "**"
	case italic:
		core = "*" + core + "*"
	}
	return lead + core + trail
}

// on reads a boolean run property: present and not val="0"/"false".
func on(n *convert.Node) bool {
	if n == nil {
		return false
	}
	v := n.Get("val")
	return v != "0" && v != "false"
}

func splitSpace(s string) (string, string, string) {
	core := strings.TrimSpace(s)
	i := strings.Index(s, core)
	return s[:i], core, s[i+len(core):]
}

func (w *writer) table(t *convert.Node) string {
	var rows [][]string
	for _, tr := range t.Children {
		if tr.Name != "tr" {
			continue
		}
		var row []string
		for _, tc := range tr.Children {
			if tc.Name != "tc" {
				continue
			}
			var parts []string
			for _, blk := range blocks(tc) {
				if s := strings.TrimSpace(w.block(blk)); s != "" {
					parts = append(parts, strings.ReplaceAll(s, "\n", " "))
				}
			}
			row = append(row, strings.Join(parts, " "))
		}
		rows = append(rows, row)
	}
	return convert.Table(rows)
}
