package api

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/cache"
	"github.com/lorekb/lore/internal/chatbudget"
)

// TestPublicChatIsRateLimited: per client IP and site, then per site, on the
// responses and completions routes (429 with Retry-After, before any turn is
// stored or any model called).
func TestPublicChatIsRateLimited(t *testing.T) {
	backends(t, map[string]string{"LORE_CHAT_RATE_PER_IP": "3", "LORE_CHAT_RATE_PER_SITE": "5"}, func(t *testing.T, h *harness) {
		st := saSite(h, "chatty")
		body := map[string]any{"input": "hello", "filter": map[string]any{"site_id": st.ID}}
		send := func(ip string) *resp {
			return h.do("POST", clientPath+"/chat/responses", body, "", "X-Forwarded-For", ip)
		}
		for i := 0; i < 3; i++ {
			if r := send("10.1.1.1"); r.Status == 429 {
				t.Fatalf("request %d refused", i+1)
			}
		}
		r := send("10.1.1.1")
		if r.Status != 429 || r.Code != 429 || r.Header.Get("Retry-After") == "" {
			t.Fatalf("4th request from one IP: %d %s", r.Status, r.Raw)
		}
		// Two more from another address reach the site's limit (5).
		for i := 0; i < 2; i++ {
			if r := send("10.1.1.2"); r.Status == 429 {
				t.Fatalf("other IP request %d refused", i+1)
			}
		}
		cr := h.do("POST", clientPath+"/chat/completions?site_id="+itoa(st.ID),
			map[string]any{"model": "x", "messages": []map[string]string{{"role": "user", "content": "hi"}}}, "", "X-Forwarded-For", "10.1.1.3")
		if cr.Status != 429 {
			t.Fatalf("completions past the site limit: %d %s", cr.Status, cr.Raw)
		}
		var n int
		if err := h.d.DB.NewSelect().Table("chat_sessions").ColumnExpr("count(*)").Scan(t.Context(), &n); err != nil || n != 0 {
			t.Fatalf("sessions stored: %d %v", n, err)
		}
	})
}

// TestCallersCannotPickTheModelOrRewriteThePrompt: a turn always uses the
// tenant's model; caller instructions are dropped unless the site allows
// them (ee-config chat.caller_instructions), then capped to
// LORE_CHAT_CALLER_INSTRUCTIONS_MAX (default 2,000). On the old code a
// global setting alone decided, for every site at once.
func TestCallersCannotPickTheModelOrRewriteThePrompt(t *testing.T) {
	for _, c := range []struct {
		env     map[string]string
		allow   bool
		want    int
		comment string
	}{
		{nil, false, 0, "default: dropped"},
		{map[string]string{"LORE_CHAT_CALLER_INSTRUCTIONS_MAX": "50"}, false, 0, "a cap alone does not allow them"},
		{nil, true, 2000, "allowed by the site: the default cap"},
		{map[string]string{"LORE_CHAT_CALLER_INSTRUCTIONS_MAX": "50"}, true, 50, "allowed, capped"},
		{map[string]string{"LORE_CHAT_CALLER_INSTRUCTIONS_MAX": "0"}, true, 0, "the operator turned them off"},
	} {
		h := newHarness(t, "sqlite", c.env)
		st := saSite(h, "guarded")
		if c.allow {
			var cfg SiteEEConfig
			h.must(200, "PATCH", adminPath+"/sites/"+itoa(st.ID)+"/ee-config", map[string]any{"chat": map[string]any{"caller_instructions": true}},
				h.admin).into(t, &cfg)
			if !cfg.Chat.CallerInstructions {
				t.Fatalf("%s: ee-config %+v", c.comment, cfg.Chat)
			}
		}
		site, err := h.d.DB.GetSite(t.Context(), st.ID)
		if err != nil {
			t.Fatal(err)
		}
		turn := chatTurn{Site: site, Model: "gpt-4-32k-expensive", Instructions: strings.Repeat("é", 3000)}
		h.s.guardTurn(&turn)
		if turn.Model != "" || len([]rune(turn.Instructions)) != c.want {
			t.Fatalf("%s: model %q, instructions %d runes, want %d", c.comment, turn.Model, len([]rune(turn.Instructions)), c.want)
		}
	}
}

// TestChatDailyTokenBudget: once the tokens counted for a site today reach
// its budget (LORE_CHAT_DAILY_TOKEN_BUDGET, or the site's ee-config
// chat.daily_token_budget), its chat turns are 429 with Retry-After until
// 00:00 UTC, before anything is stored; other sites and a lifted budget
// pass. The old code had no budget.
func TestChatDailyTokenBudget(t *testing.T) {
	backends(t, map[string]string{"LORE_CHAT_DAILY_TOKEN_BUDGET": "1000"}, func(t *testing.T, h *harness) {
		spent, fresh := saSite(h, "spent"), saSite(h, "fresh")
		ctr := h.d.Cache.(cache.Counter)
		if err := chatbudget.Add(t.Context(), ctr, chatbudget.Scope(spent.ID, spent.TenantID), 600, time.Now()); err != nil {
			t.Fatal(err)
		}
		ask := func(site int64, stream bool) *resp {
			return h.do("POST", clientPath+"/chat/responses", map[string]any{"input": "hello", "stream": stream,
				"filter": map[string]any{"site_id": site}}, "")
		}
		if r := ask(spent.ID, false); r.Status == 429 {
			t.Fatalf("under budget: %d %s", r.Status, r.Raw)
		}
		if err := chatbudget.Add(t.Context(), ctr, chatbudget.Scope(spent.ID, spent.TenantID), 400, time.Now()); err != nil {
			t.Fatal(err)
		}
		r := ask(spent.ID, false)
		retry, _ := strconv.Atoi(r.Header.Get("Retry-After"))
		until := int(chatbudget.UntilReset(time.Now()) / time.Second)
		if r.Status != 429 || r.Code != 429 || retry < until-5 || retry > until+5 || !strings.Contains(r.Msg, "budget") {
			t.Fatalf("over budget: %d Retry-After %q (want about %d) %s", r.Status, r.Header.Get("Retry-After"), until, r.Raw)
		}
		// A stream gets the refusal as the reference sends setup errors:
		// HTTP 200, one response.error event, [DONE]; Retry-After stays.
		sr := ask(spent.ID, true)
		if sr.Status != 200 || !strings.Contains(string(sr.Raw), `"type":"response.error"`) || !strings.Contains(string(sr.Raw), "budget") ||
			!strings.HasSuffix(string(sr.Raw), "data: [DONE]\n\n") || sr.Header.Get(StreamErrorStatusHeader) != "429" || sr.Header.Get("Retry-After") == "" {
			t.Fatalf("stream over budget: %d %v %s", sr.Status, sr.Header, sr.Raw)
		}
		cr := h.do("POST", clientPath+"/chat/completions?site_id="+itoa(spent.ID),
			map[string]any{"model": "x", "messages": []map[string]string{{"role": "user", "content": "hi"}}}, "")
		if cr.Status != 429 {
			t.Fatalf("completions over budget: %d %s", cr.Status, cr.Raw)
		}
		if r := ask(fresh.ID, false); r.Status == 429 {
			t.Fatalf("another site: %d %s", r.Status, r.Raw)
		}
		var n int
		if err := h.d.DB.NewSelect().Table("chat_sessions").ColumnExpr("count(*)").Where("site_id = ?", spent.ID).
			Scan(t.Context(), &n); err != nil || n != 0 {
			t.Fatalf("sessions stored: %d %v", n, err)
		}
		// ee-config shows the count; the site's own budget replaces the
		// default (0: none), -1 returns to the default.
		cfgPath := adminPath + "/sites/" + itoa(spent.ID) + "/ee-config"
		var cfg SiteEEConfig
		h.must(200, "GET", cfgPath, nil, h.admin).into(t, &cfg)
		if cfg.Chat.TokensUsedToday != 1000 || cfg.Chat.EffectiveBudget != 1000 || cfg.Chat.DailyTokenBudget != nil {
			t.Fatalf("ee-config chat: %+v", cfg.Chat)
		}
		h.must(200, "PATCH", cfgPath, map[string]any{"chat": map[string]any{"daily_token_budget": 5000}}, h.admin).into(t, &cfg)
		if cfg.Chat.EffectiveBudget != 5000 || cfg.Chat.DailyTokenBudget == nil || *cfg.Chat.DailyTokenBudget != 5000 {
			t.Fatalf("site budget: %+v", cfg.Chat)
		}
		if r := ask(spent.ID, false); r.Status == 429 {
			t.Fatalf("under the site's budget: %d %s", r.Status, r.Raw)
		}
		h.must(200, "PATCH", cfgPath, map[string]any{"chat": map[string]any{"daily_token_budget": -1}}, h.admin).into(t, &cfg)
		if cfg.Chat.EffectiveBudget != 1000 || cfg.Chat.DailyTokenBudget != nil {
			t.Fatalf("back to the default: %+v", cfg.Chat)
		}
		if r := ask(spent.ID, false); r.Status != 429 {
			t.Fatalf("default budget again: %d %s", r.Status, r.Raw)
		}
		h.must(422, "PATCH", cfgPath, map[string]any{"chat": map[string]any{"daily_token_budget": -2}}, h.admin)
		h.must(422, "PATCH", cfgPath, map[string]any{"chat": map[string]any{"caller_instructions": "yes"}}, h.admin)
		// A site update from the reference's admin keeps the chat settings.
		h.must(200, "PATCH", cfgPath, map[string]any{"chat": map[string]any{"daily_token_budget": 0}}, h.admin)
		h.must(200, "PUT", adminPath+"/sites/"+itoa(spent.ID), map[string]any{"bot_config": map[string]any{"web_widget": map[string]any{}}}, h.admin)
		if r := ask(spent.ID, false); r.Status == 429 {
			t.Fatalf("no budget: %d %s", r.Status, r.Raw)
		}
	})
}
