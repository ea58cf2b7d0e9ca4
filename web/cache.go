package web

import (
	"context"
	"errors"
	"html/template"
	"time"

	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/memo"
	"github.com/lorekb/lore/internal/readcache"
)

// Changes is the database's change feed (db.DB.OnChange): every committed
// write that changes what a read shows. The page caches are dropped through
// it, as the API's read caches are (internal/readcache).
type Changes interface {
	OnChange(fn func(context.Context, db.Change))
}

// What the reader pages are built from is kept in process, so that a page
// costs neither its Client API calls nor its rendering while nothing
// changed. Only what every visitor is shown alike is kept: the home page
// without a query, the site lookups whose answer is public (a site behind a
// password has a public detail, which its gate shows), and, of a shared
// site (public, no password: shared), its sidebar and its front page.
// Whether a visitor may see a site's content is decided per request from
// the site lookup, before anything cached of it is used: the tree and pages
// of a site behind a password are read through the API on every request,
// with the visitor's own access token. A document page still asks the API
// for the document on every request (that counts the view, and checks it is
// published), so only its rendered Markdown is kept, checked against the
// document's text.
//
// A write through this process drops what it made stale at once (changed);
// one made through another process shows once the entries expire, as the
// API's own list and detail caches do.
const (
	// rowTTL bounds how old a site lookup may be: the API's own bound for
	// the site row that its access check reads.
	rowTTL = readcache.SiteRowTTL
	// listTTL bounds the home page, the sidebars and the front pages (the
	// API's bound for its lists).
	listTTL = readcache.ListTTL
	siteMax = 10000
	// siteBytes bounds the sidebars and the front pages, each (a site whose
	// sidebar is over a sixteenth of it is built on every request).
	siteBytes = 64 << 20
	// htmlTTL and htmlBytes bound the rendered documents; an entry is
	// checked against the document it was rendered from, so it is never
	// shown for another text.
	htmlTTL   = 10 * time.Minute
	htmlBytes = 32 << 20
)

type pageCache struct {
	sites  memo.TTL[string, *site]      // site lookups by slug, of public details
	home   memo.TTL[struct{}, []byte]   // the home page as sent
	navs   *readcache.Details[*siteNav] // a shared site's sidebar by site id
	fronts *readcache.Details[[]byte]   // a shared site's front page as sent
	html   *readcache.Details[rendered] // rendered documents by id
}

// rendered is a document's Markdown as HTML, with what it was made from.
type rendered struct {
	title, content string
	html           template.HTML
}

func renderedSize(r rendered) int { return 64 + len(r.title) + len(r.content) + len(r.html) }

// newPageCache subscribes the caches to changes; without a feed nothing is
// kept but the rendered documents, which cannot go stale.
func newPageCache(changes Changes) *pageCache {
	pc := &pageCache{html: readcache.NewDetails(htmlTTL, htmlBytes, renderedSize)}
	if changes != nil {
		pc.sites = memo.TTL[string, *site]{Keep: rowTTL, Max: siteMax}
		pc.home = memo.TTL[struct{}, []byte]{Keep: listTTL, Max: 1}
		pc.navs = readcache.NewDetails(listTTL, siteBytes, (*siteNav).size)
		pc.fronts = readcache.NewDetails(listTTL, siteBytes, func(b []byte) int { return len(b) })
		changes.OnChange(pc.changed)
	}
	return pc
}

// changed drops what a committed write made stale. A document write names
// ids only, not their sites, and may add one to a tree: every site's pages
// go (they are cheap to build again, and writes are rare beside reads).
func (pc *pageCache) changed(_ context.Context, ch db.Change) {
	if len(ch.Sites) == 0 && len(ch.Documents) == 0 && !ch.AllDocuments && !ch.Tenants {
		return
	}
	if len(ch.Sites) > 0 || ch.Tenants {
		pc.sites.Clear()
	}
	pc.home.Clear()
	if pc.navs != nil {
		pc.navs.Clear()
		pc.fronts.Clear()
	}
}

// fill returns id's value from c, or else load's, which c keeps unless a
// write came in between (c nil: nothing is kept).
func fill[V any](c *readcache.Details[V], id int64, load func() (V, error)) (V, error) {
	if c == nil {
		return load()
	}
	v, hit, gen := c.Get(id)
	if hit {
		return v, nil
	}
	v, err := load()
	if err == nil {
		c.Put(gen, id, v)
	}
	return v, err
}

// errPrivate: a site lookup answered a site private to its staff, which
// is not kept.
var errPrivate = errors.New("private site")

// shared reports whether a site's pages are the same for every visitor and
// open to all: public and without a password.
func shared(st *site) bool { return st.IsPublic && !st.RequiresPassword }

// markdown returns the document's content as HTML (its leading title
// dropped), from the cache when it was rendered from the same text.
func (pc *pageCache) markdown(d *document) template.HTML {
	content := ""
	if d.Content != nil {
		content = *d.Content
	}
	r, hit, gen := pc.html.Get(d.ID)
	if hit && r.content == content && r.title == d.Title {
		return r.html
	}
	r = rendered{title: d.Title, content: content, html: RenderMarkdown(dropTitle(content, d.Title))}
	pc.html.Put(gen, d.ID, r)
	return r.html
}
