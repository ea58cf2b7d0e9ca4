package api

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/lorekb/lore/models"
)

// TestToolResultInTheReferenceShape: the tool message of a thread and GET
// …/tool-result/{id} give the search result as the reference's client parses
// it, a JSON array of {source_index, title, content, metadata}, numbered as
// the answer cites it.
func TestToolResultInTheReferenceShape(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	site := kbSite(h, "Docs")
	ctx := context.Background()
	now := time.Now().UTC()
	sess := &models.ChatSession{ThreadID: "auto-t1", TenantID: 1, SiteID: &site.ID, MemberID: "m1", OwnerHash: chatSecretHash(csSecret),
		CreatedAt: now, UpdatedAt: now}
	csOwner(h) // the session's owner reads it
	if _, err := h.d.DB.NewInsert().Model(sess).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	stored := `{"query":"install","passages":[{"document_id":7,"site_id":` + itoa(site.ID) + `,"title":"Install","score":0.82,"fragments":2,"content":"Run make run."},` +
		`{"document_id":9,"site_id":` + itoa(site.ID) + `,"title":"Upgrade","score":0.4,"fragments":1,"content":"Replace the binary."}]}`
	if err := h.d.DB.SaveToolResult(ctx, &models.ToolResult{ThreadID: "auto-t1", ToolCallID: "call-1", Content: stored}); err != nil {
		t.Fatal(err)
	}
	for i, m := range []models.ChatMessage{
		{Role: "user", Content: "install?"},
		{Role: "assistant", ToolCalls: `[{"id":"call-1","type":"function","function":{"name":"search_knowledge_base","arguments":"{\"query\":\"install\"}"}}]`},
		{Role: "tool", ToolCallID: "call-1", Content: "[3] Install\nRun make run.\n\n[4] Upgrade\nReplace the binary."},
	} {
		m.ThreadID, m.Turn, m.Position, m.ChatMessageID, m.CreatedAt = "auto-t1", 1, i, fmt.Sprintf("auto-t1-%d", i), now
		if m.ToolCalls == "" {
			m.ToolCalls = "[]"
		}
		m.Extra = "{}"
		if _, err := h.d.DB.NewInsert().Model(&m).Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	check := func(where, content string) {
		t.Helper()
		var ps []ToolPassage
		if err := json.Unmarshal([]byte(content), &ps); err != nil {
			t.Fatalf("%s: not a JSON array: %q", where, content)
		}
		if len(ps) != 2 || ps[0].SourceIndex != 3 || ps[1].SourceIndex != 4 || ps[0].Title != "Install" ||
			ps[0].Content != "Run make run." || ps[0].Metadata.DocumentID != 7 || ps[0].Metadata.Score != 0.82 ||
			ps[0].Metadata.SiteID != site.ID || ps[0].Metadata.Title != "Install" {
			t.Fatalf("%s: %+v", where, ps)
		}
	}
	var tr ToolResultResponse
	h.must(200, "GET", "/v1/chat/sessions/auto-t1/tool-result/call-1?member_id=m1", nil, "").into(t, &tr)
	check("tool-result", tr.Content)
	var msgs ChatMessages
	h.must(200, "GET", "/v1/chat/sessions/auto-t1/messages?member_id=m1", nil, "").into(t, &msgs)
	check("tool message", *msgs.Messages[2].Content)
	h.must(200, "GET", fmt.Sprintf("/admin/v1/sites/%d/chat-sessions/auto-t1/messages", site.ID), nil, h.admin).into(t, &msgs)
	check("admin tool message", *msgs.Messages[2].Content)
	if toolPassages(`{"query":"x","passages":[]}`, 1) != "[]" || toolPassages("plain text", 1) != "plain text" {
		t.Fatal("empty or non-search results")
	}
}

// TestOpenAIRoutesAnswerOpenAIErrors: the OpenAI-compatible routes answer
// errors in OpenAI's format, which official SDKs read.
func TestOpenAIRoutesAnswerOpenAIErrors(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	r := h.do("POST", "/v1/bot/chat/completions", map[string]any{"model": "x", "messages": []any{}}, "not-a-key")
	var e OpenAIError
	if err := json.Unmarshal(r.Raw, &e); err != nil || r.Status != 401 || e.Error.Message == "" || e.Error.Type != "authentication_error" {
		t.Fatalf("bot completions: %d %s", r.Status, r.Raw)
	}
}
