package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lorekb/lore/api"
	"github.com/lorekb/lore/models"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpKey adds a bot API key to every request of the MCP client.
type mcpKey string

func (k mcpKey) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(k))
	return http.DefaultTransport.RoundTrip(r)
}

func mcpSession(t *testing.T, base, key string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "lore-e2e", Version: "1"}, opts)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp", MaxRetries: -1,
		HTTPClient: &http.Client{Transport: mcpKey(key), Timeout: 2 * time.Minute}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// mcpTool calls a tool, requires success and decodes its structured result.
func mcpTool(t *testing.T, cs *mcp.ClientSession, params *mcp.CallToolParams, out any) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), params)
	if err != nil {
		t.Fatalf("%s: %v", params.Name, err)
	}
	if res.IsError {
		t.Fatalf("%s %v: tool error %v", params.Name, params.Arguments, res.Content[0].(*mcp.TextContent).Text)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: %s: %v", params.Name, b, err)
	}
}

func (a *app) apiKey(site int64) api.APIKeyCreated {
	var k api.APIKeyCreated
	a.admin("POST", fmt.Sprintf("/admin/api/v1/sites/%d/api-keys", site), map[string]any{"name": "agent"}, &k)
	return k
}

// TestMCPSearchAndAskWithTheSDKClient drives /mcp of a real lore (Temporal
// dev server, worker in-process, served on a port) with the SDK's client:
// search runs the site's retrieval over its published documents only, a
// document unpublished after indexing disappears from search, read and
// list; ask runs a chat turn through its workflow and returns the cited
// answer (streamed as progress notifications when asked) stored as an mcp
// conversation; a key of another site searches that site only; a revoked
// key is refused.
func TestMCPSearchAndAskWithTheSDKClient(t *testing.T) {
	a := newApp(t, "sqlite", nil)
	siteA, siteB := a.site("MCP docs"), a.site("MCP other")
	install := a.newDoc(siteA, "Installing Lore", installDoc, "published")
	zeppelin := a.newDoc(siteA, "Zeppelin plans", "# Zeppelin\n\nThe zeppelin feature ships next year with a mooring mast.", "published")
	other := a.newDoc(siteB, "Installing elsewhere", "# Elsewhere\n\nTo install Lore elsewhere, download the archive and run make run.", "published")
	for _, id := range []int64{install, zeppelin, other} {
		a.waitStatus(id, "completed")
	}
	base := a.listen()
	keyA, keyB, keyGone := a.apiKey(siteA), a.apiKey(siteB), a.apiKey(siteA)
	cs := mcpSession(t, base, keyA.Key, nil)

	var found api.SearchResult
	mcpTool(t, cs, &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"query": "How do I install Lore?", "top_k": 3}}, &found)
	if len(found.Passages) == 0 || found.Passages[0].DocumentID != install || found.Passages[0].Title != "Installing Lore" ||
		found.Passages[0].Score <= 0 || !strings.Contains(found.Passages[0].Content, "download the archive") {
		t.Fatalf("search: %+v", found)
	}
	named := false
	for _, p := range found.Passages {
		if p.DocumentID == other {
			t.Fatalf("a passage of another site: %+v", p)
		}
		named = named || strings.Contains(p.Section, "Installing Lore") || strings.Contains(p.Section, "Upgrading")
	}
	if !named {
		t.Fatalf("no passage names its section: %+v", found.Passages)
	}
	mcpTool(t, cs, &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"query": "zeppelin mooring mast"}}, &found)
	if len(found.Passages) == 0 || found.Passages[0].DocumentID != zeppelin {
		t.Fatalf("search zeppelin before unpublishing: %+v", found)
	}

	// Unpublished: its chunks stay indexed, yet no tool shows it.
	a.admin("PUT", fmt.Sprintf("/admin/api/v1/documents/%d", zeppelin), map[string]any{"status": "draft"}, nil)
	mcpTool(t, cs, &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"query": "zeppelin mooring mast"}}, &found)
	for _, p := range found.Passages {
		if p.DocumentID == zeppelin {
			t.Fatalf("search finds an unpublished document: %+v", found)
		}
	}
	var list api.ListDocumentsResult
	mcpTool(t, cs, &mcp.CallToolParams{Name: "list_documents"}, &list)
	if list.Total != 1 || list.Documents[0].ID != install {
		t.Fatalf("list after unpublishing: %+v", list)
	}
	if res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "read_document", Arguments: map[string]any{"id": zeppelin}}); err != nil || !res.IsError {
		t.Fatalf("read an unpublished document: %v %+v", err, res)
	}
	var doc api.ReadDocumentResult
	mcpTool(t, cs, &mcp.CallToolParams{Name: "read_document", Arguments: map[string]any{"id": install}}, &doc)
	if doc.Content != installDoc || doc.Title != "Installing Lore" {
		t.Fatalf("read: %+v", doc)
	}

	// ask: the chat turn of the bot API, through its workflow; the answer
	// comes as progress notifications too when the client sends a token.
	var mu sync.Mutex
	var progress []string
	streamed := mcpSession(t, base, keyA.Key, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		progress = append(progress, r.Params.Message)
		mu.Unlock()
	}})
	params := &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"question": "How do I install Lore?"}}
	params.SetProgressToken("ask-1")
	var ans api.AskResult
	mcpTool(t, streamed, params, &ans)
	if !strings.Contains(ans.Answer, "[1]") || len(ans.Sources) == 0 || ans.Sources[0].Index != 1 || ans.Sources[0].DocumentID != install ||
		ans.Sources[0].Title != "Installing Lore" || ans.ThreadID == "" {
		t.Fatalf("ask: %+v", ans)
	}
	// The client hands notifications to its handler on its own goroutines:
	// the last ones may come just after the result.
	spelled := func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(progress, "")
	}
	deadline := time.Now().Add(10 * time.Second)
	for spelled() != ans.Answer && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := spelled(); got != ans.Answer {
		t.Errorf("progress notifications %q do not spell the answer %q", got, ans.Answer)
	}
	var sess models.ChatSession
	if err := a.d.DB.NewSelect().Model(&sess).Where("thread_id = ?", ans.ThreadID).Scan(t.Context()); err != nil {
		t.Fatal(err)
	}
	if sess.Source != "mcp" || sess.MemberID != fmt.Sprintf("mcp-key-%d", keyA.ID) || sess.SiteID == nil || *sess.SiteID != siteA {
		t.Fatalf("stored conversation: source %q member %q site %v", sess.Source, sess.MemberID, sess.SiteID)
	}

	// The other site's key searches the other site only.
	csB := mcpSession(t, base, keyB.Key, nil)
	mcpTool(t, csB, &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"query": "How do I install Lore?"}}, &found)
	if len(found.Passages) == 0 {
		t.Fatal("site B finds nothing")
	}
	for _, p := range found.Passages {
		if p.DocumentID != other {
			t.Fatalf("site B's key finds %+v", p)
		}
	}

	// A revoked key stops at its next call.
	gone := mcpSession(t, base, keyGone.Key, nil)
	mcpTool(t, gone, &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"query": "install"}}, &found)
	a.admin("DELETE", fmt.Sprintf("/admin/api/v1/sites/%d/api-keys/%d", siteA, keyGone.ID), nil, nil)
	if _, err := gone.CallTool(t.Context(), &mcp.CallToolParams{Name: "search", Arguments: map[string]any{"query": "install"}}); err == nil ||
		!strings.Contains(err.Error(), "invalid or revoked API key") {
		t.Fatalf("revoked key: %v", err)
	}
}
