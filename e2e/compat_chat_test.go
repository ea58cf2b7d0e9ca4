package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
)

// clientBrowser is the browser's cookie store: it keeps the chat owner
// cookie (lore_chat_secret) Lore sets with the first answer and sends it
// back, as a browser does for a client served from Lore's origin.
var clientBrowser = func() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar}
}()

// clientSecret is the owner secret the browser holds for base.
func clientSecret(base string) string {
	u, _ := url.Parse(base)
	for _, ck := range clientBrowser.Jar.Cookies(u) {
		if ck.Name == "lore_chat_secret" {
			return ck.Value
		}
	}
	return ""
}

// The reference's client chat (CatWiki 1.1.7 frontend/client: useAIChat.ts
// sends, lib/ai-stream.ts parses and reduces, lib/chat-history.ts reads the
// stored thread), rewritten in Go to call Lore exactly as the browser does:
// POST {API}/v1/chat/responses with Content-Type application/json (and
// X-Site-Access-Token when it has one), body {input, stream:true, user,
// previous_response_id?, filter?:{site_id, tenant_id}}.

// clientMessage is the assistant message the client's reducer builds from
// one stream.
type clientMessage struct {
	threadID  string
	content   string
	status    string
	sources   []clientSource
	toolCalls []clientToolCall
	timings   map[string]float64
	usage     *int
	parseErrs int
}

// clientSource is a knowledge source as the client's Source type reads it.
type clientSource struct {
	ID          string   `json:"id"`
	Title       string   `json:"title"`
	SiteID      int64    `json:"siteId"`
	DocumentID  int64    `json:"documentId"`
	Score       *float64 `json:"score"`
	SourceIndex *int     `json:"sourceIndex"`
}

// clientToolCall is a tool call as the reducer accumulates it.
type clientToolCall struct {
	id, name, arguments string
	status              string
	chunkCount          *int
}

// clientSend posts one message as useAIChat.sendMessage does and reduces
// the stream as createStreamReducer does. A non-2xx answer is the client's
// "⚠️ <msg>" bubble, as is a response.error event.
func clientSend(t *testing.T, base string, body map[string]any, headers ...string) clientMessage {
	t.Helper()
	return clientSendWith(t, clientBrowser, base, body, headers...)
}

// clientSendWith is clientSend through the given HTTP client (one without a
// cookie jar is the reference client served from another origin).
func clientSendWith(t *testing.T, hc *http.Client, base string, body map[string]any, headers ...string) clientMessage {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", base+"/v1/chat/responses", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var msg clientMessage
	if res.StatusCode < 200 || res.StatusCode > 299 {
		var e struct {
			Msg string `json:"msg"`
		}
		raw, _ := io.ReadAll(res.Body)
		_ = json.Unmarshal(raw, &e)
		msg.content = "⚠️ " + e.Msg
		msg.status = fmt.Sprintf("http %d", res.StatusCode)
		return msg
	}
	// parseSSEStream: split on "\n", trim, keep "data: " lines, stop at [DONE].
	var current *clientToolCall
	var completed []clientToolCall
	hasTrace := false
	flush := func() {
		if current != nil && current.id != "" {
			current.status = "completed"
			completed = append(completed, *current)
		}
		current = nil
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		data := line[6:]
		if data == "[DONE]" {
			break
		}
		var ev struct {
			Type     string `json:"type"`
			Response *struct {
				ID    string `json:"id"`
				Usage *struct {
					TotalTokens *int `json:"total_tokens"`
				} `json:"usage"`
			} `json:"response"`
			Sources  []clientSource `json:"sources"`
			ToolCall *struct {
				ID       string `json:"id"`
				Function *struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_call"`
			ElapsedMS  *float64           `json:"elapsed_ms"`
			ChunkCount *int               `json:"chunk_count"`
			ToolCallID string             `json:"tool_call_id"`
			Trace      map[string]float64 `json:"trace"`
			Delta      string             `json:"delta"`
			Error      string             `json:"error"`
		}
		if json.Unmarshal([]byte(data), &ev) != nil {
			msg.parseErrs++
			continue
		}
		switch ev.Type {
		case "response.created":
			if ev.Response != nil && ev.Response.ID != "" {
				msg.threadID = ev.Response.ID
			}
		case "response.knowledge_sources":
			msg.sources = ev.Sources
		case "response.tool_call.started":
			flush()
			msg.status = "tool_calling"
		case "response.tool_call.delta":
			if current == nil {
				current = &clientToolCall{}
			}
			if tc := ev.ToolCall; tc != nil {
				if tc.ID != "" {
					current.id = tc.ID
				}
				if tc.Function != nil {
					if tc.Function.Name != "" {
						current.name = tc.Function.Name
					}
					current.arguments += tc.Function.Arguments
				}
			}
			msg.status = "tool_calling"
		case "response.tool_call.completed":
			if ev.ChunkCount == nil && ev.ElapsedMS == nil {
				continue
			}
			// By tool_call_id when the reducer has it, else the last one.
			idx := len(completed) - 1
			for i := range completed {
				if completed[i].id == ev.ToolCallID {
					idx = i
				}
			}
			if idx >= 0 {
				completed[idx].chunkCount = ev.ChunkCount
			}
		case "response.pipeline_trace":
			hasTrace = true
			msg.timings = ev.Trace
		case "response.completed":
			if hasTrace && ev.Response != nil && ev.Response.Usage != nil && ev.Response.Usage.TotalTokens != nil {
				msg.usage = ev.Response.Usage.TotalTokens
			}
		case "response.output_text.delta":
			if ev.Delta == "" {
				continue
			}
			msg.content += ev.Delta
			flush()
			msg.status = "streaming"
		case "response.error":
			if msg.content == "" {
				msg.content = "⚠️ " + ev.Error
			}
		}
	}
	flush()
	msg.toolCalls = completed
	return msg
}

// TestReferenceClientChat: the reference's chat widget and page, against a
// real Lore (HTTP server, Temporal, worker): a widget with no site searches
// the tenant's public sites (sources carry their site; a password site is
// left out); a site page with trace on gets its timings (total never below
// first token); the history sidebar lists the thread under list; the stored
// thread reads as the client's formatHistoryMessages reads it (tool-call row
// content null, tool results as arrays of passages); setup errors arrive as
// a response.error in the bubble.
func TestReferenceClientChat(t *testing.T) {
	a := newApp(t, "sqlite", nil)
	base := a.listen()
	siteA, siteB, locked := a.site("Handbook"), a.site("Operations"), a.site("Vault")
	a.admin("PUT", "/admin/api/v1/sites/"+itoa(siteA), map[string]any{"show_pipeline_trace": true}, nil)
	a.admin("PUT", "/admin/api/v1/sites/"+itoa(locked)+"/password", map[string]any{"password": "vault-password"}, nil)
	docA := a.newDoc(siteA, "Installation", installDoc, "published")
	docB := a.newDoc(siteB, "Backups", "# Backups\n\nTo back up Lore, stop the service and copy the data directory to safe storage every night.", "published")
	docC := a.newDoc(locked, "Vault backups", "# Vault backups\n\nTo back up the vault, copy the data directory with the zebra procedure.", "published")
	for _, d := range []int64{docA, docB, docC} {
		a.waitStatus(d, "completed")
	}
	const visitor = "visitor-7f3a"

	// The widget on no site: no filter at all.
	m1 := clientSend(t, base, map[string]any{"input": "How do I install Lore?", "stream": true, "user": visitor})
	if !strings.HasPrefix(m1.threadID, "auto-") || m1.status != "streaming" || !strings.Contains(m1.content, "[1]") || m1.parseErrs != 0 {
		t.Fatalf("first answer: %+v", m1)
	}
	if len(m1.toolCalls) == 0 || m1.toolCalls[0].id == "" || m1.toolCalls[0].name != "search_knowledge_base" ||
		!json.Valid([]byte(m1.toolCalls[0].arguments)) || m1.toolCalls[0].chunkCount == nil || *m1.toolCalls[0].chunkCount == 0 {
		t.Fatalf("tool calls: %+v", m1.toolCalls)
	}
	checkSources := func(m clientMessage, want int64, wantSite int64) {
		t.Helper()
		found := false
		for _, s := range m.sources {
			if s.ID != itoa(s.DocumentID) || s.Title == "" || s.Score == nil || s.SourceIndex == nil || s.SiteID == 0 {
				t.Fatalf("source fields: %+v", s)
			}
			if s.SiteID == locked || s.DocumentID == docC {
				t.Fatalf("a password site's document was searched: %+v", s)
			}
			found = found || s.DocumentID == want && s.SiteID == wantSite
		}
		if !found {
			t.Fatalf("sources %+v lack document %d of site %d", m.sources, want, wantSite)
		}
	}
	checkSources(m1, docA, siteA)
	if m1.timings != nil || m1.usage != nil {
		t.Fatalf("a turn of no site has no trace: %+v", m1)
	}
	// The same thread goes on (previous_response_id); the answer now comes
	// from the other site.
	m2 := clientSend(t, base, map[string]any{"input": "How do I back up the data directory?", "stream": true, "user": visitor,
		"previous_response_id": m1.threadID})
	if m2.threadID != m1.threadID || !strings.Contains(m2.content, "copy the data directory") {
		t.Fatalf("second answer: %+v", m2)
	}
	checkSources(m2, docB, siteB)
	// Each turn numbers its sources from 1, as the client numbers its
	// source list (MessageSources: index + 1).
	if first := m2.sources[0].SourceIndex; first == nil || *first != 1 || !strings.Contains(m2.content, "[1]") {
		t.Fatalf("the second turn's numbers: %+v, %q", m2.sources, m2.content)
	}
	if strings.Contains(m2.content, "zebra") {
		t.Fatalf("answer from the password site: %q", m2.content)
	}
	// A site page (filter with site_id and tenant_id) with trace on.
	m3 := clientSend(t, base, map[string]any{"input": "How do I install Lore?", "stream": true, "user": visitor,
		"filter": map[string]any{"site_id": siteA, "tenant_id": 1}})
	checkSources(m3, docA, siteA)
	for _, s := range m3.sources {
		if s.SiteID != siteA {
			t.Fatalf("a site page cites another site: %+v", s)
		}
	}
	if m3.timings == nil || m3.timings["first_token"] <= 0 || m3.timings["total"] < m3.timings["first_token"] ||
		m3.timings["total"] < m3.timings["ttfb"] || m3.usage == nil || *m3.usage == 0 {
		t.Fatalf("trace and usage: %+v usage %v", m3.timings, m3.usage)
	}
	// Setup errors are shown in the bubble from a response.error event.
	for _, tc := range []struct {
		body    map[string]any
		headers []string
		want    string
	}{
		{map[string]any{"input": "x", "stream": true, "user": visitor, "filter": map[string]any{"site_id": 99999, "tenant_id": nil}}, nil, "site not found"},
		{map[string]any{"input": "x", "stream": true, "user": visitor, "filter": map[string]any{"site_id": nil, "tenant_id": 424242}}, nil, "Tenant not found"},
		{map[string]any{"input": "x", "stream": true, "user": visitor}, []string{"X-Tenant-Slug", "no-such-tenant"}, "Tenant not found"},
		// A thread of no site cannot move into one site.
		{map[string]any{"input": "x", "stream": true, "user": visitor, "previous_response_id": m1.threadID, "filter": map[string]any{"site_id": siteA}}, nil, "belongs to another"},
		{map[string]any{"input": "x", "stream": true, "user": "someone-else", "previous_response_id": m1.threadID}, nil, "belongs to another"},
	} {
		m := clientSend(t, base, tc.body, tc.headers...)
		if m.status != "" || !strings.HasPrefix(m.content, "⚠️ ") || !strings.Contains(m.content, tc.want) {
			t.Fatalf("%v: %+v", tc.body, m)
		}
	}

	// The history sidebar: GET /v1/chat/sessions, data.list.
	var sessions struct {
		List []struct {
			ThreadID string `json:"thread_id"`
			SiteID   *int64 `json:"site_id"`
			Title    string `json:"title"`
		} `json:"list"`
		Items []json.RawMessage `json:"items"`
	}
	a.useOwner(clientSecret(base)) // the sidebar's requests carry the browser's cookie
	a.do("GET", "/v1/chat/sessions?member_id="+visitor+"&page=1&size=20", nil, "").into(t, &sessions)
	var siteless int
	for _, s := range sessions.List {
		if s.ThreadID == m1.threadID {
			siteless++
			if s.SiteID != nil || s.Title != "How do I install Lore?" {
				t.Fatalf("session of no site: %+v", s)
			}
		}
	}
	if len(sessions.List) != 2 || len(sessions.Items) != 2 || siteless != 1 {
		t.Fatalf("sessions: %+v", sessions)
	}

	// Opening the thread: getChatSessionMessages + formatHistoryMessages.
	var thread struct {
		Messages []struct {
			Role       string  `json:"role"`
			Content    *string `json:"content"`
			ToolCallID *string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
				ElapsedMS *float64 `json:"elapsed_ms"`
			} `json:"tool_calls"`
			Sources          []clientSource `json:"sources"`
			AdditionalKwargs map[string]any `json:"additional_kwargs"`
			MessageSeq       *int           `json:"message_seq"`
		} `json:"messages"`
	}
	a.do("GET", "/v1/chat/sessions/"+m1.threadID+"/messages?member_id="+visitor, nil, "").into(t, &thread)
	// The pill's live count (chunk_count) of each call of the thread: after
	// a reload the pill counts the tool row's array, and the dialog lists it.
	live := map[string]int{}
	for _, m := range []clientMessage{m1, m2} {
		for _, tc := range m.toolCalls {
			if tc.chunkCount != nil {
				live[tc.id] = *tc.chunkCount
			}
		}
	}
	var calls, tools, answers int
	for _, m := range thread.Messages {
		switch {
		case m.Role == "assistant" && len(m.ToolCalls) > 0:
			calls++
			if m.Content != nil || m.ToolCalls[0].ID == "" || m.ToolCalls[0].Function.Name != "search_knowledge_base" {
				t.Fatalf("tool-call row: content %v, calls %+v", m.Content, m.ToolCalls)
			}
		case m.Role == "tool":
			tools++
			var passages []struct {
				SourceIndex int    `json:"source_index"`
				Title       string `json:"title"`
				Content     string `json:"content"`
				Metadata    struct {
					DocumentID int64   `json:"document_id"`
					Title      string  `json:"title"`
					Score      float64 `json:"score"`
					SiteID     int64   `json:"site_id"`
				} `json:"metadata"`
			}
			if m.Content == nil || m.ToolCallID == nil || json.Unmarshal([]byte(*m.Content), &passages) != nil || len(passages) == 0 ||
				passages[0].SourceIndex == 0 || passages[0].Metadata.DocumentID == 0 || passages[0].Metadata.SiteID == 0 {
				t.Fatalf("tool row: %v", m.Content)
			}
			if n, ok := live[*m.ToolCallID]; !ok || n != len(passages) {
				t.Fatalf("call %s: live chunk_count %d (known %v), %d passages stored", *m.ToolCallID, n, ok, len(passages))
			}
			for _, p := range passages {
				if p.Metadata.SiteID == locked {
					t.Fatalf("tool result from the password site: %+v", p)
				}
			}
			// The tool-result endpoint gives the same array.
			var tr struct {
				Content string `json:"content"`
			}
			a.do("GET", "/v1/chat/sessions/"+m1.threadID+"/tool-result/"+*m.ToolCallID+"?member_id="+visitor, nil, "").into(t, &tr)
			if tr.Content != *m.Content {
				t.Fatalf("tool-result %q, message %q", tr.Content, *m.Content)
			}
		case m.Role == "assistant":
			if m.Content == nil || *m.Content == "" || m.MessageSeq == nil || *m.MessageSeq != answers || len(m.Sources) == 0 {
				t.Fatalf("answer row: %+v", m)
			}
			answers++
		}
	}
	if calls != 2 || tools < 2 || answers != 2 {
		t.Fatalf("thread: %d calls, %d tool rows, %d answers", calls, tools, answers)
	}
}
