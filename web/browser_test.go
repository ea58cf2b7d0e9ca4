package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/lorekb/lore/api"
	"github.com/lorekb/lore/internal/config"
	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/internal/testenv"
	"github.com/lorekb/lore/worker"
)

// requireBrowser: with LORE_REQUIRE_BROWSER=1 (CI) a missing browser or
// Temporal CLI fails the test; otherwise it is skipped with the reason.
func requireBrowser(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("LORE_REQUIRE_BROWSER") == "1" {
		t.Fatalf("%s (LORE_REQUIRE_BROWSER=1: install it, e.g. `apt-get install -y chromium`)", msg)
	}
	t.Skipf("%s; set LORE_REQUIRE_BROWSER=1 to make this a failure", msg)
}

// chromiumPath finds Debian's chromium (or another Chrome) on PATH, or
// $LORE_CHROMIUM.
func chromiumPath() string {
	if p := os.Getenv("LORE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// liveServer is Lore (API, worker, pages) on a real port, on SQLite and a
// Temporal dev server, as `make run` has it.
type liveServer struct {
	base  string
	token string
}

// startLive starts it; extra settings override the test's configuration.
func startLive(t *testing.T, extra ...map[string]string) *liveServer {
	t.Helper()
	tmp, err := testenv.StartTemporal()
	if err != nil {
		requireBrowser(t, "no Temporal dev server: %v", err)
	}
	t.Cleanup(tmp.Stop)
	env := map[string]string{
		"LORE_DATA_DIR": t.TempDir(), "DATABASE_URL": "", "TEMPORAL_ADDRESS": tmp.Addr,
		"TEMPORAL_TASK_QUEUE": fmt.Sprintf("web-browser-%d", time.Now().UnixNano()), "LORE_JWT_SECRET": "web-browser-secret-0123456789abcdef0123",
		"LORE_ADMIN_EMAIL": "admin@web.test", "LORE_ADMIN_PASSWORD": "admin-password",
	}
	for _, m := range extra {
		for k, v := range m {
			env[k] = v
		}
	}
	cfg, err := config.LoadFrom(config.MapSource(env))
	if err != nil {
		t.Fatal(err)
	}
	d, err := deps.Open(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	if err := api.Bootstrap(context.Background(), d, io.Discard); err != nil {
		t.Fatal(err)
	}
	w, err := worker.New(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = w.Run() }()
	t.Cleanup(w.Stop)
	srv := api.New(d)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.App().Listener(ln) }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	ls := &liveServer{base: "http://" + ln.Addr().String()}
	var login struct {
		Token string `json:"token"`
	}
	ls.call(t, "POST", "/admin/api/v1/users:login", map[string]string{"email": "admin@web.test", "password": "admin-password"}, &login)
	ls.token = login.Token
	return ls
}

// css selects by a CSS selector, for chromedp's query options.
func css(sel string) chromedp.CSS { return chromedp.CSS(sel) }

// created is the part of a created item the tests use: its id.
type created struct {
	ID int64 `json:"id"`
}

// create POSTs an item to the admin API and returns its id.
func (ls *liveServer) create(t *testing.T, path string, body any) created {
	t.Helper()
	var out created
	ls.call(t, "POST", path, body, &out)
	return out
}

// send sends an admin API request (JSON body, with token when there is
// one) and answers its status and body.
func (ls *liveServer) send(t *testing.T, token, method, path string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, ls.base+path, rd)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, raw
}

// call sends an admin API request with the admin's token and decodes the
// envelope's data.
func (ls *liveServer) call(t *testing.T, method, path string, body, out any) {
	t.Helper()
	code, raw := ls.send(t, ls.token, method, path, body)
	if code >= 300 {
		t.Fatalf("%s %s: %d %s", method, path, code, raw)
	}
	if out != nil {
		var env struct {
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(raw, &env); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(env.Data, out); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
	}
}

// TestBrowserReaderAndChat drives a real Chromium against a live server:
// the site list, a site, a document, then a chat question answered with a
// clickable citation and its sources, a click on the citation (the chat
// comes back on the cited page), feedback, a follow-up in the thread, the
// visitor's own conversations (empty at first, then the thread, which opens
// again after a new chat; newest first), and Stop right after a question.
func TestBrowserReaderAndChat(t *testing.T) {
	b, check := openChromium(t, 1400, 1000, false)
	ls := startLive(t)

	var st struct {
		ID   int64  `json:"id"`
		Slug string `json:"slug"`
	}
	ls.call(t, "POST", "/admin/api/v1/sites", map[string]any{"name": "Field Guide", "slug": "field-guide",
		"description": "Everything about the garden.", "quick_questions": []map[string]string{{"text": "How often should I water tomatoes?"}}}, &st)
	col := ls.create(t, "/admin/api/v1/collections", map[string]any{"title": "Vegetables", "site_id": st.ID})
	newDoc := func(title, content string) int64 {
		d := ls.create(t, "/admin/api/v1/documents", map[string]any{"title": title, "site_id": st.ID, "collection_id": col.ID,
			"author": "Gardener", "status": "published", "content": content})
		return d.ID
	}
	tomatoes := newDoc("Growing tomatoes", "# Growing tomatoes\n\nTomatoes need at least six hours of direct sun every day.\n\n"+
		"## Watering\n\nWater tomatoes deeply twice a week, in the morning, so the soil stays evenly moist.\n\n"+
		"Stake the plants when they are a foot tall.\n\n<script>window.__pwned = 1</script>\n\n<img src=x onerror=\"window.__pwned = 2\">")
	carrots := newDoc("Sowing carrots", "# Sowing carrots\n\nSow carrot seeds a quarter inch deep in loose, sandy soil. "+
		"Thin the seedlings to two inches apart once they sprout.")
	for _, id := range []int64{tomatoes, carrots} {
		deadline := time.Now().Add(90 * time.Second)
		for {
			var d struct {
				VectorStatus string `json:"vector_status"`
				VectorError  string `json:"vector_error"`
			}
			ls.call(t, "GET", fmt.Sprintf("/admin/api/v1/documents/%d", id), nil, &d)
			if d.VectorStatus == "completed" {
				break
			}
			if d.VectorStatus == "failed" || time.Now().After(deadline) {
				t.Fatalf("document %d: vector_status %s %s", id, d.VectorStatus, d.VectorError)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	// The site list, then the site.
	b.do("open /", chromedp.Navigate(ls.base+"/"),
		chromedp.WaitVisible(css(`#sites a[href="/s/field-guide"]`)),
		chromedp.Click(css(`#sites a[href="/s/field-guide"]`)),
		chromedp.WaitVisible(css(`.sidebar`)))
	if h := b.text(`main h1`); h != "Field Guide" {
		t.Fatalf("site heading %q", h)
	}
	// A document from the tree.
	b.do("open a document", chromedp.Click(css(fmt.Sprintf(`.sidebar a[href="/s/field-guide/d/%d"]`, tomatoes))),
		chromedp.WaitVisible(css(fmt.Sprintf(`article.doc[data-doc-id="%d"]`, tomatoes))))
	title, views, body := b.text(`article.doc > h1`), b.text(`#views`), b.text(`#content`)
	if title != "Growing tomatoes" || !strings.Contains(views, "view") || !strings.Contains(body, "Water tomatoes deeply") {
		t.Fatalf("document page: title %q, views %q, body %q", title, views, body)
	}
	if evalJS[bool](b, `window.__pwned !== undefined`) {
		t.Fatalf("a script of the document ran")
	}

	// The visitor has no conversations yet.
	b.do("empty list", chromedp.Click(css(`#chat-toggle`)),
		chromedp.WaitVisible(css(`#chat-input`)),
		chromedp.Click(css(`#chat-history summary`)),
		chromedp.WaitVisible(css(`#chat-sessions-empty`)),
		chromedp.Click(css(`#chat-history summary`)))

	// Ask the chat; the answer cites the document.
	b.do("ask the chat",
		chromedp.SendKeys(css(`#chat-input`), "How often should I water tomatoes?"),
		chromedp.Click(css(`#chat-send`)),
		chromedp.WaitVisible(css(`#chat-log .msg.assistant .answer a.cite`)),
		chromedp.WaitVisible(css(`#chat-log .msg.assistant .feedback button`)))
	answer := b.text(`#chat-log .msg.assistant .answer`)
	sources := evalJS[[]string](b, `Array.from(document.querySelectorAll("#chat-log .msg.assistant .sources a")).map(a => a.textContent)`)
	if !strings.Contains(strings.ToLower(answer), "water") || !strings.Contains(answer, "[1]") {
		t.Fatalf("answer %q", answer)
	}
	if len(sources) == 0 || sources[0] != "Growing tomatoes" {
		t.Fatalf("sources %q", sources)
	}
	if steps := b.text(`#chat-log .msg.assistant .steps`); !strings.Contains(steps, "Searched") {
		t.Errorf("search step %q", steps)
	}
	if cite := b.attr(`#chat-log .msg.assistant .answer a.cite`, "href"); cite != fmt.Sprintf("/s/field-guide/d/%d?section=Watering", tomatoes) {
		t.Fatalf("citation links to %q", cite)
	}

	// Thumbs up.
	b.do("feedback", chromedp.Click(css(`#chat-log .msg.assistant .feedback button[data-rating="up"]`)),
		chromedp.WaitVisible(css(`#chat-log .msg.assistant .feedback button[aria-pressed="true"]`)))
	if thanks := b.text(`#chat-log .msg.assistant .feedback span`); !strings.Contains(thanks, "Thanks") {
		t.Errorf("feedback status %q", thanks)
	}

	// On another page the thread comes back; its citation opens the cited page.
	b.do("open the carrots page", chromedp.Navigate(fmt.Sprintf("%s/s/field-guide/d/%d", ls.base, carrots)),
		chromedp.WaitVisible(css(`#chat-log .msg.assistant .answer a.cite`)),
		chromedp.Click(css(`#chat-log .msg.assistant .answer a.cite`)),
		chromedp.WaitVisible(css(fmt.Sprintf(`article.doc[data-doc-id="%d"]`, tomatoes))))
	if title := b.text(`article.doc > h1`); title != "Growing tomatoes" {
		t.Fatalf("the citation opened %q", title)
	}
	// at the cited section: its heading marked, its anchor in the address
	if at := evalJS[string](b, `(document.querySelector("#content h2.cited") || {}).textContent + " " + location.hash`); at != "Watering #watering" {
		t.Fatalf("the citation opened the page at %q", at)
	}

	// A follow-up in the same thread.
	key := fmt.Sprintf(`sessionStorage.getItem("lore.thread.site-%d")`, st.ID)
	b.do("history", chromedp.WaitVisible(css(`#chat-log .msg.assistant .answer a.cite`)))
	thread1 := evalJS[string](b, key)
	b.do("follow-up", chromedp.SendKeys(css(`#chat-input`), "How deep should carrot seeds be sown?"),
		chromedp.Click(css(`#chat-send`)),
		chromedp.WaitVisible(css(`#chat-log .msg.assistant:nth-of-type(4) .feedback button`)))
	answers := evalJS[int](b, `document.querySelectorAll("#chat-log .msg.assistant").length`)
	thread2 := evalJS[string](b, key)
	if answers != 2 || thread1 == "" || thread1 != thread2 {
		t.Fatalf("follow-up: %d answers, thread %q then %q", answers, thread1, thread2)
	}
	if a := b.text(`#chat-log .msg.assistant:nth-of-type(4) .answer`); !strings.Contains(strings.ToLower(a), "carrot") {
		t.Errorf("follow-up answer %q", a)
	}

	// Your conversations: after a new chat, the thread is listed and a click
	// shows it again.
	b.do("new chat", chromedp.Click(css(`#chat-new`)))
	if n := evalJS[int](b, `document.querySelectorAll("#chat-log .msg").length`); n != 0 {
		t.Fatalf("a new chat shows %d messages", n)
	}
	listed := `Array.from(document.querySelectorAll("#chat-sessions button.session")).map(b => b.dataset.threadId)`
	entry := fmt.Sprintf(`#chat-sessions button.session[data-thread-id=%q]`, thread1)
	b.do("list the conversations", chromedp.Click(css(`#chat-history summary`)), chromedp.WaitVisible(css(entry)))
	if ids := evalJS[[]string](b, listed); len(ids) != 1 || ids[0] != thread1 {
		t.Fatalf("listed %q, want [%s]", ids, thread1)
	}
	if title := b.text(entry + " .title"); title != "How often should I water tomatoes?" {
		t.Errorf("listed title %q", title)
	}
	if evalJS[bool](b, `!document.getElementById("chat-sessions-empty").hidden`) {
		t.Errorf("the empty state shows beside a conversation")
	}
	b.do("reopen the conversation", chromedp.Click(css(entry)),
		chromedp.WaitVisible(css(`#chat-log .msg.assistant:nth-of-type(4) .feedback button`)))
	if a := b.text(`#chat-log .msg.assistant:nth-of-type(2) .answer`); !strings.Contains(strings.ToLower(a), "water") || !strings.Contains(a, "[1]") {
		t.Errorf("reopened answer %q", a)
	}
	if q := b.text(`#chat-log .msg.user`); q != "How often should I water tomatoes?" {
		t.Errorf("reopened question %q", q)
	}
	if n, th := evalJS[int](b, `document.querySelectorAll("#chat-log .msg.assistant").length`), evalJS[string](b, key); n != 2 || th != thread1 {
		t.Fatalf("reopened: %d answers, thread %q", n, th)
	}

	// A second conversation is listed first.
	b.do("second conversation", chromedp.Click(css(`#chat-new`)),
		chromedp.SendKeys(css(`#chat-input`), "How much sun do tomatoes need?"),
		chromedp.Click(css(`#chat-send`)),
		chromedp.WaitVisible(css(`#chat-log .msg.assistant .feedback button`)),
		chromedp.Click(css(`#chat-history summary`)),
		chromedp.WaitVisible(css(`#chat-sessions li:nth-child(2) button.session`)))
	thread3 := evalJS[string](b, key)
	if ids := evalJS[[]string](b, listed); len(ids) != 2 || thread3 == thread1 || ids[0] != thread3 || ids[1] != thread1 {
		t.Fatalf("listed %q, want [%s %s]", ids, thread3, thread1)
	}
	if cur := b.attr(`#chat-sessions li:nth-child(1) button.session`, "aria-current"); cur != "true" {
		t.Errorf("the open conversation is not marked current (%q)", cur)
	}

	// Stop right after sending: the panel is idle again.
	b.do("stop", chromedp.Click(css(`#chat-new`)),
		chromedp.Evaluate[chromedp.Void](`document.getElementById("chat-input").value = "What is mulch?";
			document.getElementById("chat-send").click();
			document.getElementById("chat-stop").click();`),
		chromedp.WaitVisible(css(`#chat-log .msg.assistant .notice`)))
	if n := b.text(`#chat-log .msg.assistant .notice`); n != "Stopped." {
		t.Errorf("after Stop the notice is %q", n)
	}
	if !evalJS[bool](b, `document.getElementById("chat-stop").hidden && !document.getElementById("chat-send").disabled`) {
		t.Errorf("after Stop the panel is not idle")
	}
	check()
}

// openChromium starts a headless Chromium of the given window size (the
// test is skipped, or fails with LORE_REQUIRE_BROWSER=1, without one);
// check fails the test with the script and console errors the pages
// reported (CSP violations among them) and, unless httpErrors, the failed
// loads (a test that provokes refusals or cut streams passes true).
func openChromium(t *testing.T, width, height int, httpErrors bool) (b *browser, check func()) {
	t.Helper()
	chromium := chromiumPath()
	if chromium == "" {
		requireBrowser(t, "no chromium on PATH")
	}
	if testing.Short() {
		t.Skip("-short: no browser test")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("lang", "en-US"),
		chromedp.WindowSize(width, height))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	t.Cleanup(func() { cancel(); cancelCtx(); cancelAlloc() })
	var mu sync.Mutex
	var problems []string
	if err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			d := e.ExceptionDetails
			desc := ""
			if d.Exception != nil {
				desc = d.Exception.Description
			}
			problems = append(problems, fmt.Sprintf("exception: %s %s (%s:%d)", d.Text, desc, d.URL, d.LineNumber+1))
		case *cdplog.EventEntryAdded:
			if e.Entry.Level == cdplog.EntryLevelError && (!httpErrors || e.Entry.Source != cdplog.EntrySourceNetwork) {
				problems = append(problems, "log: "+e.Entry.Text+" "+e.Entry.URL)
			}
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError {
				var parts []string
				for _, a := range e.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				problems = append(problems, "console.error: "+strings.Join(parts, " "))
			}
		}
	}); err != nil {
		t.Fatalf("start chromium (%s): %v", chromium, err)
	}
	b = &browser{t: t, ctx: ctx}
	return b, func() {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		if len(problems) > 0 {
			t.Fatalf("the pages reported errors:\n%s", strings.Join(problems, "\n"))
		}
	}
}

// browser runs steps in the test's tab and fails the test with the page's
// HTML when one fails.
type browser struct {
	t   *testing.T
	ctx context.Context
}

func (b *browser) fail(what string, err error) {
	b.t.Helper()
	hctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	html, _ := chromedp.Run(hctx, chromedp.OuterHTML(chromedp.CSS("body")))
	b.t.Fatalf("%s: %v\npage:\n%s", what, err, html)
}

func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.fail(what, err)
	}
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.fail("text of "+sel, err)
	}
	return strings.TrimSpace(v)
}

func (b *browser) attr(sel, name string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.AttributeValue(chromedp.CSS(sel), name))
	if err != nil {
		b.fail(name+" of "+sel, err)
	}
	return v.Value
}

func evalJS[T any](b *browser, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.fail("evaluate "+expr, err)
	}
	return v
}
