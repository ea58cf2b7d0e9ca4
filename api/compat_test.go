package api

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestReferenceFrontEndsCompat calls Lore as the reference's admin and client
// front-ends do (CatWiki 1.1.7: the /admin/v1 and /v1 paths, the headers its
// custom fetch adds, the bodies its pages send, cross-origin with a preflight
// before each call) and checks the fields those pages read.
func TestReferenceFrontEndsCompat(t *testing.T) {
	h := newHarness(t, "sqlite", map[string]string{"LORE_CORS_ORIGINS": "http://localhost:8001,http://localhost:8002"})
	const admin, client = "http://localhost:8002", "http://localhost:8001"
	call := func(origin, method, path string, body any, token string, want int) *resp {
		t.Helper()
		hdrs := "content-type,x-app-state,x-admin-origin"
		if token != "" {
			hdrs += ",authorization"
		}
		pre := h.do(http.MethodOptions, path, nil, "", "Origin", origin, "Access-Control-Request-Method", method,
			"Access-Control-Request-Headers", hdrs)
		if pre.Status != http.StatusNoContent || pre.Header.Get("Access-Control-Allow-Origin") != origin {
			t.Fatalf("preflight %s %s: %d %v", method, path, pre.Status, pre.Header)
		}
		r := h.must(want, method, path, body, token, "Origin", origin, "X-App-State", "0x4f4b", "X-Admin-Origin", origin)
		if r.Header.Get("Access-Control-Allow-Origin") != origin {
			t.Fatalf("%s %s: no CORS header", method, path)
		}
		return r
	}
	// Admin: login, health (edition), current tenant (is_demo).
	var login struct {
		Token string       `json:"token"`
		User  UserResponse `json:"user"`
	}
	h.must(200, "POST", "/admin/v1/users:login", map[string]any{"email": "admin1@example.com", "password": "password123"}, "").into(t, &login)
	tok := login.Token
	var hl map[string]any
	call(admin, "GET", "/admin/v1/health", nil, "", 200).into(t, &hl)
	if hl["edition"] != "community" || hl["is_licensed"] != false || hl["version"] == "1.0.0" {
		t.Fatalf("health: %v", hl)
	}
	var tn map[string]any
	call(admin, "GET", "/admin/v1/tenants/current", nil, tok, 200).into(t, &tn)
	if tn["is_demo"] != false || tn["slug"] != "default" {
		t.Fatalf("tenant: %v", tn)
	}
	// Sites: create as CreateSiteForm, save as SiteSettings (status disabled, nulls, bot_config).
	var st SiteResponse
	call(admin, "POST", "/admin/v1/sites", map[string]any{"name": "Handbook", "slug": "handbook", "description": "Docs",
		"status": "active", "theme_color": "blue", "layout_mode": "sidebar", "quick_questions": nil,
		"bot_config":          map[string]any{"web_widget": map[string]any{"enabled": true, "title": "Ask", "primary_color": "#3b82f6", "position": "right"}},
		"show_pipeline_trace": false}, tok, 201).into(t, &st)
	if st.QuickQuestions != nil || st.Icon != nil || st.WebWidget["title"] != "Ask" || st.BotConfig["web_widget"] == nil {
		t.Fatalf("created site: %+v", st)
	}
	site := fmt.Sprintf("/admin/v1/sites/%d", st.ID)
	call(admin, "PUT", site, map[string]any{"status": "disabled"}, tok, 200).into(t, &st)
	if st.Status != "inactive" {
		t.Fatalf("disabled: %s", st.Status)
	}
	call(admin, "PUT", site, map[string]any{"name": "Handbook", "slug": "handbook", "icon": nil, "status": "active",
		"theme_color": "green", "layout_mode": "top", "quick_questions": nil, "show_pipeline_trace": true,
		"bot_config": map[string]any{"web_widget": map[string]any{"enabled": false}, "wecom_kefu": map[string]any{"enabled": false, "secret": "s3cr3t-value"}}},
		tok, 200).into(t, &st)
	if st.Status != "active" || st.ThemeColor != "green" || !st.ShowPipelineTrace || st.BotConfig["wecom_kefu"].(map[string]any)["secret"] == "s3cr3t-value" {
		t.Fatalf("saved site: %+v", st)
	}
	// Documents: the list the documents page asks (content excluded by
	// default), keyword in tags, :vectorize needs the workflow engine.
	doc := kbDocument(h, map[string]any{"title": "Install", "site_id": st.ID, "content": "Run make run.", "tags": []string{"setup-guide"}})
	var pg Page[DocumentResponse]
	call(admin, "GET", fmt.Sprintf("/admin/v1/documents?page=1&size=20&site_id=%d&keyword=setup-guide", st.ID), nil, tok, 200).into(t, &pg)
	if pg.Pagination.Total != 1 || pg.List[0].ID != doc.ID || pg.List[0].Content != nil || pg.List[0].Summary != nil {
		t.Fatalf("document list: %+v", pg)
	}
	// EE and system panels answer.
	for _, p := range []string{site + "/ee-config", site + "/analytics?days=7", site + "/chat-sessions?page=1&size=20",
		fmt.Sprintf("/admin/v1/feedback/stats?site_id=%d", st.ID), fmt.Sprintf("/admin/v1/feedback/list?site_id=%d&page=1&size=20", st.ID),
		"/admin/v1/system-info", "/admin/v1/tenants?page=1&size=10", "/admin/v1/files?prefix=&recursive=true"} {
		call(admin, "GET", p, nil, tok, 200)
	}
	// Client: site by slug, site list, documents; malformed JSON is 422.
	var cs map[string]any
	call(client, "GET", "/v1/sites:bySlug/handbook?tenant_slug=default", nil, "", 200).into(t, &cs)
	if cs["quick_questions"] != nil || cs["description"] != "Docs" {
		t.Fatalf("client site: %v", cs)
	}
	r := call(client, "GET", "/v1/chat/sessions?member_id=visitor-1&page=1&size=20", nil, "", 200)
	if !strings.Contains(string(r.Data), `"list":[]`) {
		t.Fatalf("sessions: %s", r.Data)
	}
	h.must(422, "POST", "/v1/chat/feedback", `{"thread_id":`, "")
	// Chat as useAIChat's fetch sends it from a page of no site (no filter).
	// No workflow engine here: the turn cannot be set up, which the client
	// shows from a response.error event (HTTP 200), the status readable
	// cross-origin.
	r = call(client, "POST", "/v1/chat/responses", map[string]any{"input": "hi", "stream": true, "user": "visitor-1"}, "", 200)
	if !strings.HasPrefix(string(r.Raw), `data: {"type":"response.error","error":`) || !strings.HasSuffix(string(r.Raw), "\n\ndata: [DONE]\n\n") ||
		r.Header.Get(StreamErrorStatusHeader) != "503" || !strings.Contains(r.Header.Get("Access-Control-Expose-Headers"), StreamErrorStatusHeader) {
		t.Fatalf("chat setup error: %q %v", r.Raw, r.Header)
	}
}
