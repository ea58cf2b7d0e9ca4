package web

import (
	"bytes"
	"html/template"
	"net/url"
	"regexp"
	"strings"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	gmhtml "github.com/yuin/goldmark/renderer/html"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// Document content is Markdown written by staff or imported from files, so
// it may hold raw HTML from anywhere. It is rendered in three steps: goldmark
// (GitHub-flavoured Markdown, raw HTML passed through), then bluemonday's
// user-content policy (no script, style, iframe, form or event handler; links
// only http, https, mailto and relative), then a pass over the result that
// sends every image through the Client API's file route and makes links to
// other origins open in a new tab without the opener. The page's
// Content-Security-Policy (web.go) backs this up: no inline script runs.

// md is the Markdown renderer (safe for concurrent use).
var md = goldmark.New(
	goldmark.WithExtensions(extension.GFM),
	goldmark.WithParserOptions(parser.WithAutoHeadingID()),
	goldmark.WithRendererOptions(gmhtml.WithUnsafe()), // raw HTML goes to the sanitizer, not the page
)

// policy is the sanitizer of rendered documents.
var policy = func() *bluemonday.Policy {
	p := bluemonday.UGCPolicy()
	// Code blocks keep their language class (styling only).
	p.AllowAttrs("class").Matching(regexp.MustCompile(`^language-[A-Za-z0-9_+#.-]{1,40}$`)).OnElements("code")
	// GFM task lists.
	p.AllowAttrs("type").Matching(regexp.MustCompile(`^checkbox$`)).OnElements("input")
	p.AllowAttrs("checked", "disabled").OnElements("input")
	p.AllowURLSchemes("http", "https", "mailto")
	p.RequireNoReferrerOnLinks(true)
	return p
}()

// RenderMarkdown turns document Markdown into HTML that is safe to put in a
// page: see the comment above for what survives.
func RenderMarkdown(src string) template.HTML {
	var buf bytes.Buffer
	if err := md.Convert([]byte(src), &buf); err != nil {
		// goldmark fails only on writer errors; show the text as is.
		return template.HTML("<pre>" + template.HTMLEscapeString(src) + "</pre>")
	}
	clean := policy.SanitizeBytes(buf.Bytes())
	return template.HTML(rewrite(clean)) //nolint:gosec // sanitized above; rewrite only narrows it
}

// rewrite routes images through the file route and marks external links.
// It can only remove or replace attribute values with safe ones.
func rewrite(frag []byte) string {
	ctx := &html.Node{Type: html.ElementNode, Data: "div", DataAtom: atom.Div}
	nodes, err := html.ParseFragment(bytes.NewReader(frag), ctx)
	if err != nil {
		return template.HTMLEscapeString(string(frag))
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for c := n.FirstChild; c != nil; {
			next := c.NextSibling // walk may replace c
			walk(c)
			c = next
		}
		if n.Type != html.ElementNode {
			return
		}
		switch n.DataAtom {
		case atom.Img:
			fixImage(n)
		case atom.A:
			if href := attr(n, "href"); isExternal(href) {
				setAttr(n, "target", "_blank")
				setAttr(n, "rel", "nofollow noreferrer noopener")
			}
		}
	}
	var out bytes.Buffer
	for _, n := range nodes {
		walk(n)
		if err := html.Render(&out, n); err != nil {
			return template.HTMLEscapeString(string(frag))
		}
	}
	return out.String()
}

// fixImage points an image at the file route; an image elsewhere (another
// origin) is not loaded by the reader: it becomes a link to it.
func fixImage(n *html.Node) {
	src := attr(n, "src")
	if obj, ok := FileObject(src); ok {
		setAttr(n, "src", FileURL(obj))
		setAttr(n, "loading", "lazy")
		return
	}
	if n.Parent == nil {
		delAttr(n, "src")
		return
	}
	label := attr(n, "alt")
	if isExternal(src) {
		if label == "" {
			label = "image"
		}
		a := &html.Node{Type: html.ElementNode, Data: "a", DataAtom: atom.A, Attr: []html.Attribute{
			{Key: "href", Val: src}, {Key: "target", Val: "_blank"}, {Key: "rel", Val: "nofollow noreferrer noopener"},
			{Key: "class", Val: "external-image"}}}
		a.AppendChild(&html.Node{Type: html.TextNode, Data: "[" + label + "]"})
		n.Parent.InsertBefore(a, n)
	} else if label != "" {
		n.Parent.InsertBefore(&html.Node{Type: html.TextNode, Data: "[" + label + "]"}, n)
	}
	n.Parent.RemoveChild(n)
}

// FileURL is the Client API download route of a stored object.
func FileURL(object string) string {
	segs := strings.Split(object, "/")
	for i := range segs {
		segs[i] = url.PathEscape(segs[i])
	}
	return "/v1/files/" + strings.Join(segs, "/") + ":download"
}

// objectRe is what a stored object name looks like (blob.ValidateName is
// stricter; the file route checks it again).
var objectRe = regexp.MustCompile(`^[^/\x00-\x1f\x7f\\?#]+(/[^/\x00-\x1f\x7f\\?#]+)*$`)

// FileObject recovers the object name an image source refers to: a Client
// or Admin API file URL (of any host: documents keep the absolute URLs an
// upload returned), "files/<name>" or a bare object name in a folder such
// as "uploads/<uuid>.png". Anything else (another site's image, a data: URL)
// is not a stored file.
func FileObject(src string) (string, bool) {
	src = strings.TrimSpace(src)
	if src == "" {
		return "", false
	}
	u, err := url.Parse(src)
	if err != nil || u.Scheme != "" && u.Scheme != "http" && u.Scheme != "https" {
		return "", false
	}
	p := u.EscapedPath()
	for _, prefix := range []string{"/v1/files/", "/api/v1/files/", "/admin/api/v1/files/", "/admin/v1/files/"} {
		if rest, ok := strings.CutPrefix(p, prefix); ok {
			rest = strings.TrimSuffix(strings.TrimSuffix(rest, ":download"), ":presignedUrl")
			return cleanObject(rest)
		}
	}
	if u.Scheme != "" || u.Host != "" || strings.HasPrefix(p, "/") || u.RawQuery != "" || !strings.Contains(p, "/") {
		return "", false // stored objects live in a folder ("uploads/<uuid>.png")
	}
	return cleanObject(strings.TrimPrefix(p, "files/"))
}

func cleanObject(escaped string) (string, bool) {
	name, err := url.PathUnescape(escaped)
	if err != nil || !objectRe.MatchString(name) || strings.Contains("/"+name+"/", "/../") || strings.Contains("/"+name+"/", "/./") {
		return "", false
	}
	return name, true
}

// isExternal: an absolute http(s) URL (another origin, as far as a document
// knows).
func isExternal(href string) bool {
	u, err := url.Parse(strings.TrimSpace(href))
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key && a.Namespace == "" {
			return a.Val
		}
	}
	return ""
}

func setAttr(n *html.Node, key, val string) {
	for i, a := range n.Attr {
		if a.Key == key && a.Namespace == "" {
			n.Attr[i].Val = val
			return
		}
	}
	n.Attr = append(n.Attr, html.Attribute{Key: key, Val: val})
}

func delAttr(n *html.Node, key string) {
	out := n.Attr[:0]
	for _, a := range n.Attr {
		if a.Key != key {
			out = append(out, a)
		}
	}
	n.Attr = out
}

// Snippet is up to limit runes of plain text around the first match of
// keyword in Markdown src (the search results' excerpt).
func Snippet(src, keyword string, limit int) string {
	text := plainText(src)
	runes := []rune(text)
	if len(runes) <= limit {
		return text
	}
	start := 0
	if keyword != "" {
		if i := strings.Index(strings.ToLower(text), strings.ToLower(keyword)); i >= 0 {
			start = len([]rune(text[:i])) - limit/3
		}
	}
	start = min(max(start, 0), len(runes)-limit)
	out := string(runes[start : start+limit])
	if start > 0 {
		out = "…" + out
	}
	if start+limit < len(runes) {
		out += "…"
	}
	return out
}

var (
	mdNoise = regexp.MustCompile("(?m)^\\s{0,3}(#{1,6}|>|[-*+]|\\d+\\.)\\s+|[*_`~|]+|!?\\[([^\\]]*)\\]\\([^)]*\\)|<[^>]*>")
	spaces  = regexp.MustCompile(`\s+`)
)

// plainText drops the most common Markdown and HTML markup.
func plainText(src string) string {
	t := mdNoise.ReplaceAllStringFunc(src, func(m string) string {
		if sub := mdNoise.FindStringSubmatch(m); len(sub) > 2 && sub[2] != "" {
			return sub[2]
		}
		return " "
	})
	return strings.TrimSpace(spaces.ReplaceAllString(t, " "))
}
