package api

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/models"
)

const chatPath = "/v1/chat"

// csSite inserts an active site directly and returns its id.
func csSite(h *harness, slug string, password bool) int64 {
	h.t.Helper()
	return h.insertSite(slug, slug, password).ID
}

// csInsert inserts rows with bun.
func csInsert(h *harness, rows ...any) {
	h.t.Helper()
	for _, r := range rows {
		if _, err := h.d.DB.NewInsert().Model(r).Exec(context.Background()); err != nil {
			h.t.Fatalf("insert %T: %v", r, err)
		}
	}
}

// csSecret is the owner secret of the sessions csSession builds; csOwner
// makes the harness send it with every request, as a client that keeps it.
const csSecret = "cs-owner-secret-0123456789abcdefghijklmnop"

func csOwner(h *harness) { h.always = map[string]string{chatSecretHeader: csSecret} }

// csSession builds a session of member on site (0: none), updated at, owned
// by csSecret.
func csSession(h *harness, thread, member string, site int64, title, last string, updated time.Time) *models.ChatSession {
	tid, _ := h.d.DB.EnsureDefaultTenant(context.Background())
	s := &models.ChatSession{ThreadID: thread, TenantID: tid, MemberID: member, OwnerHash: chatSecretHash(csSecret), Title: title, Source: "web_chat",
		LastMessage: last, LastMessageRole: "assistant", MessageCount: 2, Summary: "memory",
		CreatedAt: updated.Add(-time.Minute), UpdatedAt: updated}
	if site > 0 {
		s.SiteID = &site
	}
	return s
}

// csThreadRows counts the session, message, tool-result and feedback rows of a thread.
func csThreadRows(h *harness, thread string) string {
	h.t.Helper()
	var out []string
	for _, m := range []any{(*models.ChatSession)(nil), (*models.ChatMessage)(nil), (*models.ToolResult)(nil), (*models.Feedback)(nil)} {
		n, err := h.d.DB.NewSelect().Model(m).Where("thread_id = ?", thread).Count(context.Background())
		if err != nil {
			h.t.Fatal(err)
		}
		out = append(out, fmt.Sprint(n))
	}
	return strings.Join(out, " ")
}

// csKeys returns the sorted keys of a JSON object.
func csKeys(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("not an object: %s", raw)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ",")
}

func TestChatSessionList(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		csOwner(h)
		a, b := csSite(h, "alpha", false), csSite(h, "beta", false)
		locked := csSite(h, "locked", true)
		base := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
		csInsert(h,
			csSession(h, "t1", "m1", a, "Install guide", "run the installer", base.Add(1*time.Minute)),
			csSession(h, "t2", "m1", b, "Pricing", "it costs 100%", base.Add(3*time.Minute)),
			csSession(h, "t3", "m1", 0, "New conversation", "hello", base.Add(2*time.Minute)),
			csSession(h, "t4", "m1", a, "Upgrade", "see the INSTALL notes", base.Add(2*time.Minute)), // ties t3, higher id
			csSession(h, "t5", "m1", locked, "Secret", "x", base.Add(9*time.Minute)),
			csSession(h, "t6", "m2", a, "Install", "other member", base.Add(8*time.Minute)),
		)

		r := h.must(422, "GET", chatPath+"/sessions", nil, "")
		if !strings.Contains(r.Msg, "member_id") || r.Code != 422 {
			t.Fatalf("missing member_id: %s", r.Raw)
		}
		h.must(422, "GET", chatPath+"/sessions?member_id=m1&size=101", nil, "")
		h.must(422, "GET", chatPath+"/sessions?member_id=m1&page=0", nil, "")
		h.must(404, "GET", chatPath+"/sessions?member_id=m1&site_id=999", nil, "")

		type listData struct {
			Items []ChatSessionResponse `json:"items"`
			Total int                   `json:"total"`
			Page  int                   `json:"page"`
			Size  int                   `json:"size"`
		}
		list := func(query string) listData {
			t.Helper()
			var d listData
			h.must(200, "GET", chatPath+"/sessions?"+query, nil, "").into(t, &d)
			return d
		}
		ids := func(d listData) string {
			var s []string
			for _, it := range d.Items {
				s = append(s, it.ThreadID)
			}
			return strings.Join(s, ",")
		}

		// Shape: data {items, list, total, page, size} (items as SPEC names it,
		// list as the reference's client reads it: the same array), items
		// with exactly the WIRE keys.
		r = h.must(200, "GET", chatPath+"/sessions?member_id=m1", nil, "")
		var both struct {
			Items, List json.RawMessage
		}
		_ = json.Unmarshal(r.Data, &both)
		if r.Code != 0 || csKeys(t, r.Data) != "items,list,page,size,total" || string(both.Items) != string(both.List) {
			t.Fatalf("data keys: %s", r.Raw)
		}
		var raw struct {
			Items []json.RawMessage `json:"items"`
		}
		r.into(t, &raw)
		want := "created_at,id,last_message,last_message_role,member_id,message_count,site_id,source,tenant_id,thread_id,title,updated_at"
		if len(raw.Items) == 0 || csKeys(t, raw.Items[0]) != want {
			t.Fatalf("item keys: %s", r.Raw)
		}

		// Without site_id the password site is left out; ordered by
		// updated_at desc, then id desc.
		d := list("member_id=m1")
		if got := ids(d); got != "t2,t4,t3,t1" || d.Total != 4 || d.Page != 1 || d.Size != 20 {
			t.Fatalf("list %s %+v", got, d)
		}
		it := d.Items[0]
		if it.SiteID == nil || *it.SiteID != b || it.MemberID != "m1" || it.Title != "Pricing" || it.Source != "web_chat" ||
			it.LastMessage != "it costs 100%" || it.LastMessageRole != "assistant" || it.MessageCount != 2 ||
			!it.UpdatedAt.Equal(base.Add(3*time.Minute)) {
			t.Fatalf("item %+v", it)
		}
		if d.Items[2].SiteID != nil {
			t.Fatalf("siteless session: %+v", d.Items[2])
		}
		for q, want := range map[string]string{
			"member_id=m1&site_id=" + itoa(a):  "t4,t1",
			"member_id=m1&keyword=install":     "t4,t1", // title or last_message, any case
			"member_id=m1&keyword=100%25":      "t2",
			"member_id=m1&keyword=nothing":     "",
			"member_id=m2":                     "t6",
			"member_id=nobody":                 "",
			"member_id=m1&tenant_id=999":       "",
			"member_id=m1&tenant_slug=nope":    "",
			"member_id=m2&tenant_slug=default": "t6",
		} {
			if got := ids(list(q)); got != want {
				t.Errorf("%s: %q, want %q", q, got, want)
			}
		}
		// A password-protected site's sessions need its access token.
		if r := h.do("GET", "/v1/chat/sessions?member_id=m1&site_id="+itoa(locked), nil, ""); r.Status != 401 {
			t.Fatalf("protected site without token: %d %s", r.Status, r.Raw)
		}
		d = list("member_id=m1&page=2&size=3")
		if got := ids(d); got != "t1" || d.Total != 4 || d.Page != 2 || d.Size != 3 {
			t.Fatalf("page 2: %s %+v", got, d)
		}
		d = list("member_id=m1&size=1&is_pager=0")
		if got := ids(d); got != "t2,t4,t3,t1" || d.Total != 4 || d.Page != 1 || d.Size != 4 {
			t.Fatalf("is_pager=0: %s %+v", got, d)
		}
		// An empty page still has items [] (not null).
		r = h.must(200, "GET", chatPath+"/sessions?member_id=nobody", nil, "")
		if !strings.Contains(string(r.Data), `"items":[]`) {
			t.Fatalf("empty: %s", r.Data)
		}
		// The /api/v1 alias serves the same route.
		h.must(200, "GET", "/api/v1/chat/sessions?member_id=m1", nil, "")
	})
}

func TestChatSessionGet(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		csOwner(h)
		a := csSite(h, "alpha", false)
		off := csSite(h, "off", false)
		now := time.Now().UTC()
		csInsert(h, csSession(h, "t1", "m1", a, "Hi", "hello", now), csSession(h, "t-off", "m1", off, "Hi", "x", now))
		if _, err := h.d.DB.NewUpdate().Model((*models.Site)(nil)).Set("status = ?", models.SiteInactive).
			Where("id = ?", off).Exec(context.Background()); err != nil {
			t.Fatal(err)
		}
		h.siteWritten(off)

		var s ChatSessionResponse
		h.must(200, "GET", chatPath+"/sessions/t1", nil, "").into(t, &s)
		if s.ThreadID != "t1" || s.MemberID != "m1" || *s.SiteID != a || s.Title != "Hi" {
			t.Fatalf("session %+v", s)
		}
		h.must(200, "GET", chatPath+"/sessions/t1?member_id=m1&site_id="+itoa(a), nil, "")
		h.must(404, "GET", chatPath+"/sessions/nope", nil, "")
		h.must(404, "GET", chatPath+"/sessions/nope?member_id=m1", nil, "")
		h.must(403, "GET", chatPath+"/sessions/t1?member_id=m2", nil, "")
		h.must(403, "GET", chatPath+"/sessions/t1?site_id="+itoa(a+100), nil, "")
		// The session's site is read through the client site check: a
		// disabled site hides its sessions.
		h.must(404, "GET", chatPath+"/sessions/t-off", nil, "")
		h.must(404, "GET", chatPath+"/sessions/t-off/messages", nil, "")
	})
}

func TestChatSessionMessagesShape(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		csOwner(h)
		a := csSite(h, "alpha", false)
		at := time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC)
		csInsert(h, csSession(h, "th", "m1", a, "Q", "answer", at))
		seq := 0
		calls := `[{"id":"call_1","type":"function","function":{"name":"search_knowledge_base","arguments":"{\"query\":\"x\"}"},"elapsed_ms":12}]`
		sources := `[{"id":"7","title":"Doc","siteId":1,"documentId":7,"score":0.9,"sourceIndex":1}]`
		// Inserted out of order: positions decide. One row at a time: a bun
		// slice insert on SQLite takes its columns from the first row and
		// drops zero-valued columns with defaults for every row.
		csInsert(h, []any{
			&models.ChatMessage{ThreadID: "th", Turn: 1, Position: 15002, ChatMessageID: "m-final", MessageSeq: &seq, Role: "assistant",
				Content: "answer [1]", ToolCalls: "[]", Sources: sources, Extra: `{"trace":{"ttfb":1.5},"usage_metadata":{"input_tokens":3}}`,
				ElapsedMS: 900, CreatedAt: at.Add(3 * time.Second)},
			&models.ChatMessage{ThreadID: "th", Turn: 1, Position: 10000, ChatMessageID: "m-user", Role: "user", Content: "Q",
				ToolCalls: "[]", Extra: "{}", CreatedAt: at},
			&models.ChatMessage{ThreadID: "th", Turn: 1, Position: 15000, ChatMessageID: "m-call", Role: "assistant", ToolCalls: calls,
				Extra: "{}", ElapsedMS: 40, CreatedAt: at.Add(time.Second)},
			&models.ChatMessage{ThreadID: "th", Turn: 1, Position: 15001, ChatMessageID: "m-tool", Role: "tool", Content: "found 1",
				ToolCalls: "", ToolCallID: "call_1", Extra: "not json", CreatedAt: at.Add(2 * time.Second)},
			&models.ChatMessage{ThreadID: "other", Turn: 1, Position: 1, ChatMessageID: "o-user", Role: "user", Content: "x", CreatedAt: at},
		}...)

		r := h.must(200, "GET", chatPath+"/sessions/th/messages", nil, "")
		if csKeys(t, r.Data) != "messages,thread_id" {
			t.Fatalf("data: %s", r.Data)
		}
		var out struct {
			ThreadID string            `json:"thread_id"`
			Messages []json.RawMessage `json:"messages"`
		}
		r.into(t, &out)
		if out.ThreadID != "th" || len(out.Messages) != 4 {
			t.Fatalf("messages %s", r.Data)
		}
		keys := "additional_kwargs,chat_message_id,content,created_at,elapsed_ms,id,message_seq,role,sources,tool_call_id,tool_calls"
		type msg struct {
			Role             string           `json:"role"`
			Content          string           `json:"content"`
			ID               *string          `json:"id"`
			ToolCalls        []map[string]any `json:"tool_calls"`
			ToolCallID       *string          `json:"tool_call_id"`
			Sources          []map[string]any `json:"sources"`
			AdditionalKwargs map[string]any   `json:"additional_kwargs"`
			CreatedAt        string           `json:"created_at"`
			MessageSeq       *int             `json:"message_seq"`
			ChatMessageID    string           `json:"chat_message_id"`
			ElapsedMS        int64            `json:"elapsed_ms"`
		}
		ms := make([]msg, len(out.Messages))
		for i, raw := range out.Messages {
			if got := csKeys(t, raw); got != keys {
				t.Fatalf("message %d keys %s", i, got)
			}
			if !strings.Contains(string(raw), `"id":null`) {
				t.Fatalf("id not null: %s", raw)
			}
			if err := json.Unmarshal(raw, &ms[i]); err != nil {
				t.Fatal(err)
			}
		}
		var order []string
		for _, m := range ms {
			order = append(order, m.ChatMessageID)
		}
		if got := strings.Join(order, ","); got != "m-user,m-call,m-tool,m-final" {
			t.Fatalf("order %s", got)
		}
		user, call, tool, final := ms[0], ms[1], ms[2], ms[3]
		if user.Role != "user" || user.Content != "Q" || user.ToolCalls == nil || len(user.ToolCalls) != 0 ||
			user.ToolCallID != nil || user.Sources != nil || len(user.AdditionalKwargs) != 0 || user.MessageSeq != nil ||
			user.CreatedAt != "2026-03-04T05:06:07.123456+00:00" {
			t.Fatalf("user %+v", user)
		}
		if !strings.Contains(string(out.Messages[0]), `"tool_calls":[]`) || !strings.Contains(string(out.Messages[0]), `"sources":null`) ||
			!strings.Contains(string(out.Messages[0]), `"additional_kwargs":{}`) || !strings.Contains(string(out.Messages[0]), `"tool_call_id":null`) {
			t.Fatalf("user raw %s", out.Messages[0])
		}
		// The tool-call row has no text: content is null, as the reference
		// stores it (LangChain's content or None).
		if !strings.Contains(string(out.Messages[1]), `"content":null`) {
			t.Fatalf("tool-call row raw %s", out.Messages[1])
		}
		fn, _ := call.ToolCalls[0]["function"].(map[string]any)
		if call.Role != "assistant" || call.Content != "" || len(call.ToolCalls) != 1 || call.ToolCalls[0]["id"] != "call_1" ||
			fn["name"] != "search_knowledge_base" || fn["arguments"] != `{"query":"x"}` || call.ToolCalls[0]["elapsed_ms"] != float64(12) ||
			call.Sources != nil || call.MessageSeq != nil || call.ElapsedMS != 40 || call.CreatedAt != "2026-03-04T05:06:08.123456+00:00" {
			t.Fatalf("call %+v", call)
		}
		if tool.Role != "tool" || tool.ToolCallID == nil || *tool.ToolCallID != "call_1" || len(tool.ToolCalls) != 0 ||
			tool.Sources != nil || len(tool.AdditionalKwargs) != 0 {
			t.Fatalf("tool %+v", tool)
		}
		trace, _ := final.AdditionalKwargs["trace"].(map[string]any)
		if final.Content != "answer [1]" || final.MessageSeq == nil || *final.MessageSeq != 0 || len(final.Sources) != 1 ||
			final.Sources[0]["documentId"] != float64(7) || final.Sources[0]["sourceIndex"] != float64(1) ||
			trace["ttfb"] != 1.5 || final.AdditionalKwargs["usage_metadata"] == nil || final.ElapsedMS != 900 {
			t.Fatalf("final %+v", final)
		}
		if got := chatISOTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)); got != "2026-01-02T03:04:05+00:00" {
			t.Fatalf("whole second: %s", got)
		}

		h.must(200, "GET", chatPath+"/sessions/th/messages?member_id=m1", nil, "")
		h.must(403, "GET", chatPath+"/sessions/th/messages?member_id=m2", nil, "")
		h.must(404, "GET", chatPath+"/sessions/none/messages", nil, "")
	})
}

func TestChatSessionToolResult(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		csOwner(h)
		now := time.Now().UTC()
		content := `{"query":"x","results":[{"title":"Doc","content":"text"}]}`
		csInsert(h, csSession(h, "th", "m1", 0, "Q", "a", now), csSession(h, "th2", "m1", 0, "Q", "a", now),
			&models.ToolResult{ToolCallID: "call_1", ThreadID: "th", Content: content, CreatedAt: now},
			&models.ToolResult{ToolCallID: "call_2", ThreadID: "th2", Content: "{}", CreatedAt: now})

		r := h.must(200, "GET", chatPath+"/sessions/th/tool-result/call_1", nil, "")
		var out ToolResultResponse
		r.into(t, &out)
		if csKeys(t, r.Data) != "content,tool_call_id" || out.ToolCallID != "call_1" || out.Content != content {
			t.Fatalf("tool result %s", r.Data)
		}
		h.must(404, "GET", chatPath+"/sessions/th/tool-result/call_2", nil, "") // another thread's
		h.must(404, "GET", chatPath+"/sessions/th/tool-result/call_9", nil, "")
		h.must(404, "GET", chatPath+"/sessions/none/tool-result/call_1", nil, "")
		h.must(403, "GET", chatPath+"/sessions/th/tool-result/call_1?member_id=m2", nil, "")
	})
}

// csFullThread inserts a session with a message, a tool result and a feedback row.
func csFullThread(h *harness, thread, member string) {
	h.t.Helper()
	now := time.Now().UTC()
	seq := 0
	csInsert(h, csSession(h, thread, member, 0, "Q", "a", now),
		&models.ChatMessage{ThreadID: thread, Turn: 1, Position: 1, ChatMessageID: thread + "-u", Role: "user", Content: "q", CreatedAt: now},
		&models.ChatMessage{ThreadID: thread, Turn: 1, Position: 2, ChatMessageID: thread + "-a", Role: "assistant", Content: "a",
			MessageSeq: &seq, CreatedAt: now},
		&models.ToolResult{ToolCallID: thread + "-call", ThreadID: thread, Content: "{}", CreatedAt: now},
		&models.Feedback{ChatMessageID: thread + "-a", ThreadID: thread, MemberID: member, CreatedAt: now})
}

func TestChatSessionDelete(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		csOwner(h)
		for _, th := range []string{"t1", "t2", "t3"} {
			csFullThread(h, th, "m1")
		}
		csFullThread(h, "x1", "m2")

		r := h.must(422, "DELETE", chatPath+"/sessions/t1", nil, "")
		if !strings.Contains(r.Msg, "member_id") {
			t.Fatalf("missing member_id: %s", r.Raw)
		}
		h.must(403, "DELETE", chatPath+"/sessions/t1?member_id=m2", nil, "")
		if got := csThreadRows(h, "t1"); got != "1 2 1 1" {
			t.Fatalf("refused delete changed rows: %s", got)
		}
		h.must(404, "DELETE", chatPath+"/sessions/none?member_id=m1", nil, "")

		r = h.must(200, "DELETE", chatPath+"/sessions/t1?member_id=m1", nil, "")
		var del ChatSessionDeleted
		r.into(t, &del)
		if csKeys(t, r.Data) != "message,thread_id" || del.ThreadID != "t1" || del.Message == "" {
			t.Fatalf("delete: %s", r.Data)
		}
		if got := csThreadRows(h, "t1"); got != "0 0 0 0" {
			t.Fatalf("after delete: %s", got)
		}
		h.must(404, "GET", chatPath+"/sessions/t1", nil, "")
		h.must(404, "DELETE", chatPath+"/sessions/t1?member_id=m1", nil, "")

		h.must(422, "DELETE", chatPath+"/sessions", nil, "")
		r = h.must(200, "DELETE", chatPath+"/sessions?member_id=m1", nil, "")
		var all ChatSessionsDeleted
		r.into(t, &all)
		if csKeys(t, r.Data) != "deleted,message" || all.Deleted != 2 {
			t.Fatalf("delete all: %s", r.Data)
		}
		for _, th := range []string{"t2", "t3"} {
			if got := csThreadRows(h, th); got != "0 0 0 0" {
				t.Fatalf("%s: %s", th, got)
			}
		}
		if got := csThreadRows(h, "x1"); got != "1 2 1 1" {
			t.Fatalf("other member's thread: %s", got)
		}
		r = h.must(200, "DELETE", chatPath+"/sessions?member_id=m1", nil, "")
		r.into(t, &all)
		if all.Deleted != 0 {
			t.Fatalf("nothing left: %s", r.Data)
		}
	})
}

func TestChatFeedback(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		csOwner(h)
		csFullThread(h, "th", "m1") // message_seq 0 is th-a
		csInsert(h, csSession(h, "late", "m1", 0, "Q", "q", time.Now().UTC()))
		path := chatPath + "/feedback"

		for field, body := range map[string]string{
			"thread_id":   `{"message_seq":0,"member_id":"m1"}`,
			"message_seq": `{"thread_id":"th","message_seq":-1,"member_id":"m1"}`,
			"member_id":   `{"thread_id":"th","message_seq":0,"member_id":"` + strings.Repeat("m", 65) + `"}`,
			"rating":      `{"thread_id":"th","message_seq":0,"member_id":"m1","rating":"meh"}`,
			"reason":      `{"thread_id":"th","message_seq":0,"member_id":"m1","reason":""}`,
		} {
			r := h.must(422, "POST", path, body, "")
			if !strings.Contains(r.Msg, field) {
				t.Errorf("%s: %s", field, r.Raw)
			}
		}
		r := h.must(422, "POST", path, `{"thread_id":"`+strings.Repeat("t", 101)+`","message_seq":0,"member_id":"m1"}`, "")
		if !strings.Contains(r.Msg, "thread_id") {
			t.Fatalf("long thread_id: %s", r.Raw)
		}
		h.must(422, "POST", path, `{"thread_id":"th","member_id":"m1"}`, "") // message_seq required

		// Bare JSON, not the envelope; one row per (message, member).
		r = h.must(200, "POST", path, map[string]any{"thread_id": "th", "message_seq": 0, "member_id": "m1", "rating": "down", "reason": "slow"}, "")
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(r.Raw, &raw); err != nil {
			t.Fatal(err)
		}
		var rated models.ChatMessage
		if err := h.d.DB.NewSelect().Model(&rated).Where("chat_message_id = ?", "th-a").Scan(context.Background()); err != nil {
			t.Fatal(err)
		}
		// chat_message_id is the rated answer's row id, a number, as the reference's.
		if csKeys(t, r.Raw) != "chat_message_id,member_id,rating,reason" || string(raw["chat_message_id"]) != itoa(rated.ID) ||
			string(raw["rating"]) != `"down"` || string(raw["reason"]) != `"slow"` {
			t.Fatalf("feedback: %s", r.Raw)
		}
		r = h.must(200, "POST", path, map[string]any{"thread_id": "th", "message_seq": 0, "member_id": "m1", "rating": "up"}, "")
		if string(r.Raw) != `{"chat_message_id":`+itoa(rated.ID)+`,"member_id":"m1","rating":"up","reason":null}` {
			t.Fatalf("re-rate: %s", r.Raw)
		}
		var rows []models.Feedback
		if err := h.d.DB.NewSelect().Model(&rows).Where("chat_message_id = ?", "th-a").Scan(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 || rows[0].Rating == nil || *rows[0].Rating != "up" || rows[0].Reason != nil {
			t.Fatalf("rows %+v", rows)
		}

		h.must(403, "POST", path, map[string]any{"thread_id": "th", "message_seq": 0, "member_id": "m2", "rating": "up"}, "")

		// The answer is persisted shortly after the request arrives.
		done := make(chan error, 1)
		go func() {
			time.Sleep(300 * time.Millisecond)
			seq := 0
			_, err := h.d.DB.NewInsert().Model(&models.ChatMessage{ThreadID: "late", Turn: 1, Position: 5000,
				ChatMessageID: "late-a", Role: "assistant", Content: "a", MessageSeq: &seq, CreatedAt: time.Now().UTC()}).
				Exec(context.Background())
			done <- err
		}()
		start := time.Now()
		r = h.must(200, "POST", path, map[string]any{"thread_id": "late", "message_seq": 0, "member_id": "m1", "rating": "up"}, "")
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(r.Raw), `"chat_message_id":"`) || !strings.Contains(string(r.Raw), `"chat_message_id":`) {
			t.Fatalf("late: %s", r.Raw)
		}
		if el := time.Since(start); el < 250*time.Millisecond || el > 1500*time.Millisecond {
			t.Fatalf("late answer resolved after %v", el)
		}

		// Never persisted: 404 after the retries, about 1.4 s.
		start = time.Now()
		r = h.must(404, "POST", path, map[string]any{"thread_id": "th", "message_seq": 5, "member_id": "m1", "rating": "up"}, "")
		if el := time.Since(start); el < 1200*time.Millisecond || el > 2500*time.Millisecond {
			t.Fatalf("404 after %v", el)
		}
		if r.Code != 404 {
			t.Fatalf("404 envelope: %s", r.Raw)
		}
		h.must(404, "POST", path, map[string]any{"thread_id": "nope", "message_seq": 0, "member_id": "m1"}, "")
	})
}

// TestChatSessionRoutesDocumented checks the routes reach the client
// OpenAPI document (the feedback response is raw JSON).
func TestChatSessionRoutesDocumented(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	r := h.must(200, "GET", "/openapi-client.json", nil, "")
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(r.Raw, &doc); err != nil {
		t.Fatal(err)
	}
	for p, method := range map[string]string{
		"/chat/sessions": "delete", "/chat/sessions/{thread_id}": "delete", "/chat/sessions/{thread_id}/messages": "get",
		"/chat/sessions/{thread_id}/tool-result/{tool_call_id}": "get", "/chat/feedback": "post",
	} {
		if _, ok := doc.Paths[p][method]; !ok {
			t.Errorf("%s %s missing", method, p)
		}
	}
}
