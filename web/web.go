// Package web is Lore's built-in face for people: the reader (public sites,
// their collection trees, documents, keyword search, the site password gate)
// with the streamed, cited chat on every page. Pages are rendered here from
// the Client API, called in process (client.go), so the JSON API stays the
// contract and the pages are its first client; the chat runs in the browser
// (static/chat.js) against /v1/chat/responses directly. Templates and assets
// are embedded: the binary serves everything, nothing is fetched elsewhere.
package web

import (
	"bytes"
	"embed"
	"errors"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/filesystem"
)

//go:embed templates static
var files embed.FS

// AssetsPath is where the static files are served.
const AssetsPath = "/ui/assets"

// csp is the Content-Security-Policy of every page: only this origin's
// scripts, styles, images and fetches; no inline script or style, no
// plugins, no framing. A document that slipped a script past the sanitizer
// would still not run it.
const csp = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"

// siteCookie prefixes the cookie that keeps a site's access token (its id
// follows); the token itself is the Client API's (verify-password).
const siteCookie = "lore_site_"

// Web serves the pages.
type Web struct {
	api   *client
	log   *slog.Logger
	pages map[string]*template.Template
	cache *pageCache
}

// Mount registers the pages on app: "/", "/s/{slug}" and below, "/go/..."
// (a cited document by ids), the admin console at /admin (and its
// /admin/preview) and the assets under AssetsPath. Nothing else is
// taken: every API path, and any other unknown path, still reaches the API's
// own routes and its JSON 404. changes (nil: none) is the database's change
// feed, which keeps the page caches current (cache.go).
func Mount(app *fiber.App, log *slog.Logger, changes Changes) *Web {
	if log == nil {
		log = slog.Default()
	}
	w := &Web{api: &client{app: app}, log: log, pages: parsePages(), cache: newPageCache(changes)}
	static, _ := fs.Sub(files, "static")
	app.Get("/", w.index)
	app.Get("/s/:slug", w.sitePage)
	app.Get("/s/:slug/search", w.searchPage)
	app.Get("/s/:slug/d/:id", w.docPage)
	app.Post("/s/:slug/unlock", w.unlock)
	app.Get("/go/:site/:doc", w.goDoc)
	w.mountAdmin(app) // the console at /admin (admin.go)
	app.Use(AssetsPath, filesystem.New(filesystem.Config{Root: http.FS(static), MaxAge: 300}))
	return w
}

// ---- templates ---------------------------------------------------------

var funcs = template.FuncMap{
	"date": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2 Jan 2006")
	},
	"deref": func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	},
	"add": func(a, b int) int { return a + b },
}

func parsePages() map[string]*template.Template {
	base := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(files, "templates/layout.html"))
	pages := map[string]*template.Template{}
	for _, name := range []string{"index", "site", "doc", "search", "gate", "error"} {
		t := template.Must(template.Must(base.Clone()).ParseFS(files, "templates/"+name+".html"))
		pages[name] = t
	}
	return pages
}

// view is what the layout reads; Page is the page's own data.
type view struct {
	Title     string
	Site      *site
	Accent    string        // CSS colour of the site's theme
	NavHTML   template.HTML // the sidebar (siteNav)
	Query     string
	SiteToken string // for the chat's requests (X-Site-Access-Token)
	Locked    bool   // the password gate: no search, no chat
	Page      any
}

func (w *Web) render(c *fiber.Ctx, status int, name string, v view) error {
	b, status := w.page(status, name, v)
	return send(c, status, b)
}

// page renders the named page: its bytes and status (500 when the template
// failed).
func (w *Web) page(status int, name string, v view) ([]byte, int) {
	if v.Site != nil {
		v.Accent = accent(v.Site.ThemeColor)
	}
	var buf bytes.Buffer
	buf.Grow(len(v.NavHTML) + 16<<10) // the sidebar is most of a site's pages
	if err := w.pages[name].ExecuteTemplate(&buf, "layout", v); err != nil {
		w.log.Error("render page", "page", name, "err", err)
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString("<!doctype html><title>Error</title><p>The page could not be shown.</p>")
	}
	return buf.Bytes(), status
}

// send answers a rendered page.
func send(c *fiber.Ctx, status int, b []byte) error {
	pageHeaders(c)
	c.Status(status)
	return c.Send(b)
}

func pageHeaders(c *fiber.Ctx) {
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	c.Set(fiber.HeaderContentSecurityPolicy, csp)
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	c.Set(fiber.HeaderReferrerPolicy, "same-origin")
	c.Set(fiber.HeaderCacheControl, "no-store")
}

// errorPage shows a failed call: the API's 404 as a page that says so,
// anything else as a generic failure (logged).
func (w *Web) errorPage(c *fiber.Ctx, v view, err error) error {
	var ae *apiError
	status, msg := http.StatusBadGateway, "Something went wrong while loading this page. Please try again."
	if errors.As(err, &ae) {
		switch {
		case ae.Status == http.StatusNotFound:
			status, msg = http.StatusNotFound, "This page does not exist, or is not published."
		case ae.Status == http.StatusTooManyRequests:
			status, msg = ae.Status, "Too many requests: please wait a moment and try again."
		case ae.Status >= 400 && ae.Status < 500:
			status, msg = ae.Status, ae.Msg
		}
	}
	if status >= 500 {
		w.log.Error("page failed", "path", c.Path(), "err", err)
	}
	v.Title = http.StatusText(status)
	v.Page = map[string]any{"Status": status, "Message": msg}
	return w.render(c, status, "error", v)
}

var hexColor = regexp.MustCompile(`^#[0-9a-fA-F]{3}([0-9a-fA-F]{3})?$`)

// themes maps the theme names sites use to colours.
var themes = map[string]string{"blue": "#2563eb", "green": "#16a34a", "red": "#dc2626", "orange": "#ea580c",
	"purple": "#7c3aed", "pink": "#db2777", "teal": "#0d9488", "cyan": "#0891b2", "indigo": "#4f46e5",
	"yellow": "#ca8a04", "gray": "#4b5563", "grey": "#4b5563", "black": "#111827"}

func accent(theme string) string {
	theme = strings.ToLower(strings.TrimSpace(theme))
	if hexColor.MatchString(theme) {
		return theme
	}
	if c, ok := themes[theme]; ok {
		return c
	}
	return themes["blue"]
}

// ---- pages -------------------------------------------------------------

// index lists the active public sites (Client API site list).
func (w *Web) index(c *fiber.Ctx) error {
	q := strings.TrimSpace(c.Query("q"))
	v := view{Title: "Lore", Query: q}
	load := func() ([]byte, error) {
		query := url.Values{"is_pager": {"0"}}
		if q != "" {
			query.Set("keyword", limit(q, 200))
		}
		var sites page[site]
		if err := w.api.call(c, http.MethodGet, "/v1/sites", query, "", nil, &sites); err != nil {
			return nil, err
		}
		v.Page = sites.List
		return w.okPage("index", v)
	}
	var b []byte
	var err error
	if q == "" { // the same for everyone
		b, err = w.cache.home.Get(struct{}{}, load)
	} else {
		b, err = load()
	}
	return w.sendOr(c, v, b, err)
}

// errRender is a page whose template failed (logged by page).
var errRender = errors.New("the page could not be rendered")

// okPage renders a page that is to be answered with 200, or fails: only a
// complete page is kept in a cache.
func (w *Web) okPage(name string, v view) ([]byte, error) {
	b, status := w.page(http.StatusOK, name, v)
	if status != http.StatusOK {
		return nil, errRender
	}
	return b[:len(b):len(b)], nil // sent to many: an append must copy
}

// sendOr answers the page b, or the error page of err.
func (w *Web) sendOr(c *fiber.Ctx, v view, b []byte, err error) error {
	if err != nil {
		return w.errorPage(c, v, err)
	}
	return send(c, http.StatusOK, b)
}

// siteView loads the site of the path and its tree, or answers the page
// itself (not found, or the password gate): ok is false then.
func (w *Web) siteView(c *fiber.Ctx, current int64) (view, bool, error) {
	st, err := w.siteBySlug(c)
	if err != nil {
		return view{}, false, w.errorPage(c, view{Title: "Lore"}, err)
	}
	return w.siteViewOf(c, st, current)
}

// errAnswered: the page was answered already (the gate, an error page).
var errAnswered = errors.New("answered")

// siteBySlug looks up the site of the path (Client API), from the cache
// when its detail is public (cache.go). The site is shared by the requests
// that read it: it is not to be changed.
func (w *Web) siteBySlug(c *fiber.Ctx) (*site, error) {
	slug := c.Params("slug")
	st, err := w.cache.sites.Get(slug, func() (*site, error) {
		var st site
		if err := w.api.call(c, http.MethodGet, "/v1/sites:bySlug/"+url.PathEscape(slug), nil, "", nil, &st); err != nil {
			return nil, err
		}
		if !st.IsPublic && !st.RequiresPassword {
			return &st, errPrivate // for its staff only: not kept
		}
		return &st, nil
	})
	if errors.Is(err, errPrivate) {
		err = nil
	}
	return st, err
}

// siteViewOf is siteView for the site st.
func (w *Web) siteViewOf(c *fiber.Ctx, st *site, current int64) (view, bool, error) {
	v := view{Title: st.Name, Site: st}
	token := ""
	if st.RequiresPassword {
		token = c.Cookies(siteCookie + strconv.FormatInt(st.ID, 10))
		if token == "" {
			return v, false, w.gate(c, v, "", http.StatusOK)
		}
	}
	nav, err := w.nav(c, st, token)
	var ae *apiError
	if errors.As(err, &ae) && (ae.Status == http.StatusUnauthorized || ae.Status == http.StatusForbidden) && st.RequiresPassword {
		// The token expired or the password changed: ask again.
		w.forgetToken(c, st.ID)
		return v, false, w.gate(c, v, "Your access has expired. Please enter the password again.", http.StatusOK)
	}
	if err != nil {
		return v, false, w.errorPage(c, v, err)
	}
	v.SiteToken = token
	v.NavHTML = nav.render(current)
	return v, true, nil
}

// nav reads the site's collection tree with its documents (Client API) as
// its sidebar: a shared site's from the cache.
func (w *Web) nav(c *fiber.Ctx, st *site, token string) (*siteNav, error) {
	load := func() (*siteNav, error) {
		var tree []treeNode
		err := w.api.call(c, http.MethodGet, "/v1/collections:tree",
			url.Values{"site_id": {strconv.FormatInt(st.ID, 10)}, "include_documents": {"true"}}, token, nil, &tree)
		if err != nil {
			return nil, err
		}
		return buildNav(tree, st.Slug), nil
	}
	if !shared(st) {
		return load()
	}
	return fill(w.cache.navs, st.ID, load)
}

// siteHome is a site's front page: description, quick questions, latest
// documents.
type siteHome struct {
	Recent []document
	Total  int
}

func (w *Web) sitePage(c *fiber.Ctx) error {
	st, err := w.siteBySlug(c)
	if err != nil {
		return w.errorPage(c, view{Title: "Lore"}, err)
	}
	var v view
	load := func() ([]byte, error) {
		var ok bool
		if v, ok, err = w.siteViewOf(c, st, 0); !ok {
			return nil, errAnswered
		}
		var docs page[document]
		q := url.Values{"site_id": {strconv.FormatInt(v.Site.ID, 10)}, "size": {"10"}, "order_by": {"updated_at"}}
		if err := w.api.call(c, http.MethodGet, "/v1/documents", q, v.SiteToken, nil, &docs); err != nil {
			return nil, err
		}
		v.Page = siteHome{Recent: docs.List, Total: docs.Pagination.Total}
		return w.okPage("site", v)
	}
	var b []byte
	var lerr error
	if shared(st) {
		b, lerr = fill(w.cache.fronts, st.ID, load)
	} else {
		b, lerr = load()
	}
	if errors.Is(lerr, errAnswered) { // the gate or an error page, sent by siteViewOf
		return err
	}
	return w.sendOr(c, v, b, lerr)
}

// docView is a document page.
type docView struct {
	Doc  document
	HTML template.HTML
}

func (w *Web) docPage(c *fiber.Ctx) error {
	id, err := strconv.ParseInt(c.Params("id"), 10, 64)
	if err != nil || id <= 0 {
		return w.errorPage(c, view{Title: "Lore"}, &apiError{Status: http.StatusNotFound})
	}
	v, ok, err := w.siteView(c, id)
	if !ok {
		return err
	}
	var d document
	q := url.Values{"site_id": {strconv.FormatInt(v.Site.ID, 10)}}
	if err := w.api.call(c, http.MethodGet, "/v1/documents/"+strconv.FormatInt(id, 10), q, v.SiteToken, nil, &d); err != nil {
		return w.errorPage(c, v, err)
	}
	v.Title = d.Title + " · " + v.Site.Name
	v.Page = docView{Doc: d, HTML: w.cache.markdown(&d)}
	return w.render(c, http.StatusOK, "doc", v)
}

// dropTitle removes a leading "# <title>" line from content: the page shows
// the title already.
func dropTitle(content, title string) string {
	trimmed := strings.TrimLeft(content, " \t\r\n\ufeff")
	first, rest, _ := strings.Cut(trimmed, "\n")
	if h, ok := strings.CutPrefix(strings.TrimSpace(first), "# "); ok && strings.TrimSpace(h) == strings.TrimSpace(title) {
		return rest
	}
	return content
}

// searchView is a page of keyword search results.
type searchView struct {
	Query   string
	Results []searchHit
	Total   int
	Page    int
	Prev    string
	Next    string
}

type searchHit struct {
	Doc     document
	Snippet string
}

const searchPageSize = 20

func (w *Web) searchPage(c *fiber.Ctx) error {
	v, ok, err := w.siteView(c, 0)
	if !ok {
		return err
	}
	q := limit(strings.TrimSpace(c.Query("q")), 200)
	pg, _ := strconv.Atoi(c.Query("page"))
	pg = max(pg, 1)
	v.Query = q
	v.Title = "Search · " + v.Site.Name
	sv := searchView{Query: q, Page: pg}
	if q != "" {
		var docs page[document]
		query := url.Values{"site_id": {strconv.FormatInt(v.Site.ID, 10)}, "keyword": {q}, "exclude_content": {"false"},
			"page": {strconv.Itoa(pg)}, "size": {strconv.Itoa(searchPageSize)}}
		if err := w.api.call(c, http.MethodGet, "/v1/documents", query, v.SiteToken, nil, &docs); err != nil {
			return w.errorPage(c, v, err)
		}
		sv.Total = docs.Pagination.Total
		for _, d := range docs.List {
			text := ""
			if d.Content != nil {
				text = *d.Content
			}
			if text == "" && d.Summary != nil {
				text = *d.Summary
			}
			d.Content = nil
			sv.Results = append(sv.Results, searchHit{Doc: d, Snippet: Snippet(text, q, 240)})
		}
		base := "/s/" + url.PathEscape(v.Site.Slug) + "/search?q=" + url.QueryEscape(q) + "&page="
		if pg > 1 {
			sv.Prev = base + strconv.Itoa(pg-1)
		}
		if pg*searchPageSize < sv.Total {
			sv.Next = base + strconv.Itoa(pg+1)
		}
	}
	v.Page = sv
	return w.render(c, http.StatusOK, "search", v)
}

// ---- the password gate -------------------------------------------------

func (w *Web) gate(c *fiber.Ctx, v view, msg string, status int) error {
	v.Title = v.Site.Name + " · password"
	v.Locked = true
	next := c.Path()
	if c.Method() != http.MethodGet {
		next = c.Query("next")
	}
	v.Page = map[string]any{"Error": msg, "Next": next}
	return w.render(c, status, "gate", v)
}

// unlockMax bounds the password form's body.
const unlockMax = 4 << 10

// unlock exchanges the site password for an access token (Client API
// verify-password) and keeps it in a cookie for the site's pages.
func (w *Web) unlock(c *fiber.Ctx) error {
	slug := c.Params("slug")
	var st site
	if err := w.api.call(c, http.MethodGet, "/v1/sites:bySlug/"+url.PathEscape(slug), nil, "", nil, &st); err != nil {
		return w.errorPage(c, view{Title: "Lore"}, err)
	}
	v := view{Title: st.Name, Site: &st}
	home := "/s/" + url.PathEscape(st.Slug)
	if !st.RequiresPassword {
		return c.Redirect(home, http.StatusSeeOther)
	}
	form, err := readForm(c)
	if err != nil {
		return w.gate(c, v, "The form could not be read.", http.StatusBadRequest)
	}
	pw := form.Get("password")
	if pw == "" {
		return w.gate(c, v, "Please enter the password.", http.StatusOK)
	}
	var tok accessToken
	err = w.api.call(c, http.MethodPost, "/v1/client/sites/"+url.PathEscape(st.Slug)+"/verify-password", nil, "",
		map[string]string{"password": limit(pw, 64)}, &tok)
	var ae *apiError
	switch {
	case errors.As(err, &ae) && (ae.Status == http.StatusUnauthorized || ae.Status == http.StatusBadRequest || ae.Status == http.StatusUnprocessableEntity):
		return w.gate(c, v, "Wrong password.", http.StatusOK)
	case errors.As(err, &ae) && ae.Status == http.StatusTooManyRequests:
		return w.gate(c, v, "Too many attempts. Please wait a few minutes and try again.", http.StatusTooManyRequests)
	case err != nil:
		return w.errorPage(c, v, err)
	}
	maxAge := int(tok.ExpiresIn)
	if maxAge <= 0 {
		maxAge = 24 * 3600
	}
	c.Cookie(&fiber.Cookie{Name: siteCookie + strconv.FormatInt(st.ID, 10), Value: tok.AccessToken, Path: "/",
		MaxAge: maxAge, HTTPOnly: true, Secure: c.Protocol() == "https", SameSite: fiber.CookieSameSiteLaxMode})
	next := c.Query("next")
	if !strings.HasPrefix(next, home+"/") {
		next = home
	}
	return c.Redirect(next, http.StatusSeeOther)
}

func (w *Web) forgetToken(c *fiber.Ctx, siteID int64) {
	c.Cookie(&fiber.Cookie{Name: siteCookie + strconv.FormatInt(siteID, 10), Value: "", Path: "/", MaxAge: -1,
		Expires: time.Unix(1, 0), HTTPOnly: true, SameSite: fiber.CookieSameSiteLaxMode})
}

// readForm reads an urlencoded body of at most unlockMax bytes.
func readForm(c *fiber.Ctx) (url.Values, error) {
	if n := c.Request().Header.ContentLength(); n > unlockMax {
		return nil, errors.New("too large")
	}
	var r io.Reader = bytes.NewReader(c.Request().Body())
	if s := c.Context().RequestBodyStream(); s != nil {
		r = s
	}
	b, err := io.ReadAll(io.LimitReader(r, unlockMax+1))
	if err != nil || len(b) > unlockMax {
		return nil, errors.New("unreadable")
	}
	return url.ParseQuery(string(b))
}

// ---- citations ---------------------------------------------------------

// goDoc opens a cited document given its site and document ids (what a chat
// source carries): it finds the site's slug and redirects to the page.
func (w *Web) goDoc(c *fiber.Ctx) error {
	siteID, err1 := strconv.ParseInt(c.Params("site"), 10, 64)
	docID, err2 := strconv.ParseInt(c.Params("doc"), 10, 64)
	if err1 != nil || err2 != nil || siteID <= 0 || docID <= 0 {
		return w.errorPage(c, view{Title: "Lore"}, &apiError{Status: http.StatusNotFound})
	}
	var st site
	if err := w.api.call(c, http.MethodGet, "/v1/sites/"+strconv.FormatInt(siteID, 10), nil, "", nil, &st); err != nil {
		return w.errorPage(c, view{Title: "Lore"}, err)
	}
	to := "/s/" + url.PathEscape(st.Slug) + "/d/" + strconv.FormatInt(docID, 10)
	if sec := limit(c.Query("section"), 200); sec != "" {
		to += "?section=" + url.QueryEscape(sec) // the cited heading
	}
	return c.Redirect(to, http.StatusFound)
}

// limit cuts s to at most n runes.
func limit(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}
