// Package pptx converts PowerPoint decks (.pptx) to Markdown: one section per
// slide in presentation order, the slide title as its heading, text boxes as
// paragraphs or list items, tables as Markdown tables, pictures as images and
// speaker notes as a quote.
package pptx

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/lorekb/lore/internal/convert"
)

// Converter reads .pptx files.
type Converter struct{}

// Name implements convert.Converter.
func (Converter) Name() string { return "pptx" }

// Formats implements convert.Converter.
func (Converter) Formats() []string { return []string{"pptx"} }

// Convert implements convert.Converter.
func (Converter) Convert(ctx context.Context, in convert.Input) (*convert.Result, error) {
	z, err := convert.OpenZip(in.Data, in.Limits)
	if err != nil {
		return nil, err
	}
	if !z.Has("ppt/presentation.xml") {
		return nil, fmt.Errorf("%w: no ppt/presentation.xml: not a PowerPoint deck", convert.ErrCorrupt)
	}
	slides, err := slideOrder(z)
	if err != nil {
		return nil, err
	}
	images := convert.NewImageCollector(z)
	var b strings.Builder
	firstTitle := ""
	for i, sp := range slides {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		data, err := z.Read(sp)
		if err != nil {
			return nil, err
		}
		root, err := convert.ParseXMLContext(ctx, data)
		if err != nil {
			return nil, err
		}
		rels := z.Rels(path.Join(path.Dir(sp), "_rels", path.Base(sp)+".rels"))
		title, body := slide(root, rels, images)
		if title == "" {
			title = "Slide " + strconv.Itoa(i+1)
		} else if firstTitle == "" {
			firstTitle = title
		}
		b.WriteString("## " + title + "\n\n" + body)
		if notes := notesOf(z, rels); notes != "" {
			b.WriteString("> " + strings.ReplaceAll(notes, "\n", "\n> ") + "\n\n")
		}
	}
	title := z.CoreTitle()
	if title == "" {
		title = firstTitle
	}
	return &convert.Result{Markdown: b.String(), Title: title, Images: images.Images,
		Meta: map[string]any{"format": "pptx", "slides": len(slides)}}, nil
}

// slideOrder lists slide parts in presentation order (p:sldIdLst), falling
// back to the slide numbers of the part names.
func slideOrder(z *convert.Zip) ([]string, error) {
	data, err := z.Read("ppt/presentation.xml")
	if err != nil {
		return nil, err
	}
	root, err := convert.ParseXML(data)
	if err != nil {
		return nil, err
	}
	rels := z.Rels("ppt/_rels/presentation.xml.rels")
	var out []string
	seen := map[string]bool{} // a deck lists each slide once: a repeat would be converted again and again
	for _, id := range root.All("sldId") {
		if t := rels[id.Get("id")]; t != "" && z.Has(t) && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	if len(out) > 0 {
		return out, nil
	}
	for _, n := range z.Names() {
		if strings.HasPrefix(n, "ppt/slides/slide") && strings.HasSuffix(n, ".xml") {
			out = append(out, n)
		}
	}
	num := func(s string) int {
		n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(s, "ppt/slides/slide"), ".xml"))
		return n
	}
	sort.Slice(out, func(i, j int) bool { return num(out[i]) < num(out[j]) })
	return out, nil
}

// slide renders one slide: its title placeholder and the rest in shape order.
func slide(root *convert.Node, rels map[string]string, images *convert.ImageCollector) (string, string) {
	tree := root.Find("spTree")
	if tree == nil {
		return "", ""
	}
	var title string
	var b strings.Builder
	var walk func(n *convert.Node)
	walk = func(n *convert.Node) {
		for _, c := range n.Children {
			switch c.Name {
			case "sp":
				ph := c.Find("nvPr").Child("ph")
				typ := ph.Get("type")
				paras := paragraphs(c.Child("txBody"))
				if (typ == "title" || typ == "ctrTitle") && title == "" {
					title = strings.Join(texts(paras), " ")
					continue
				}
				for _, p := range paras {
					if p.text == "" {
						continue
					}
					if p.bullet || typ == "body" || (typ == "" && len(paras) > 1) {
						b.WriteString(strings.Repeat("  ", p.level) + "- " + p.text + "\n")
					} else {
						b.WriteString(p.text + "\n\n")
					}
				}
				b.WriteString("\n")
			case "graphicFrame":
				if tbl := c.Find("tbl"); tbl != nil {
					b.WriteString(table(tbl) + "\n")
				}
			case "pic":
				if blip := c.Find("blip"); blip != nil {
					if ref := images.Ref(rels[blip.Get("embed")]); ref != "" {
						b.WriteString("![](" + ref + ")\n\n")
					}
				}
			case "grpSp":
				walk(c)
			}
		}
	}
	walk(tree)
	return title, b.String()
}

type para struct {
	text   string
	level  int
	bullet bool
}

func texts(ps []para) []string {
	var out []string
	for _, p := range ps {
		if p.text != "" {
			out = append(out, p.text)
		}
	}
	return out
}

// paragraphs reads the a:p paragraphs of a text body.
func paragraphs(body *convert.Node) []para {
	var out []para
	if body == nil {
		return out
	}
	for _, p := range body.Children {
		if p.Name != "p" {
			continue
		}
		var b strings.Builder
		for _, r := range p.Children {
			switch r.Name {
			case "r", "fld":
				b.WriteString(convert.EscapeText(r.Child("t").Text))
			case "br":
				b.WriteString(" ")
			}
		}
		pp := para{text: strings.TrimSpace(b.String())}
		if ppr := p.Child("pPr"); ppr != nil {
			pp.level, _ = strconv.Atoi(ppr.Get("lvl"))
			pp.bullet = ppr.Child("buChar") != nil || ppr.Child("buAutoNum") != nil
		}
		out = append(out, pp)
	}
	return out
}

func table(tbl *convert.Node) string {
	var rows [][]string
	for _, tr := range tbl.All("tr") {
		var row []string
		for _, tc := range tr.All("tc") {
			row = append(row, strings.Join(texts(paragraphs(tc.Child("txBody"))), " "))
		}
		rows = append(rows, row)
	}
	return convert.Table(rows)
}

// notesOf returns the speaker notes of a slide, if any.
func notesOf(z *convert.Zip, rels map[string]string) string {
	for _, t := range rels {
		if !strings.Contains(t, "notesSlides/") {
			continue
		}
		data, err := z.Read(t)
		if err != nil {
			return ""
		}
		root, err := convert.ParseXML(data)
		if err != nil {
			return ""
		}
		var parts []string
		for _, sp := range root.All("sp") {
			if sp.Find("nvPr").Child("ph").Get("type") == "body" {
				parts = append(parts, texts(paragraphs(sp.Child("txBody")))...)
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}
