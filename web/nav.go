package web

import (
	"html/template"
	"net/url"
	"strconv"
	"strings"
)

// siteNav is a site's sidebar tree rendered once, every collection closed
// and no document current, with the places where a page's marks go: each
// page copies it with its few marks put in (the collections on the way to
// its document opened, the document marked current), so a page does not
// build the tree again. It is written here, not in a template: the tree lists
// every document of the site, and html/template's escaping of each value
// through reflection was most of a page's cost. Titles and links are escaped
// as the template would.
type siteNav struct {
	html string
	tops []int // where " open" goes in each first-level collection
	docs map[int64]navMarks
}

// navMarks are the places of one document's marks in siteNav.html.
type navMarks struct {
	opens []int // the collections on the way to it
	leaf  int   // after its class "leaf"
	link  int   // after its link's href
}

const (
	markOpen    = " open"
	markCurrent = " current"
	markLink    = ` aria-current="page"`
)

// size is what a sidebar counts against the cache's bound.
func (n *siteNav) size() int { return 64 + len(n.html) + 64*len(n.docs) }

// buildNav renders the tree of nodes (collections and their documents) of
// the site slug.
func buildNav(nodes []treeNode, slug string) *siteNav {
	n := &siteNav{docs: map[int64]navMarks{}}
	if len(nodes) == 0 {
		return n
	}
	var b strings.Builder
	prefix := "/s/" + url.PathEscape(slug) + "/d/"
	var walk func(nodes []treeNode, path []int, top bool)
	walk = func(nodes []treeNode, path []int, top bool) {
		b.WriteString(`<ul class="tree">`)
		for _, t := range nodes {
			if t.Type == "collection" {
				b.WriteString(`<li class="col"><details`)
				at := b.Len()
				if top {
					n.tops = append(n.tops, at)
				}
				b.WriteString("><summary>" + template.HTMLEscapeString(t.Title) + "</summary>")
				if len(t.Children) > 0 {
					walk(t.Children, append(path[:len(path):len(path)], at), false)
				}
				b.WriteString("</details></li>")
				continue
			}
			b.WriteString(`<li class="leaf`)
			m := navMarks{opens: path, leaf: b.Len()}
			b.WriteString(`"><a href="` + template.HTMLEscapeString(prefix+strconv.FormatInt(t.ID, 10)) + `"`)
			m.link = b.Len()
			b.WriteString(">" + template.HTMLEscapeString(t.Title) + "</a></li>")
			if _, dup := n.docs[t.ID]; !dup {
				n.docs[t.ID] = m
			}
		}
		b.WriteString("</ul>")
	}
	walk(nodes, nil, true)
	n.html = b.String()
	return n
}

// render is the sidebar of a page: with current (a document id) marked and
// the collections on its way open, or (current 0: a site's own pages) with
// the first level open.
func (n *siteNav) render(current int64) template.HTML {
	if n.html == "" {
		return ""
	}
	type mark struct {
		at int
		s  string
	}
	var marks []mark
	if m, ok := n.docs[current]; ok && current != 0 {
		for _, at := range m.opens {
			marks = append(marks, mark{at, markOpen})
		}
		marks = append(marks, mark{m.leaf, markCurrent}, mark{m.link, markLink})
	} else if current == 0 {
		for _, at := range n.tops {
			marks = append(marks, mark{at, markOpen})
		}
	}
	var b strings.Builder
	b.Grow(len(n.html) + len(marks)*len(markLink))
	last := 0
	for _, m := range marks { // in the order of the text: ancestors come first
		b.WriteString(n.html[last:m.at])
		b.WriteString(m.s)
		last = m.at
	}
	b.WriteString(n.html[last:])
	return template.HTML(b.String()) //nolint:gosec // escaped in buildNav
}
