package api

import (
	"context"
	"strings"
	"testing"

	"github.com/lorekb/lore/models"
)

// newTenantAdmin creates a tenant beside the platform's and returns its id
// and the token of an admin of it (a tenant admin, not a platform admin).
func newTenantAdmin(h *harness, slug string) (int64, string) {
	h.t.Helper()
	var tn TenantResponse
	h.must(201, "POST", adminPath+"/tenants", map[string]any{"name": slug, "slug": slug, "admin_email": "first@" + slug + ".example.com",
		"admin_password": slug + "-password-1"}, h.admin).into(h.t, &tn)
	tok, _ := h.tenantUser(models.RoleAdmin, tn.ID)
	return tn.ID, tok
}

// TestTenantSectionsKeepThePlatformKeyOnlyWithItsModel: a tenant's
// ai-config section that would inherit the platform's environment key
// (api_key omitted or masked) but changes the model away from the
// platform's is refused (422) until it sends its own key; with the
// platform's model settings it keeps inheriting. The platform tenant's
// admins are exempt.
func TestTenantSectionsKeepThePlatformKeyOnlyWithItsModel(t *testing.T) {
	h := newHarness(t, "sqlite", map[string]string{"CHAT_PROVIDER": "openai", "CHAT_BASE_URL": "https://llm.example.com/v1",
		"CHAT_MODEL": "gpt-4o-mini", "CHAT_API_KEY": "sk-platform-key-123456"})
	ctx := context.Background()
	tenant, boss := newTenantAdmin(h, "acme")
	chat := func(fields map[string]any) map[string]any { return map[string]any{"chat": fields} }
	base := map[string]any{"provider": "openai", "base_url": "https://llm.example.com/v1"}
	with := func(kv ...any) map[string]any {
		m := map[string]any{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}

	// Another model on the platform's endpoint, key omitted or masked: 422.
	for _, body := range []map[string]any{chat(with("model", "gpt-4.5-preview")), chat(with("model", "o1", "api_key", "sk-****456"))} {
		r := h.do("PUT", scPath+"/ai-config", body, boss)
		if r.Status != 422 || !strings.Contains(r.Msg, "chat.api_key") {
			t.Fatalf("%v: %d %s", body, r.Status, r.Raw)
		}
	}
	if ai, _ := h.d.AIConfig(ctx, tenant); ai.Chat.Model != "gpt-4o-mini" {
		t.Fatalf("a refused section was stored: %+v", ai.Chat)
	}
	// The platform's model settings keep the platform's key.
	h.must(200, "PUT", scPath+"/ai-config", chat(with("model", "gpt-4o-mini", "is_vision", true)), boss)
	if ai, _ := h.d.AIConfig(ctx, tenant); ai.Chat.APIKey != "sk-platform-key-123456" || !ai.Chat.IsVision {
		t.Fatalf("platform settings: %+v", ai.Chat)
	}
	// Once stored, a later change of the model alone is refused too.
	if r := h.do("PUT", scPath+"/ai-config", chat(with("model", "gpt-4.5-preview")), boss); r.Status != 422 {
		t.Fatalf("model change after the copy: %d %s", r.Status, r.Raw)
	}
	// Its own key: any model.
	h.must(200, "PUT", scPath+"/ai-config", chat(with("model", "gpt-4.5-preview", "api_key", "sk-acme-own-key-7890")), boss)
	if ai, _ := h.d.AIConfig(ctx, tenant); ai.Chat.APIKey != "sk-acme-own-key-7890" || ai.Chat.Model != "gpt-4.5-preview" {
		t.Fatalf("own key: %+v", ai.Chat)
	}
	// ... kept (masked or omitted) when the model changes again: it is not the platform's.
	h.must(200, "PUT", scPath+"/ai-config", chat(with("model", "o1")), boss)

	// The platform admin may change the model and keep the environment key.
	platform, _ := h.d.DB.EnsureDefaultTenant(ctx)
	h.must(200, "PUT", scPath+"/ai-config", chat(with("model", "gpt-4.5-preview")), h.admin)
	if ai, _ := h.d.AIConfig(ctx, platform); ai.Chat.APIKey != "sk-platform-key-123456" || ai.Chat.Model != "gpt-4.5-preview" {
		t.Fatalf("platform admin: %+v", ai.Chat)
	}
}

// TestSiteAdminsCannotLiftChatLimits: ee-config's caller_instructions and
// daily_token_budget are a tenant admin's or platform admin's to change; a
// site_admin changing either is refused (403) with nothing written, while
// the other ee-config fields, and the chat block sent back unchanged, stay
// open to it.
func TestSiteAdminsCannotLiftChatLimits(t *testing.T) {
	h := newHarness(t, "sqlite", map[string]string{"LORE_CHAT_DAILY_TOKEN_BUDGET": "1000"})
	st := saSite(h, "limited")
	path := adminPath + "/sites/" + itoa(st.ID) + "/ee-config"
	sa := h.userToken(models.RoleSiteAdmin, st.ID)
	read := func() SiteEEConfig {
		var cfg SiteEEConfig
		h.must(200, "GET", path, nil, h.admin).into(t, &cfg)
		return cfg
	}
	for _, chat := range []map[string]any{{"caller_instructions": true}, {"daily_token_budget": 0}, {"daily_token_budget": 5000000},
		{"daily_token_budget": 500}} {
		r := h.do("PATCH", path, map[string]any{"access": map[string]any{"is_public": false}, "chat": chat}, sa)
		if r.Status != 403 || !strings.Contains(r.Msg, "admin") {
			t.Fatalf("site_admin %v: %d %s", chat, r.Status, r.Raw)
		}
	}
	if cfg := read(); cfg.Chat.CallerInstructions || cfg.Chat.DailyTokenBudget != nil || cfg.Chat.EffectiveBudget != 1000 || !cfg.Access.IsPublic {
		t.Fatalf("a refused request wrote: %+v", cfg)
	}
	// Other fields stay open to the site_admin, and so does the chat block as stored.
	h.must(200, "PATCH", path, map[string]any{"api_bot": map[string]any{"timeout": 45},
		"chat": map[string]any{"caller_instructions": false, "daily_token_budget": -1}}, sa)
	if cfg := read(); cfg.APIBot.Timeout != 45 {
		t.Fatalf("api_bot by the site_admin: %+v", cfg.APIBot)
	}
	// A tenant admin and the platform admin may change them.
	h.must(200, "PATCH", path, map[string]any{"chat": map[string]any{"caller_instructions": true, "daily_token_budget": 0}}, h.admin)
	if cfg := read(); !cfg.Chat.CallerInstructions || cfg.Chat.EffectiveBudget != 0 {
		t.Fatalf("platform admin: %+v", cfg.Chat)
	}
	h.must(200, "PATCH", path, map[string]any{"chat": map[string]any{"caller_instructions": true, "daily_token_budget": 0}}, sa) // unchanged
	_, boss := newTenantAdmin(h, "acme")
	var other SiteResponse
	h.must(201, "POST", adminPath+"/sites", map[string]any{"name": "Acme", "slug": "acme-site"}, boss).into(t, &other)
	h.must(200, "PATCH", adminPath+"/sites/"+itoa(other.ID)+"/ee-config", map[string]any{"chat": map[string]any{"daily_token_budget": 7}}, boss)
}

// The model connection test spends the platform's key by the same rule: a
// tenant's test of another model on it, without a key of its own, is 422
// and makes no call.
func TestConnectionTestKeepsThePlatformKeyWithItsModel(t *testing.T) {
	h := newHarness(t, "sqlite", map[string]string{"CHAT_PROVIDER": "openai", "CHAT_BASE_URL": "https://llm.example.com/v1",
		"CHAT_MODEL": "gpt-4o-mini", "CHAT_API_KEY": "sk-platform-key-123456"})
	_, boss := newTenantAdmin(h, "acme")
	body := map[string]any{"chat": map[string]any{"provider": "openai", "base_url": "https://llm.example.com/v1", "model": "gpt-4.5-preview"}}
	r := h.do("POST", aiTestPath, body, boss)
	if r.Status != 422 || !strings.Contains(r.Msg, "chat.api_key") {
		t.Fatalf("tenant test of another model on the platform key: %d %s", r.Status, r.Raw)
	}
}
