package api

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// webPage fetches a page of the built-in web face and checks it is HTML
// with the page headers (CSP without inline script).
func webPage(h *harness, status int, path string, headers ...string) *resp {
	h.t.Helper()
	r := h.do("GET", path, nil, "", headers...)
	if r.Status != status {
		h.t.Fatalf("GET %s: %d, want %d: %s", path, r.Status, status, r.Raw)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		h.t.Fatalf("GET %s: Content-Type %q", path, ct)
	}
	if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		h.t.Fatalf("GET %s: CSP %q", path, csp)
	}
	return r
}

// TestWebReader serves the reader through the real server: the site list,
// a site's tree, a document page with its view count, keyword search, the
// assets, HTML 404s for unknown pages, and JSON 404s for everything that is
// not a page.
func TestWebReader(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	st := kbSite(h, "Handbook")
	hidden := kbSite(h, "Backstage")
	kbSetSite(h, hidden.ID, "is_public = ?", false)
	col := kbCollection(h, st.ID, nil, "Getting started")
	sub := kbCollection(h, st.ID, &col.ID, "Install")
	doc := kbDocument(h, map[string]any{"title": "Installing Lore", "site_id": st.ID, "collection_id": sub.ID, "author": "Ada",
		"status": "published", "tags": []string{"setup"},
		"content": "# Install\n\nRun **make run** and open the reader.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```go\nfmt.Println(1)\n```\n"})
	kbDocument(h, map[string]any{"title": "Secret draft", "site_id": st.ID, "collection_id": col.ID, "author": "Ada", "content": "draft"})

	home := string(webPage(h, 200, "/").Raw)
	for _, want := range []string{`href="/s/handbook"`, "Handbook", "/ui/assets/app.js", `id="chat"`, `id="chat-sessions"`, "Your conversations"} {
		if !strings.Contains(home, want) {
			t.Errorf("/ lacks %q:\n%s", want, home)
		}
	}
	if strings.Contains(home, "Backstage") {
		t.Errorf("/ lists a private site")
	}
	if r := string(webPage(h, 200, "/?q=nothing-like-it").Raw); strings.Contains(r, "/s/handbook") {
		t.Errorf("/?q= does not filter")
	}

	site := string(webPage(h, 200, "/s/handbook").Raw)
	for _, want := range []string{"Getting started", "Install", "Installing Lore", fmt.Sprintf(`href="/s/handbook/d/%d"`, doc.ID),
		`action="/s/handbook/search"`, fmt.Sprintf(`data-site-id="%d"`, st.ID)} {
		if !strings.Contains(site, want) {
			t.Errorf("/s/handbook lacks %q", want)
		}
	}
	if strings.Contains(site, "Secret draft") {
		t.Errorf("the site page shows a draft")
	}

	path := fmt.Sprintf("/s/handbook/d/%d", doc.ID)
	page := string(webPage(h, 200, path).Raw)
	for _, want := range []string{"<h1>Installing Lore</h1>", `<h1 id="install">Install</h1>`, "<strong>make run</strong>", "<table>", `class="language-go"`,
		`id="views"`, "Getting started", "setup", `aria-current="page"`} {
		if !strings.Contains(page, want) {
			t.Errorf("%s lacks %q:\n%s", path, want, page)
		}
	}
	flushViews(h)
	var views struct {
		Views int64 `json:"views"`
	}
	h.must(200, "GET", fmt.Sprintf("%s/documents/%d", clientPath, doc.ID), nil, "").into(t, &views)
	if views.Views < 1 {
		t.Errorf("the page read recorded no view: %d", views.Views)
	}
	flushViews(h)
	page = string(webPage(h, 200, path).Raw)
	if !regexp.MustCompile(`id="views">[1-9][0-9]* views?<`).MatchString(page) {
		t.Errorf("the page shows no view count: %s", page)
	}

	found := string(webPage(h, 200, "/s/handbook/search?q="+url.QueryEscape("make run")).Raw)
	if !strings.Contains(found, "Installing Lore") || !strings.Contains(found, "1 result") {
		t.Errorf("search: %s", found)
	}
	if none := string(webPage(h, 200, "/s/handbook/search?q=zebra").Raw); !strings.Contains(none, "0 results") {
		t.Errorf("search without hits: %s", none)
	}

	// A document of another site, or none, is a 404 page.
	other := kbSite(h, "Other")
	kbCollection(h, other.ID, nil, "X")
	webPage(h, 404, fmt.Sprintf("/s/other/d/%d", doc.ID))
	webPage(h, 404, "/s/handbook/d/999999")
	webPage(h, 404, "/s/no-such-site")

	// Citations by ids land on the page.
	r := h.do("GET", fmt.Sprintf("/go/%d/%d", st.ID, doc.ID), nil, "")
	if r.Status != 302 || r.Header.Get("Location") != path {
		t.Errorf("/go: %d %q", r.Status, r.Header.Get("Location"))
	}

	for _, a := range []struct{ path, ct string }{{"/ui/assets/chat.js", "javascript"}, {"/ui/assets/sse.js", "javascript"},
		{"/ui/assets/app.css", "text/css"}} {
		r := h.do("GET", a.path, nil, "")
		if r.Status != 200 || !strings.Contains(r.Header.Get("Content-Type"), a.ct) {
			t.Errorf("%s: %d %q", a.path, r.Status, r.Header.Get("Content-Type"))
		}
	}

	// Everything else is the API's JSON 404 (the docs stay).
	for _, p := range []string{"/v1/nope", "/admin/api/v1/nope", "/chat", "/nope", "/ui/assets/nope.js", "/s", "/v1/s/handbook"} {
		r := h.do("GET", p, nil, "")
		if r.Status != 404 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") || r.Code != 404 {
			t.Errorf("GET %s: %d %q %s", p, r.Status, r.Header.Get("Content-Type"), r.Raw)
		}
	}
	if r := h.do("GET", "/docs", nil, ""); r.Status != 200 || !strings.Contains(string(r.Raw), "swagger") {
		t.Errorf("/docs: %d", r.Status)
	}
	h.must(200, "GET", clientPath+"/health", nil, "")
}

// TestWebSanitizedDocument: a document full of script, event handlers and
// javascript:/data: links renders none of them; images go through the file
// route, and an image elsewhere becomes a link.
func TestWebSanitizedDocument(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	st := kbSite(h, "Evil")
	col := kbCollection(h, st.ID, nil, "Traps")
	content := strings.Join([]string{
		"# Traps",
		"<script>alert('s1')</script>",
		"<SCRIPT SRC=//evil.example/x.js></SCRIPT>",
		`<img src="x" onerror="alert('s2')">`,
		`<p onclick="alert('s3')" style="color:red">para</p>`,
		"[js link](javascript:alert('s4'))",
		`<a href="javascript:alert('s5')">raw js</a>`,
		`<a href="JaVaScRiPt:alert('s6')">mixed case</a>`,
		"[data link](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
		`<a href="data:text/html,<script>alert(1)</script>">raw data</a>`,
		`<iframe src="https://evil.example"></iframe>`,
		`<svg onload="alert('s7')"><circle r="1"/></svg>`,
		`<form action="https://evil.example"><input name="q"></form>`,
		`<style>body{display:none}</style>`,
		`<object data="x.swf"></object><embed src="x.swf">`,
		`<meta http-equiv="refresh" content="0;url=https://evil.example">`,
		"![pic](uploads/cat.png)",
		"![abs](http://lore.example/v1/files/uploads/dog.png:download)",
		`<img src="/v1/files/uploads/bird%20one.png:download" alt="bird">`,
		"![remote](https://images.example/remote.png)",
		"![inline](data:image/png;base64,iVBORw0KGgo=)",
		"[fine link](https://example.com/page) and [local](/s/evil)",
		"`<script>in code</script>`",
	}, "\n\n")
	doc := kbDocument(h, map[string]any{"title": "Traps", "site_id": st.ID, "collection_id": col.ID, "author": "Mallory",
		"status": "published", "content": content})
	page := string(webPage(h, 200, fmt.Sprintf("/s/evil/d/%d", doc.ID)).Raw)
	start := strings.Index(page, `<div class="markdown" id="content">`)
	end := strings.Index(page, "</article>")
	if start < 0 || end < start {
		t.Fatalf("no document body:\n%s", page)
	}
	body := page[start:end]
	lower := strings.ToLower(body)
	for _, bad := range []string{"<script", "onerror", "onclick", "onload", "javascript:", "data:", "<iframe", "<svg",
		"<form", "<style", "<object", "<embed", "<meta", "evil.example", "style="} {
		if strings.Contains(lower, bad) {
			t.Errorf("rendered document contains %q:\n%s", bad, body)
		}
	}
	if strings.Contains(lower, "alert(") && !strings.Contains(body, "&lt;script&gt;in code&lt;/script&gt;") {
		t.Errorf("script text survived outside code:\n%s", body)
	}
	for _, want := range []string{
		`src="/v1/files/uploads/cat.png:download"`,
		`src="/v1/files/uploads/dog.png:download"`,
		`src="/v1/files/uploads/bird%20one.png:download"`,
		`href="https://images.example/remote.png"`,
		`href="https://example.com/page"`,
		`href="/s/evil"`,
		"&lt;script&gt;in code&lt;/script&gt;",
		"para",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("rendered document lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, `src="https://images.example`) {
		t.Errorf("a remote image is loaded:\n%s", body)
	}
	// The title is text too.
	evil := kbDocument(h, map[string]any{"title": `<img src=x onerror=alert(1)>`, "site_id": st.ID, "collection_id": col.ID,
		"author": "M", "status": "published", "content": "x"})
	if p := string(webPage(h, 200, fmt.Sprintf("/s/evil/d/%d", evil.ID)).Raw); strings.Contains(p, "<img src=x") {
		t.Errorf("the title is not escaped")
	}
}

// TestWebPasswordGate: a site behind a password shows the gate; a wrong
// password says so, the right one sets the access token cookie and opens the
// tree and documents; a stale token asks again.
func TestWebPasswordGate(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	st := kbSite(h, "Vault")
	col := kbCollection(h, st.ID, nil, "Gold")
	doc := kbDocument(h, map[string]any{"title": "Bars", "site_id": st.ID, "collection_id": col.ID, "author": "A",
		"status": "published", "content": "shiny"})
	h.must(200, "PUT", fmt.Sprintf("%s/sites/%d/password", adminPath, st.ID), map[string]any{"password": "open-sesame"}, h.admin)

	gate := string(webPage(h, 200, fmt.Sprintf("/s/vault/d/%d", doc.ID)).Raw)
	if !strings.Contains(gate, `id="gate-form"`) || strings.Contains(gate, "shiny") || strings.Contains(gate, "Gold") ||
		strings.Contains(gate, `id="chat"`) {
		t.Fatalf("gate:\n%s", gate)
	}
	post := func(pw string) *resp {
		return h.do("POST", fmt.Sprintf("/s/vault/unlock?next=/s/vault/d/%d", doc.ID), "password="+url.QueryEscape(pw), "",
			"Content-Type", "application/x-www-form-urlencoded")
	}
	if r := post("wrong"); r.Status != 200 || !strings.Contains(string(r.Raw), "Wrong password") || r.Header.Get("Set-Cookie") != "" {
		t.Fatalf("wrong password: %d %v %s", r.Status, r.Header, r.Raw)
	}
	r := post("open-sesame")
	if r.Status != 303 || r.Header.Get("Location") != fmt.Sprintf("/s/vault/d/%d", doc.ID) {
		t.Fatalf("right password: %d %v %s", r.Status, r.Header, r.Raw)
	}
	ck := r.Header.Get("Set-Cookie")
	m := regexp.MustCompile(fmt.Sprintf(`lore_site_%d=([^;]+)`, st.ID)).FindStringSubmatch(ck)
	if m == nil || !strings.Contains(strings.ToLower(ck), "httponly") {
		t.Fatalf("cookie: %q", ck)
	}
	cookie := fmt.Sprintf("lore_site_%d=%s", st.ID, m[1])
	page := string(webPage(h, 200, fmt.Sprintf("/s/vault/d/%d", doc.ID), "Cookie", cookie).Raw)
	if !strings.Contains(page, "shiny") || !strings.Contains(page, "Gold") || !strings.Contains(page, `name="lore-site-token"`) {
		t.Fatalf("unlocked page:\n%s", page)
	}
	// A new password revokes the token: the gate comes back.
	h.must(200, "PUT", fmt.Sprintf("%s/sites/%d/password", adminPath, st.ID), map[string]any{"password": "new-secret"}, h.admin)
	again := webPage(h, 200, "/s/vault", "Cookie", cookie)
	if !strings.Contains(string(again.Raw), "expired") || !strings.Contains(again.Header.Get("Set-Cookie"), "lore_site_") {
		t.Fatalf("stale token: %v %s", again.Header, again.Raw)
	}
}

func flushViews(h *harness) {
	h.t.Helper()
	if err := h.s.FlushViews(context.Background()); err != nil {
		h.t.Fatal(err)
	}
}
