package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lorekb/lore/api"
	"github.com/lorekb/lore/internal/cache/memory"
	"github.com/lorekb/lore/internal/config"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/db/dbtest"
	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/models"
	"github.com/valyala/fasthttp"
)

// pages is the server (API and pages, no Temporal) on a fresh database,
// called through its handler in process.
type pages struct {
	tb     testing.TB
	d      *deps.Deps
	srv    *api.Server
	h      fasthttp.RequestHandler
	tenant int64
}

func newPages(tb testing.TB, dialect string) *pages {
	tb.Helper()
	cfg, err := config.LoadFrom(config.MapSource(map[string]string{"LORE_DATA_DIR": tb.TempDir(),
		"LORE_JWT_SECRET": "web-pages-secret-0123456789abcdef0123", "TEMPORAL_ADDRESS": "none"}))
	if err != nil {
		tb.Fatal(err)
	}
	database := dbtest.Open(tb, dialect)
	if err := deps.SealSecrets(context.Background(), database, cfg, nil); err != nil {
		tb.Fatal(err)
	}
	d := &deps.Deps{Cfg: cfg, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), DB: database, Cache: memory.New(1000)}
	tid, err := database.EnsureDefaultTenant(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	srv := api.New(d)
	tb.Cleanup(func() { _ = srv.CloseViews(context.Background()) })
	return &pages{tb: tb, d: d, srv: srv, h: srv.App().Handler(), tenant: tid}
}

var reader = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}

// get fetches path with the given request headers (name, value pairs).
func (p *pages) get(path string, headers ...string) (int, string) {
	p.tb.Helper()
	return p.do("GET", path, "", headers...)
}

// do sends method path with a JSON body ("" none).
func (p *pages) do(method, path, body string, headers ...string) (int, string) {
	p.tb.Helper()
	var ctx fasthttp.RequestCtx
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.Header.SetMethod(method)
	req.SetRequestURI(path)
	req.Header.SetHost("lore.test")
	if body != "" {
		req.Header.SetContentType("application/json")
		req.SetBodyString(body)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	ctx.Init(req, reader, nil)
	p.h(&ctx)
	return ctx.Response.StatusCode(), string(ctx.Response.Body())
}

func (p *pages) site(slug string, mutate func(*models.Site)) *models.Site {
	p.tb.Helper()
	st := &models.Site{TenantID: p.tenant, Name: "Site " + slug, Slug: slug, Description: "About " + slug, Status: models.SiteActive, IsPublic: true}
	if mutate != nil {
		mutate(st)
	}
	if err := p.d.DB.CreateSite(context.Background(), st); err != nil {
		p.tb.Fatal(err)
	}
	return st
}

func (p *pages) collection(siteID int64, title string) *models.Collection {
	p.tb.Helper()
	c := &models.Collection{TenantID: p.tenant, SiteID: siteID, Title: title}
	if err := p.d.DB.CreateCollection(context.Background(), c, nil); err != nil {
		p.tb.Fatal(err)
	}
	return c
}

func (p *pages) document(siteID, colID int64, title, content string) *models.Document {
	p.tb.Helper()
	doc := &models.Document{TenantID: p.tenant, SiteID: siteID, Title: title, Content: content, Author: "Ada",
		Status: models.DocPublished, Tags: "[]"}
	if colID != 0 {
		doc.CollectionID = &colID
	}
	if err := p.d.DB.CreateDocument(context.Background(), doc); err != nil {
		p.tb.Fatal(err)
	}
	return doc
}

// benchSite loads the reader benchmark's shape: docs published documents of
// about 4 KB over cols collections.
func (p *pages) benchSite(slug string, cols, docs int) (*models.Site, []int64) {
	st := p.site(slug, nil)
	colIDs := make([]int64, cols)
	for i := range colIDs {
		colIDs[i] = p.collection(st.ID, fmt.Sprintf("Chapter %d", i+1)).ID
	}
	para := strings.Repeat("Lore keeps the documents of a site and answers questions about them. ", 6)
	var ids []int64
	for i := 0; i < docs; i++ {
		title := fmt.Sprintf("Document number %d about things", i+1)
		var b strings.Builder
		b.WriteString("# " + title + "\n\n")
		for b.Len() < 4096 {
			fmt.Fprintf(&b, "## Section %d\n\n%s\n\n- one *item*\n- two `items`\n\n", b.Len(), para)
		}
		ids = append(ids, p.document(st.ID, colIDs[i%cols], title, b.String()).ID)
	}
	return st, ids
}

// BenchmarkReaderPages is one reader's page cost, on PostgreSQL as `make
// bench` runs it.
func BenchmarkReaderPages(b *testing.B) {
	p := newPages(b, "postgres")
	st, ids := p.benchSite("bench", 10, 200)
	for _, pg := range []struct{ name, path string }{
		{"home", "/"},
		{"site", "/s/" + st.Slug},
		{"doc", fmt.Sprintf("/s/%s/d/%d", st.Slug, ids[0])},
	} {
		b.Run(pg.name, func(b *testing.B) {
			if status, body := p.get(pg.path); status != 200 {
				b.Fatalf("%s: %d %s", pg.path, status, body)
			}
			for i := 0; i < b.N; i++ {
				path := pg.path
				if pg.name == "doc" { // a random document, as lorebench reads them
					path = fmt.Sprintf("/s/%s/d/%d", st.Slug, ids[i%len(ids)])
				}
				p.get(path)
			}
		})
	}
}

// want fails unless the page at path answers status and holds every one of
// has and none of hasNot.
func (p *pages) want(path string, status int, has, hasNot []string, headers ...string) string {
	p.tb.Helper()
	got, body := p.get(path, headers...)
	if got != status {
		p.tb.Fatalf("GET %s: %d, want %d:\n%s", path, got, status, body)
	}
	for _, s := range has {
		if !strings.Contains(body, s) {
			p.tb.Errorf("GET %s lacks %q:\n%s", path, s, body)
		}
	}
	for _, s := range hasNot {
		if strings.Contains(body, s) {
			p.tb.Errorf("GET %s shows %q:\n%s", path, s, body)
		}
	}
	return body
}

// oneDoc creates the site slug with one collection and one published
// document in it; docPath is the document's page.
func (p *pages) oneDoc(slug, col, title, content string) (st *models.Site, c *models.Collection, doc *models.Document, docPath string) {
	p.tb.Helper()
	st = p.site(slug, nil)
	c = p.collection(st.ID, col)
	doc = p.document(st.ID, c.ID, title, content)
	return st, c, doc, fmt.Sprintf("/s/%s/d/%d", slug, doc.ID)
}

func (p *pages) updateDoc(id int64, change func(*models.Document)) {
	p.tb.Helper()
	if _, _, err := p.d.DB.UpdateDocument(context.Background(), id, func(d *models.Document) error { change(d); return nil }); err != nil {
		p.tb.Fatal(err)
	}
}

// TestPagesFollowWrites: the cached pages (home, a site's front page, its
// sidebar, a document's rendered text) change as soon as what they show is
// written, and a document page counts each view.
func TestPagesFollowWrites(t *testing.T) {
	p := newPages(t, "sqlite")
	ctx := context.Background()
	st, col, doc, docPath := p.oneDoc("guide", "Basics", "First steps", "# First steps\n\nOpen the **reader**.")

	p.want("/", 200, []string{"Site guide", "About guide", "1 document"}, nil)
	p.want("/s/guide", 200, []string{"Basics", "First steps", docPath}, nil)
	p.want(docPath, 200, []string{"<strong>reader</strong>", "1 view<"}, nil)
	p.want(docPath, 200, []string{"2 views"}, nil) // each view counts, cached text or not

	// A new site is listed at once.
	p.site("other", nil)
	p.want("/", 200, []string{"Site guide", "Site other"}, nil)

	// The site renamed: home, front page and document page follow.
	st.Name, st.Description = "Field guide", "Everything outdoors"
	if err := p.d.DB.UpdateSite(ctx, st); err != nil {
		t.Fatal(err)
	}
	p.want("/", 200, []string{"Field guide", "Everything outdoors"}, []string{"About guide"})
	p.want("/s/guide", 200, []string{"Field guide", "Everything outdoors"}, []string{"Site guide"})
	p.want(docPath, 200, []string{"Field guide"}, []string{"Site guide"})

	// A document's title and text edited.
	p.updateDoc(doc.ID, func(d *models.Document) { d.Title, d.Content = "Getting started", "Open the *console*." })
	p.want("/s/guide", 200, []string{"Getting started"}, []string{"First steps"})
	p.want(docPath, 200, []string{"<em>console</em>", "Getting started"}, []string{"reader", "First steps"})

	// The tree: a new document, a collection renamed, a document unpublished.
	second := p.document(st.ID, col.ID, "Second steps", "More.")
	p.want("/", 200, []string{"2 documents"}, nil)
	p.want("/s/guide", 200, []string{"Second steps", fmt.Sprintf("/s/guide/d/%d", second.ID)}, nil)
	p.want(docPath, 200, []string{"Second steps"}, nil)
	title := "Essentials"
	if _, err := p.d.DB.UpdateCollection(ctx, col.ID, db.CollectionChange{Title: &title}); err != nil {
		t.Fatal(err)
	}
	p.want("/s/guide", 200, []string{"Essentials"}, []string{"Basics"})
	p.want(docPath, 200, []string{"Essentials"}, []string{"Basics"})
	p.updateDoc(second.ID, func(d *models.Document) { d.Status = models.DocDraft })
	p.want("/s/guide", 200, nil, []string{"Second steps"})
	p.want(docPath, 200, nil, []string{"Second steps"})
	p.want(fmt.Sprintf("/s/guide/d/%d", second.ID), 404, nil, []string{"Second steps"})
	p.want("/", 200, []string{"1 document<"}, nil)

	// The site taken down: nothing of it is served any more.
	st.Status = models.SiteInactive
	if err := p.d.DB.UpdateSite(ctx, st); err != nil {
		t.Fatal(err)
	}
	p.want("/", 200, []string{"Site other"}, []string{"Field guide"})
	p.want("/s/guide", 404, nil, []string{"Getting started"})
	p.want(docPath, 404, nil, []string{"console"})
}

// TestPagesKeepGatedSitesClosed: what was cached of a site while it was
// open is not shown once it is behind a password or private; a site behind
// a password shows its content to a visitor with access only, never from
// what another visitor was shown.
func TestPagesKeepGatedSitesClosed(t *testing.T) {
	p := newPages(t, "sqlite")
	ctx := context.Background()
	st, _, _, docPath := p.oneDoc("vault", "Plans", "Secret plan", "The code is **4711**.")
	secret := []string{"Secret plan", "4711", "Plans"}

	// Open: cached.
	p.want("/s/vault", 200, []string{"Secret plan"}, nil)
	p.want(docPath, 200, []string{"4711"}, nil)
	p.want("/", 200, []string{"Site vault"}, nil)

	// Behind a password: the gate, to a visitor without access.
	hash, err := api.HashPassword("open-sesame")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.d.DB.SetSitePassword(ctx, st.ID, hash); err != nil {
		t.Fatal(err)
	}
	gate := []string{`type="password"`}
	p.want("/s/vault", 200, gate, secret)
	p.want(docPath, 200, gate, secret)
	p.want("/s/vault/search?q=code", 200, gate, secret)
	p.want("/", 200, nil, []string{"Site vault"})
	cookie := fmt.Sprintf("lore_site_%d=", st.ID)
	p.want(docPath, 200, gate, secret, "Cookie", cookie+"not-a-token")

	// With access (the password's token), the content; without, the gate
	// again, whoever read it before.
	status, body := p.do("POST", "/v1/client/sites/vault/verify-password", `{"password":"open-sesame"}`)
	if status != 200 {
		t.Fatalf("verify-password: %d %s", status, body)
	}
	var tok struct {
		Data struct {
			AccessToken string `json:"access_token"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &tok); err != nil || tok.Data.AccessToken == "" {
		t.Fatalf("verify-password: %s", body)
	}
	access := []string{"Cookie", cookie + tok.Data.AccessToken}
	for range 2 {
		p.want("/s/vault", 200, []string{"Secret plan", "Plans"}, gate, access...)
		p.want(docPath, 200, []string{"4711", "Plans"}, gate, access...)
		p.want("/s/vault", 200, gate, secret)
		p.want(docPath, 200, gate, secret)
	}

	// The password changed: the old token no longer opens it.
	if hash, err = api.HashPassword("new-password"); err != nil {
		t.Fatal(err)
	}
	if err := p.d.DB.SetSitePassword(ctx, st.ID, hash); err != nil {
		t.Fatal(err)
	}
	p.want(docPath, 200, gate, secret, access...)

	// Open again, then private to its staff: not found for a visitor.
	if err := p.d.DB.ClearSitePassword(ctx, st.ID); err != nil {
		t.Fatal(err)
	}
	p.want(docPath, 200, []string{"4711"}, nil)
	p.want("/s/vault", 200, []string{"Secret plan"}, nil)
	st.IsPublic = false
	if err := p.d.DB.UpdateSite(ctx, st); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/s/vault", docPath} {
		if status, body := p.get(path); status == 200 || strings.Contains(body, "Secret plan") || strings.Contains(body, "4711") {
			t.Errorf("GET %s of a private site: %d\n%s", path, status, body)
		}
	}
}

// TestPagesUnderConcurrentWrites: readers and a writer at once; once the
// writes are done, every page shows the last one (no fill that raced a
// write was kept).
func TestPagesUnderConcurrentWrites(t *testing.T) {
	p := newPages(t, "sqlite")
	_, _, doc, docPath := p.oneDoc("busy", "Notes", "Version 0", "Text 0.")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			paths := []string{"/", "/s/busy", docPath}
			for n := i; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				if status, body := p.get(paths[n%len(paths)]); status != 200 {
					t.Errorf("GET %s: %d %s", paths[n%len(paths)], status, body)
					return
				}
			}
		}()
	}
	for v := 1; v <= 20; v++ {
		p.updateDoc(doc.ID, func(d *models.Document) {
			d.Title, d.Content = fmt.Sprintf("Version %d", v), fmt.Sprintf("Text %d.", v)
		})
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	p.want("/s/busy", 200, []string{"Version 20"}, []string{"Version 19"})
	p.want(docPath, 200, []string{"Version 20", "Text 20."}, []string{"Text 19."})
}
