package api

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/models"
	"go.temporal.io/sdk/client"
)

// CheckHealth answers for the fake workflow engine (GET /system-info pings it).
func (f *fakeTemporal) CheckHealth(context.Context, *client.CheckHealthRequest) (*client.CheckHealthResponse, error) {
	return &client.CheckHealthResponse{}, nil
}

// storeTurn writes one stored turn of a thread of the site as the chat
// persistence does: the user row and the answer, with sources when cited.
func storeTurn(t *testing.T, h *harness, siteID int64, thread, member, question, answer string, cited bool, at time.Time) string {
	t.Helper()
	ctx := context.Background()
	sess, err := h.d.DB.ChatSessionByThread(ctx, thread)
	if err != nil {
		sess = &models.ChatSession{ThreadID: thread, TenantID: 1, SiteID: &siteID, MemberID: member, OwnerHash: chatSecretHash(csSecret), Title: question,
			Source: "web_chat", CreatedAt: at, UpdatedAt: at}
		if _, err := h.d.DB.NewInsert().Model(sess).Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	sess.TurnCount++
	sess.MessageCount += 2
	sess.LastMessage, sess.LastMessageRole, sess.UpdatedAt = answer, "assistant", at
	if _, err := h.d.DB.NewUpdate().Model(sess).WherePK().Exec(ctx); err != nil {
		t.Fatal(err)
	}
	var seq int
	n, _ := h.d.DB.NewSelect().Model((*models.ChatMessage)(nil)).Where("thread_id = ? AND role = 'assistant'", thread).Count(ctx)
	seq = int(n)
	sources := ""
	if cited {
		sources = `[{"id":"1","title":"Install","siteId":1,"documentId":1,"score":0.9,"sourceIndex":1}]`
	}
	msgID := fmt.Sprintf("%s-%d", thread, sess.TurnCount)
	rows := []models.ChatMessage{
		{ThreadID: thread, Turn: sess.TurnCount, Position: 2 * sess.TurnCount, ChatMessageID: msgID + "-u", Role: "user",
			Content: question, ToolCalls: "[]", Extra: "{}", CreatedAt: at},
		{ThreadID: thread, Turn: sess.TurnCount, Position: 2*sess.TurnCount + 1, ChatMessageID: msgID + "-a", MessageSeq: &seq,
			Role: "assistant", Content: answer, ToolCalls: "[]", Sources: sources, Extra: "{}", CreatedAt: at.Add(time.Second)},
	}
	for i := range rows { // one by one: a multi-row insert leaves out columns the first row has at their default
		if _, err := h.d.DB.NewInsert().Model(&rows[i]).Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return msgID + "-a"
}

// TestAdminInsights covers the reference's EE review routes on both
// dialects: a site's chat sessions (list, search, messages, delete scoped
// to the site), feedback (list with the rated answer, stats) and analytics
// answered from stored turns, view events and feedback, with unanswered
// questions from answers that cited nothing.
func TestAdminInsights(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		csOwner(h) // the client that opened storeTurn's sessions rates them
		site, other := kbSite(h, "Docs"), kbSite(h, "Other")
		now := time.Now().UTC()
		a1 := storeTurn(t, h, site.ID, "auto-aaa", "m1", "How do I install?", "Run make run [1].", true, now.Add(-2*time.Hour))
		storeTurn(t, h, site.ID, "auto-bbb", "m2", "how do i install", "Run make run [1].", true, now.Add(-time.Hour))
		a3 := storeTurn(t, h, site.ID, "auto-ccc", "m3", "Where is the billing API?", "I could not find this in the documentation of this site.", false, now.Add(-30*time.Minute))
		storeTurn(t, h, site.ID, "auto-ccc", "m3", "Where is the billing API?", "Still nothing.", false, now.Add(-20*time.Minute))
		storeTurn(t, h, other.ID, "auto-zzz", "m9", "Other site question", "Answer [1].", true, now)
		h.must(200, "POST", "/v1/chat/feedback", map[string]any{"thread_id": "auto-aaa", "message_seq": 0, "member_id": "m1", "rating": "up"}, "")
		h.must(200, "POST", "/v1/chat/feedback", map[string]any{"thread_id": "auto-ccc", "message_seq": 0, "member_id": "m3", "rating": "down", "reason": "incomplete"}, "")
		h.must(200, "POST", "/v1/chat/feedback", map[string]any{"thread_id": "auto-zzz", "message_seq": 0, "member_id": "m9", "rating": "down"}, "")

		base := fmt.Sprintf("/admin/v1/sites/%d", site.ID)
		var list SiteChatList
		h.must(200, "GET", base+"/chat-sessions?size=2", nil, h.admin).into(t, &list)
		if list.Total != 3 || len(list.List) != 2 || list.List[0].ThreadID != "auto-ccc" || list.Page != 1 || list.Size != 2 {
			t.Fatalf("sessions: %+v", list)
		}
		h.must(200, "GET", base+"/chat-sessions?keyword=m2&search_field=member_id", nil, h.admin).into(t, &list)
		if list.Total != 1 || list.List[0].ThreadID != "auto-bbb" {
			t.Fatalf("search by member: %+v", list)
		}
		h.must(200, "GET", base+"/chat-sessions?keyword=billing&search_field=thread_id", nil, h.admin).into(t, &list)
		if list.Total != 0 {
			t.Fatalf("billing is not in a thread id: %+v", list)
		}
		var msgs ChatMessages
		h.must(200, "GET", base+"/chat-sessions/auto-ccc/messages", nil, h.admin).into(t, &msgs)
		if msgs.ThreadID != "auto-ccc" || len(msgs.Messages) != 4 || msgs.Messages[0].Role != "user" {
			t.Fatalf("messages: %+v", msgs)
		}
		h.must(404, "GET", base+"/chat-sessions/auto-zzz/messages", nil, h.admin)
		h.must(404, "DELETE", base+"/chat-sessions/auto-zzz", nil, h.admin)

		var fl FeedbackListPage
		h.must(200, "GET", fmt.Sprintf("/admin/v1/feedback/list?site_id=%d", site.ID), nil, h.admin).into(t, &fl)
		if fl.Total != 2 || len(fl.List) != 2 || fl.List[0].Rating != "down" || fl.List[0].ThreadID != "auto-ccc" ||
			fl.List[0].MessageContent == nil || !strings.Contains(*fl.List[0].MessageContent, "could not find") ||
			fl.List[0].Reason == nil || *fl.List[0].Reason != "incomplete" || fl.List[0].ChatMessageID == 0 {
			t.Fatalf("feedback list: %+v", fl)
		}
		var msgRow models.ChatMessage
		if err := h.d.DB.NewSelect().Model(&msgRow).Where("chat_message_id = ?", a3).Scan(context.Background()); err != nil || msgRow.ID != fl.List[0].ChatMessageID {
			t.Fatalf("chat_message_id %d is not the rated row %d (%v)", fl.List[0].ChatMessageID, msgRow.ID, err)
		}
		h.must(200, "GET", fmt.Sprintf("/admin/v1/feedback/list?site_id=%d&rating=up", site.ID), nil, h.admin).into(t, &fl)
		if fl.Total != 1 || fl.List[0].ThreadID != "auto-aaa" {
			t.Fatalf("up only: %+v (answer %s)", fl, a1)
		}
		var fs FeedbackStats
		h.must(200, "GET", fmt.Sprintf("/admin/v1/feedback/stats?site_id=%d", site.ID), nil, h.admin).into(t, &fs)
		if fs.Total != 2 || fs.Up != 1 || fs.Down != 1 || fs.UpRate != 50 || fs.Reasons["incomplete"] != 1 {
			t.Fatalf("feedback stats: %+v", fs)
		}
		h.must(422, "GET", "/admin/v1/feedback/stats", nil, h.admin)

		var an SiteAnalytics
		h.must(200, "GET", base+"/analytics?days=7", nil, h.admin).into(t, &an)
		if an.Days != 7 || len(an.Trends) != 7 || len(an.QuestionTrends) != 7 || len(an.HourlyDistribution) != 24 ||
			an.TotalQuestions != 4 || an.UnansweredCount != 2 || an.AnswerRate != 50 || an.RegionStats == nil {
			t.Fatalf("analytics totals: %+v", an)
		}
		if len(an.TopQuestions) != 2 || an.TopQuestions[0].Count != 2 || an.TopQuestions[1].Count != 2 {
			t.Fatalf("top questions (install asked twice in two spellings, billing twice): %+v", an.TopQuestions)
		}
		if len(an.UnansweredQuestions) != 1 || an.UnansweredQuestions[0].Question != "Where is the billing API?" ||
			an.UnansweredQuestions[0].Unanswered != 2 || an.UnansweredQuestions[0].ThreadID != "auto-ccc" {
			t.Fatalf("unanswered: %+v", an.UnansweredQuestions)
		}
		asked := 0
		for _, d := range an.QuestionTrends {
			asked += d.Questions
		}
		if asked != 4 || an.Feedback.Total != 2 || an.Feedback.Down != 1 {
			t.Fatalf("question trends %+v feedback %+v", an.QuestionTrends, an.Feedback)
		}
		h.must(422, "GET", base+"/analytics?days=91", nil, h.admin)

		h.must(200, "DELETE", base+"/chat-sessions/auto-ccc", nil, h.admin)
		h.must(404, "GET", base+"/chat-sessions/auto-ccc/messages", nil, h.admin)
		h.must(200, "GET", fmt.Sprintf("/admin/v1/feedback/stats?site_id=%d", site.ID), nil, h.admin).into(t, &fs)
		if fs.Total != 1 || fs.Down != 0 {
			t.Fatalf("the deleted thread's feedback stayed: %+v", fs)
		}
	})
}

// TestTenantRoutes covers GET /tenants/current and the EE tenant management
// in the reference's TenantEESchema shape.
func TestTenantRoutes(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		var cur TenantResponse
		h.must(200, "GET", "/admin/v1/tenants/current", nil, h.admin).into(t, &cur)
		if cur.ID != 1 || cur.Slug != "default" || cur.IsDemo || cur.Status != "active" || cur.Domain != nil ||
			cur.PlatformResourcesAllowed == nil || cur.AdvancedConfig == nil {
			t.Fatalf("current: %+v", cur)
		}
		var tn TenantResponse
		h.must(201, "POST", "/admin/v1/tenants", map[string]any{"name": "Acme", "slug": "acme", "description": "d",
			"admin_email": "boss@acme.example", "admin_password": "12345678", "max_sites": 3, "plan": "pro"}, h.admin).into(t, &tn)
		if tn.Slug != "acme" || tn.Description == nil || *tn.Description != "d" || tn.MaxSites != 3 || tn.Plan != "pro" {
			t.Fatalf("created: %+v", tn)
		}
		h.must(409, "POST", "/admin/v1/tenants", map[string]any{"name": "Acme2", "slug": "acme",
			"admin_email": "other@acme.example", "admin_password": "12345678"}, h.admin)
		var login struct {
			Token string       `json:"token"`
			User  UserResponse `json:"user"`
		}
		h.must(200, "POST", "/admin/v1/users:login", map[string]any{"email": "boss@acme.example", "password": "12345678"}, "").into(t, &login)
		// The reference's admin app reads a tenant's own admin as tenant_admin.
		if login.User.TenantID != tn.ID || login.User.Role != "tenant_admin" {
			t.Fatalf("tenant admin: %+v", login.User)
		}
		h.must(200, "GET", "/admin/v1/tenants/current", nil, login.Token).into(t, &cur)
		if cur.ID != tn.ID {
			t.Fatalf("current of the new admin: %+v", cur)
		}
		h.must(200, "GET", "/admin/v1/tenants/current", nil, h.admin, selectedTenantHeader, itoa(tn.ID)).into(t, &cur)
		if cur.ID != tn.ID {
			t.Fatalf("selected tenant: %+v", cur)
		}
		editor := h.userToken(models.RoleEditor)
		h.must(200, "GET", "/admin/v1/tenants/current", nil, editor, selectedTenantHeader, itoa(tn.ID)).into(t, &cur)
		if cur.ID != 1 {
			t.Fatalf("an editor selected another tenant: %+v", cur)
		}
		var pg Page[TenantResponse]
		h.must(200, "GET", "/admin/v1/tenants?keyword=acm", nil, h.admin).into(t, &pg)
		if pg.Pagination.Total != 1 || pg.List[0].ID != tn.ID {
			t.Fatalf("list: %+v", pg)
		}
		h.must(200, "PUT", "/admin/v1/tenants/"+itoa(tn.ID), map[string]any{"description": nil, "status": "disabled", "max_users": 9}, h.admin).into(t, &tn)
		if tn.Description != nil || tn.Status != "inactive" || tn.MaxUsers != 9 || tn.MaxSites != 3 {
			t.Fatalf("update (null clears, disabled is inactive, plan merged): %+v", tn)
		}
		h.must(403, "GET", "/admin/v1/tenants", nil, editor)
		h.must(400, "DELETE", "/admin/v1/tenants/"+itoa(tn.ID), nil, h.admin) // still has its admin
		h.must(400, "DELETE", "/admin/v1/tenants/1", nil, h.admin)            // the caller's own
		if _, err := h.d.DB.NewDelete().Model((*models.User)(nil)).Where("tenant_id = ?", tn.ID).Exec(context.Background()); err != nil {
			t.Fatal(err)
		}
		h.must(200, "DELETE", "/admin/v1/tenants/"+itoa(tn.ID), nil, h.admin)
		h.must(404, "GET", "/admin/v1/tenants/"+itoa(tn.ID), nil, h.admin)
	})
}

// TestEEConfig covers GET/PATCH /sites/{id}/ee-config: making a site private
// without a password generates one, the access fields follow, the API bot
// key is shown once and then masked, works on /v1/bot/models, and stops
// working when the bot is disabled.
func TestEEConfig(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	site := kbSite(h, "Docs")
	path := fmt.Sprintf("/admin/v1/sites/%d/ee-config", site.ID)
	var cfg SiteEEConfig
	h.must(200, "GET", path, nil, h.admin).into(t, &cfg)
	if cfg.SiteID != site.ID || !cfg.Access.IsPublic || cfg.Access.HasPassword || cfg.APIBot.Enabled || cfg.APIBot.Timeout != 30 || cfg.APIBot.APIKey != "" {
		t.Fatalf("defaults: %+v", cfg)
	}
	h.must(200, "PATCH", path, map[string]any{"access": map[string]any{"is_public": false}}, h.admin).into(t, &cfg)
	if cfg.Access.IsPublic || !cfg.Access.HasPassword || cfg.Access.GeneratedPassword == nil || len(*cfg.Access.GeneratedPassword) < 8 {
		t.Fatalf("private: %+v", cfg.Access)
	}
	var tok SiteAccessToken
	h.must(200, "POST", "/v1/client/sites/"+site.Slug+"/verify-password", map[string]any{"password": *cfg.Access.GeneratedPassword}, "").into(t, &tok)
	h.must(200, "PATCH", path, map[string]any{"access": map[string]any{"is_public": true}}, h.admin).into(t, &cfg)
	if !cfg.Access.IsPublic || cfg.Access.HasPassword || cfg.Access.GeneratedPassword != nil {
		t.Fatalf("public again: %+v", cfg.Access)
	}
	h.must(200, "PATCH", path, map[string]any{"api_bot": map[string]any{"enabled": true, "timeout": 45}}, h.admin).into(t, &cfg)
	key := cfg.APIBot.APIKey
	if !cfg.APIBot.Enabled || cfg.APIBot.Timeout != 45 || !strings.HasPrefix(key, apiKeyPrefix) || strings.Contains(key, "*") {
		t.Fatalf("enabled: %+v", cfg.APIBot)
	}
	h.must(200, "GET", "/v1/bot/models", nil, key)
	h.must(200, "GET", path, nil, h.admin).into(t, &cfg)
	if cfg.APIBot.APIKey != key[:apiKeyShown]+"****" {
		t.Fatalf("key not masked: %+v", cfg.APIBot)
	}
	// Saving the page sends the masked key back: nothing changes.
	h.must(200, "PATCH", path, map[string]any{"api_bot": map[string]any{"enabled": true, "api_key": cfg.APIBot.APIKey, "timeout": 45}}, h.admin)
	h.must(200, "GET", "/v1/bot/models", nil, key)
	own := "my-own-api-key-0123456789"
	h.must(200, "PATCH", path, map[string]any{"api_bot": map[string]any{"api_key": own}}, h.admin).into(t, &cfg)
	if cfg.APIBot.APIKey != own {
		t.Fatalf("own key: %+v", cfg.APIBot)
	}
	h.must(401, "GET", "/v1/bot/models", nil, key)
	h.must(200, "GET", "/v1/bot/models", nil, own)
	h.must(422, "PATCH", path, map[string]any{"api_bot": map[string]any{"api_key": "short"}}, h.admin)
	h.must(200, "PATCH", path, map[string]any{"api_bot": map[string]any{"enabled": false}}, h.admin).into(t, &cfg)
	if cfg.APIBot.Enabled || cfg.APIBot.APIKey != "" {
		t.Fatalf("disabled: %+v", cfg.APIBot)
	}
	h.must(401, "GET", "/v1/bot/models", nil, own)
}

// TestHealthEditionAndSystemInfo checks the edition pair, the build version
// and GET /system-info, which names the engines without their credentials.
func TestHealthEditionAndSystemInfo(t *testing.T) {
	h := newHarness(t, "sqlite", map[string]string{"REDIS_URL": ""})
	var hl Health
	h.must(200, "GET", "/admin/v1/health", nil, "").into(t, &hl)
	if hl.Edition != "community" || hl.IsLicensed || hl.Version != BuildVersion() || hl.Version == "1.0.0" || hl.Version == "" {
		t.Fatalf("health: %+v", hl)
	}
	var si SystemInfo
	h.must(200, "GET", "/admin/v1/system-info", nil, h.admin).into(t, &si)
	if si.System.Version != hl.Version || si.System.Edition != "Community" || !si.Database.Ping || si.Database.Backend != "SQLite" ||
		!si.Cache.Ping || !si.ObjectStorage.Ping || si.ObjectStorage.Backend != "Local" {
		t.Fatalf("system info: %+v", si)
	}
	if got := hostOnly("postgres://lore:s3cret@db.internal:5432/lore?sslmode=disable"); got != "db.internal:5432/lore" {
		t.Fatalf("hostOnly kept credentials or lost the host: %q", got)
	}
	h.must(403, "GET", "/admin/v1/system-info", nil, h.userToken(models.RoleSiteAdmin))
}
