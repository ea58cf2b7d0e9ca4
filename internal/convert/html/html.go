// Package html converts HTML pages to Markdown, keeping the readable content:
// the page's <main> or <article> (else its body) without navigation, headers,
// footers, sidebars, scripts and forms. Embedded data: images become
// separate images.
package html

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"mime"
	"strconv"
	"strings"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/strikethrough"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"github.com/lorekb/lore/internal/convert"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Converter reads .html and .htm files.
type Converter struct{}

// Name implements convert.Converter.
func (Converter) Name() string { return "html" }

// Formats implements convert.Converter.
func (Converter) Formats() []string { return []string{"html", "htm"} }

// noise are elements that are never the readable content of a page.
var noise = map[atom.Atom]bool{atom.Nav: true, atom.Header: true, atom.Footer: true, atom.Aside: true,
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Form: true, atom.Template: true,
	atom.Iframe: true, atom.Button: true, atom.Svg: true}

// mdConverter is the HTML-to-Markdown converter with tables (GitHub style)
// and strikethrough on top of CommonMark; it is safe for concurrent use.
var mdConverter = converter.NewConverter(converter.WithPlugins(base.NewBasePlugin(),
	commonmark.NewCommonmarkPlugin(), table.NewTablePlugin(), strikethrough.NewStrikethroughPlugin()))

// Convert implements convert.Converter.
func (Converter) Convert(ctx context.Context, in convert.Input) (*convert.Result, error) {
	if bytes.IndexByte(in.Data, 0) >= 0 {
		return nil, fmt.Errorf("%w: %s holds binary data, not HTML", convert.ErrCorrupt, in.Name)
	}
	doc, err := html.Parse(bytes.NewReader(in.Data))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", convert.ErrCorrupt, err)
	}
	res := &convert.Result{Meta: map[string]any{}}
	if t := find(doc, func(n *html.Node) bool { return n.DataAtom == atom.Title }); t != nil {
		res.Title = strings.TrimSpace(textOf(t))
	}
	root := find(doc, func(n *html.Node) bool { return n.DataAtom == atom.Main || attr(n, "role") == "main" })
	if root == nil {
		root = find(doc, func(n *html.Node) bool { return n.DataAtom == atom.Article })
	}
	if root == nil {
		root = find(doc, func(n *html.Node) bool { return n.DataAtom == atom.Body })
	}
	if root == nil {
		root = doc
	}
	strip(root)
	res.Images = extractDataImages(root)
	md, err := mdConverter.ConvertNode(root, converter.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", convert.ErrCorrupt, err)
	}
	res.Markdown = string(md)
	if h1 := convert.FirstHeading(res.Markdown); h1 != "" && res.Title == "" {
		res.Title = h1
	}
	return res, nil
}

func find(n *html.Node, match func(*html.Node) bool) *html.Node {
	if n.Type == html.ElementNode && match(n) {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if f := find(c, match); f != nil {
			return f
		}
	}
	return nil
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// strip removes noise elements and comments under n, and the permalink
// anchors of headings.
func strip(n *html.Node) {
	for c := n.FirstChild; c != nil; {
		next := c.NextSibling
		if c.Type == html.CommentNode || (c.Type == html.ElementNode && (noise[c.DataAtom] || attr(c, "hidden") != "" ||
			attr(c, "aria-hidden") == "true" || attr(c, "role") == "navigation")) {
			n.RemoveChild(c)
		} else {
			strip(c)
			if isHeading(c) {
				stripPermalinks(c)
			}
			if c.Type == html.ElementNode && c.DataAtom == atom.A && attr(c, "href") == "" {
				// A named anchor is no link: its text stays, without "[text]()".
				for g := c.FirstChild; g != nil; g = c.FirstChild {
					c.RemoveChild(g)
					n.InsertBefore(g, c)
				}
				n.RemoveChild(c)
			}
		}
		c = next
	}
}

func isHeading(n *html.Node) bool {
	switch n.DataAtom {
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		return n.Type == html.ElementNode
	}
	return false
}

// permalinkMarks are the texts documentation generators give a heading's
// link to itself (Sphinx and MkDocs ¶, others § # or a link symbol).
var permalinkMarks = map[string]bool{"": true, "¶": true, "§": true, "#": true, "🔗": true, "∞": true}

// stripPermalinks removes a heading's links to its own anchor ("Alias
// Directive ¶"): they would join the heading's text in every chunk's
// heading path and in citations.
func stripPermalinks(h *html.Node) {
	for c := h.FirstChild; c != nil; {
		next := c.NextSibling
		if c.Type == html.ElementNode && c.DataAtom == atom.A && strings.HasPrefix(attr(c, "href"), "#") &&
			permalinkMarks[strings.TrimSpace(textOf(c))] {
			h.RemoveChild(c)
		} else if c.Type == html.ElementNode {
			stripPermalinks(c)
		}
		c = next
	}
}

// extractDataImages turns <img src="data:..."> into images referenced by
// convert.ImageRef, so the document does not carry megabytes of base64.
func extractDataImages(root *html.Node) []convert.Image {
	var out []convert.Image
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.DataAtom == atom.Img {
			for i, a := range n.Attr {
				if a.Key != "src" || !strings.HasPrefix(a.Val, "data:") {
					continue
				}
				meta, payload, ok := strings.Cut(strings.TrimPrefix(a.Val, "data:"), ",")
				if !ok || !strings.HasSuffix(meta, ";base64") {
					continue
				}
				data, err := base64.StdEncoding.DecodeString(payload)
				if err != nil || len(data) == 0 {
					n.Attr[i].Val = ""
					continue
				}
				ct := strings.TrimSuffix(meta, ";base64")
				ext := ".bin"
				if exts, _ := mime.ExtensionsByType(ct); len(exts) > 0 {
					ext = exts[len(exts)-1]
				}
				name := "image" + strconv.Itoa(len(out)+1) + ext
				out = append(out, convert.Image{Name: name, ContentType: ct, Data: data})
				n.Attr[i].Val = convert.ImageRef(name)
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(root)
	return out
}
