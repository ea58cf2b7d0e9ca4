package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/cache"
	"github.com/lorekb/lore/internal/chatbudget"
	"github.com/lorekb/lore/internal/db/dbtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearerTransport adds the API key to every request of the MCP client.
type bearerTransport struct{ key string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.key != "" {
		r.Header.Set("Authorization", "Bearer "+b.key)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// mcpConnect opens an MCP session to base/mcp with the SDK's own client.
func mcpConnect(ctx context.Context, base, key string, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "lore-test", Version: "1"}, opts)
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearerTransport{key}, Timeout: 2 * time.Minute}}, nil)
}

// mcpCall calls a tool and decodes its structured result into out (when
// the call succeeded); it returns the result and its text.
func mcpCall(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) (*mcp.CallToolResult, string) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	var text string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text += tc.Text
		}
	}
	if !res.IsError && out != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: decode %s: %v", name, b, err)
		}
	}
	return res, text
}

// mcpToolRefused asserts a tool error whose text contains want.
func mcpToolRefused(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, want string) {
	t.Helper()
	res, text := mcpCall(t, cs, name, args, nil)
	if !res.IsError || !strings.Contains(text, want) {
		t.Errorf("%s %s: isError %v %q, want an error with %q", name, truncate(fmt.Sprint(args), 80), res.IsError, text, want)
	}
}

// logBuffer collects the server's JSON log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) records(msg string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(l.buf.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// TestMCPScopeBoundsAndRefusals drives /mcp with the SDK's client, without
// a workflow engine: keys of one site see its published documents only;
// missing, unknown and revoked keys are refused with a message; oversize or
// unknown arguments are tool errors naming the bound; every call is logged
// with its key's id; the site's rate limit and daily token budget apply.
func TestMCPScopeBoundsAndRefusals(t *testing.T) {
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) { testMCPScope(t, dialect) })
	}
}

func testMCPScope(t *testing.T, dialect string) {
	h := newHarness(t, dialect, map[string]string{"LORE_CHAT_RATE_PER_IP": "40", "LORE_CHAT_DAILY_TOKEN_BUDGET": "1000"})
	logs := &logBuffer{}
	h.s.log = slog.New(slog.NewJSONHandler(logs, nil))
	base := "http://" + serveTCP(t, h)
	ctx := t.Context()
	site := func(name string) int64 {
		var s struct{ ID int64 }
		h.must(201, "POST", adminPath+"/sites", map[string]any{"name": name}, h.admin).into(t, &s)
		return s.ID
	}
	a, b := site("MCP A"), site("MCP B")
	var col, colB struct{ ID int64 }
	h.must(201, "POST", adminPath+"/collections", map[string]any{"site_id": a, "title": "Guides"}, h.admin).into(t, &col)
	h.must(201, "POST", adminPath+"/collections", map[string]any{"site_id": b, "title": "Other"}, h.admin).into(t, &colB)
	doc := func(site int64, title, content, status string, col int64) int64 {
		body := map[string]any{"site_id": site, "title": title, "content": content, "status": status}
		if col > 0 {
			body["collection_id"] = col
		}
		var d struct{ ID int64 }
		h.must(201, "POST", adminPath+"/documents", body, h.admin).into(t, &d)
		return d.ID
	}
	long := "# Long\n\n" + strings.Repeat("Lore keeps every page. ", 3000) // past one read_document call
	install := doc(a, "Installing Lore", "# Installing Lore\n\nDownload the archive and run make run.", "published", col.ID)
	longDoc := doc(a, "Long page", long, "published", 0)
	draft := doc(a, "Roadmap draft", "# Roadmap\n\nThe zeppelin ships next year.", "draft", 0)
	other := doc(b, "Other site page", "# Other\n\nDownload the archive elsewhere.", "published", 0)
	key := func(site int64) APIKeyCreated {
		var k APIKeyCreated
		h.must(201, "POST", adminPath+"/sites/"+itoa(site)+"/api-keys", map[string]any{"name": "agent"}, h.admin).into(t, &k)
		return k
	}
	keyA, keyB, keyRevoked := key(a), key(b), key(a)

	cs, err := mcpConnect(ctx, base, keyA.Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "ask,list_documents,read_document,search" {
		t.Fatalf("tools %v", names)
	}
	for _, tl := range tools.Tools {
		schema, _ := json.Marshal(tl.InputSchema)
		if tl.Name == "search" && !strings.Contains(string(schema), `"maxLength":2000`) {
			t.Errorf("search input schema without its bound: %s", schema)
		}
		if tl.OutputSchema == nil || tl.Description == "" {
			t.Errorf("%s: no output schema or description", tl.Name)
		}
	}

	// Published documents of the key's site only.
	var list ListDocumentsResult
	mcpCall(t, cs, "list_documents", nil, &list)
	if list.Total != 2 || len(list.Documents) != 2 || list.HasMore {
		t.Fatalf("list: %+v", list)
	}
	for _, d := range list.Documents {
		if d.ID != install && d.ID != longDoc {
			t.Fatalf("list shows %d (draft %d, other site %d)", d.ID, draft, other)
		}
	}
	mcpCall(t, cs, "list_documents", map[string]any{"collection_id": col.ID}, &list)
	if len(list.Documents) != 1 || list.Documents[0].ID != install || list.Documents[0].Collection != "Guides" {
		t.Fatalf("collection list: %+v", list)
	}
	mcpCall(t, cs, "list_documents", map[string]any{"keyword": "archive", "size": 1}, &list)
	if len(list.Documents) != 1 || list.Documents[0].ID != install || list.Total != 1 {
		t.Fatalf("keyword list: %+v", list)
	}
	mcpCall(t, cs, "list_documents", map[string]any{"size": 1, "page": 2}, &list)
	if len(list.Documents) != 1 || list.Total != 2 || list.HasMore || list.Page != 2 {
		t.Fatalf("page 2: %+v", list)
	}
	mcpToolRefused(t, cs, "list_documents", map[string]any{"collection_id": colB.ID}, "collection_id: collection "+itoa(colB.ID)+" is not in this site")

	var rd ReadDocumentResult
	mcpCall(t, cs, "read_document", map[string]any{"id": install}, &rd)
	if rd.Title != "Installing Lore" || !strings.Contains(rd.Content, "run make run") || rd.Collection != "Guides" || rd.NextOffset != nil {
		t.Fatalf("read: %+v", rd)
	}
	mcpCall(t, cs, "read_document", map[string]any{"id": longDoc}, &rd)
	if rd.NextOffset == nil || *rd.NextOffset != mcpReadChars || rd.TotalChars != len([]rune(long)) {
		t.Fatalf("long read: offset %v of %d", rd.NextOffset, rd.TotalChars)
	}
	first := rd.Content
	mcpCall(t, cs, "read_document", map[string]any{"id": longDoc, "offset": *rd.NextOffset}, &rd)
	if first+rd.Content != long || rd.NextOffset != nil {
		t.Fatalf("the two parts are not the document (%d + %d of %d characters)", len(first), len(rd.Content), len(long))
	}
	for _, id := range []int64{draft, other, 999999} {
		mcpToolRefused(t, cs, "read_document", map[string]any{"id": id}, "not found")
	}

	// Bounds and argument types are tool errors naming the argument.
	mcpToolRefused(t, cs, "search", map[string]any{"query": strings.Repeat("é", maxRetrieveQuery+1)}, "query: at most 2000 characters")
	mcpToolRefused(t, cs, "search", map[string]any{"query": "  "}, "query: must not be empty")
	mcpToolRefused(t, cs, "search", map[string]any{"query": "install", "top_k": 51}, "top_k: must be from 1 to 50")
	mcpToolRefused(t, cs, "search", map[string]any{"query": "install", "top_k": "ten"}, "top_k: must be an integer")
	mcpToolRefused(t, cs, "search", map[string]any{"query": "install", "k": 3}, `search takes no argument "k" (its arguments: query, top_k)`)
	mcpToolRefused(t, cs, "ask", map[string]any{"question": strings.Repeat("a", 8001)}, "question: a user message may have at most 8000 characters")
	mcpToolRefused(t, cs, "ask", map[string]any{}, "question: must not be empty")
	mcpToolRefused(t, cs, "list_documents", map[string]any{"keyword": strings.Repeat("k", 201)}, "keyword: at most 200 characters")
	mcpToolRefused(t, cs, "list_documents", map[string]any{"size": 101}, "size: must be from 1 to 100")
	mcpToolRefused(t, cs, "read_document", map[string]any{"id": 0}, "id: a document id")
	mcpToolRefused(t, cs, "read_document", map[string]any{"id": install, "offset": 100000}, "offset: the document has")
	// Without a workflow engine the search says so (e2e runs it for real).
	mcpToolRefused(t, cs, "search", map[string]any{"query": "install"}, "the workflow engine is not configured")
	// A body past the route's limit is refused before it is read.
	// (Sent while its answer is read: the server may close before the
	// client has written it all.)
	head := "POST /mcp HTTP/1.1\r\nHost: lore\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n" +
		"Accept: application/json, text/event-stream\r\nAuthorization: Bearer " + keyA.Key + "\r\n\r\n"
	prefix := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"query":"`
	if r := flood(context.Background(), strings.TrimPrefix(base, "http://"), head, prefix, 4*mcpMaxBody); r.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversize body: status %d after %d bytes (%v)", r.status, r.sent, r.err)
	}

	// Plain HTTP, as docs/mcp.md's curl examples send it: initialize and a
	// tool call are each one server-sent event; GET and DELETE are 405.
	post := func(body string, headers ...string) (int, string) {
		req, _ := http.NewRequest("POST", base+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+keyA.Key)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(raw)
	}
	if st, raw := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`); st != 200 ||
		!strings.HasPrefix(raw, "event: message\n") || !strings.Contains(raw, `"serverInfo":{"name":"lore"`) || !strings.Contains(raw, `"tools":`) {
		t.Fatalf("initialize: %d %s", st, raw)
	}
	if st, raw := post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_document","arguments":{"id":`+itoa(install)+`}}}`,
		"MCP-Protocol-Version", "2025-06-18"); st != 200 || !strings.Contains(raw, `run make run`) || !strings.Contains(raw, `"id":2`) {
		t.Fatalf("tools/call: %d %s", st, raw)
	}
	for _, m := range []string{"GET", "DELETE"} {
		req, _ := http.NewRequest(m, base+"/mcp", nil)
		req.Header.Set("Authorization", "Bearer "+keyA.Key)
		req.Header.Set("Accept", "text/event-stream")
		if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusMethodNotAllowed {
			t.Fatalf("%s /mcp: %v %v", m, res, err)
		}
	}

	// The other site's key sees the other site only.
	csB, err := mcpConnect(ctx, base, keyB.Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer csB.Close()
	mcpToolRefused(t, csB, "read_document", map[string]any{"id": install}, "not found")
	mcpCall(t, csB, "list_documents", nil, &list)
	if len(list.Documents) != 1 || list.Documents[0].ID != other {
		t.Fatalf("site B list: %+v", list)
	}

	// Refused keys: the SDK client shows the server's message.
	for k, want := range map[string]string{"": "a site API key is required", "lore_notakey": "invalid or revoked API key",
		h.admin: "invalid or revoked API key"} {
		if _, err := mcpConnect(ctx, base, k, nil); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("key %.12q: %v, want %q", k, err, want)
		}
	}
	csR, err := mcpConnect(ctx, base, keyRevoked.Key, nil)
	if err != nil {
		t.Fatal(err)
	}
	mcpCall(t, csR, "list_documents", nil, &list)
	h.must(200, "DELETE", adminPath+"/sites/"+itoa(a)+"/api-keys/"+itoa(keyRevoked.ID), nil, h.admin)
	if _, err := csR.CallTool(ctx, &mcp.CallToolParams{Name: "list_documents"}); err == nil || !strings.Contains(err.Error(), "invalid or revoked API key") {
		t.Errorf("a revoked key's open session: %v", err)
	}
	if _, err := mcpConnect(ctx, base, keyRevoked.Key, nil); err == nil || !strings.Contains(err.Error(), "invalid or revoked API key") {
		t.Errorf("a revoked key: %v", err)
	}

	// Every call is logged with its key's id.
	var found bool
	for _, r := range logs.records("mcp call") {
		if r["tool"] == "read_document" && r["key_id"] == float64(keyA.ID) && r["site_id"] == float64(a) && r["outcome"] == "ok" {
			found = true
		}
		if r["key_id"] == nil || r["method"] == nil {
			t.Fatalf("log line without key or method: %v", r)
		}
	}
	if !found {
		t.Fatalf("no log line of a read_document call with key %d: %v", keyA.ID, logs.records("mcp call"))
	}

	// The site's daily token budget stops ask (before any model call); the
	// per-IP limit (LORE_CHAT_RATE_PER_IP) stops any tool for a minute.
	ctr := h.d.Cache.(cache.Counter)
	sA, _ := h.d.DB.GetSite(ctx, a)
	if err := chatbudget.Add(ctx, ctr, chatbudget.Scope(a, sA.TenantID), 1000, time.Now()); err != nil {
		t.Fatal(err)
	}
	mcpToolRefused(t, cs, "ask", map[string]any{"question": "How do I install Lore?"}, "daily token budget")
	limited := false
	for range 41 {
		if res, text := mcpCall(t, csB, "list_documents", nil, nil); res.IsError {
			if !strings.Contains(text, "too many requests to this site's MCP tools; try again in") {
				t.Fatalf("limit: %q", text)
			}
			limited = true
			break
		}
	}
	if !limited {
		t.Fatal("41 calls within a minute passed a limit of 40")
	}
}
