package api

import (
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/internal/msgr"
)

// TestSiteBotConfigDrivesItsChannels: what the reference derives from a
// site's bot_config, Lore derives too: a site's own wecom_kefu / wecom_app
// section (saved from the reference's admin) configures that site's callback
// even when the tenant's bot-config has the channel off (WIRE §5), and an
// enabled section without what its channel needs is refused with 400, as the
// reference's ensure_bot_config_valid does (channels Lore does not serve
// included, so the admin sees the same errors).
func TestSiteBotConfigDrivesItsChannels(t *testing.T) {
	f := newBotFixture(t, "sqlite", nil, func(c *deps.BotConfig) { c.WecomKefu.Enabled, c.WecomApp.Enabled = false, false })
	h, now := f.h, time.Now()
	site := adminPath + "/sites/" + itoa(f.site)
	if r := h.must(403, "GET", f.verifyURL("/v1/bot/wecom-kefu", f.crypto, "x", now, f.site), nil, ""); !strings.Contains(r.Msg, "not enabled") {
		t.Fatalf("tenant channel off: %s", r.Raw)
	}
	for _, tc := range []struct {
		section map[string]any
		missing string
	}{
		{map[string]any{"wecom_kefu": map[string]any{"enabled": true, "corp_id": "wwsite", "secret": "s"}}, "token"},
		{map[string]any{"wecom_app": map[string]any{"enabled": true, "corp_id": "wwsite", "secret": "s", "token": "t", "encoding_aes_key": "short"}}, "encoding_aes_key"},
		{map[string]any{"feishu_app": map[string]any{"enabled": true, "app_id": "cli_1", "app_secret": " "}}, "app_secret"},
		{map[string]any{"dingtalk_app": map[string]any{"enabled": true, "client_id": "c", "client_secret": "s"}}, "template_id"},
		{map[string]any{"wecom_smart": map[string]any{"enabled": true, "bot_id": "b"}}, "secret"},
		{map[string]any{"telegram_app": map[string]any{"enabled": true}}, "bot_token"},
	} {
		if r := h.must(400, "PUT", site, map[string]any{"bot_config": tc.section}, h.admin); !strings.Contains(r.Msg, tc.missing) {
			t.Fatalf("%v: %s", tc.section, r.Raw)
		}
	}
	// Disabled sections are stored as they are.
	h.must(200, "PUT", site, map[string]any{"bot_config": map[string]any{"telegram_app": map[string]any{"enabled": false}}}, h.admin)

	// The site's own kefu section, with its own corp and token.
	key := botAESKey(t)
	h.must(200, "PUT", site, map[string]any{"bot_config": map[string]any{
		"web_widget": map[string]any{"enabled": true, "title": "Ask"},
		"wecom_kefu": map[string]any{"enabled": true, "corp_id": "wwsitecorp", "secret": "site-secret", "token": "site-token", "encoding_aes_key": key}}}, h.admin)
	own, err := msgr.NewCrypto("site-token", key, "wwsitecorp")
	if err != nil {
		t.Fatal(err)
	}
	if r := h.must(200, "GET", f.verifyURL("/v1/bot/wecom-kefu", own, "site-echo", now, f.site), nil, ""); string(r.Raw) != "site-echo" {
		t.Fatalf("site channel: %q", r.Raw)
	}
	// Another site has no section: the tenant's (off) config applies.
	h.must(403, "GET", f.verifyURL("/v1/bot/wecom-kefu", own, "x", now, f.other), nil, "")
	// The admin reads the section back masked, and saving the masked value
	// keeps the secret (the channel still verifies).
	var st SiteResponse
	h.must(200, "GET", site, nil, h.admin).into(t, &st)
	kefu, _ := st.BotConfig["wecom_kefu"].(map[string]any)
	if kefu == nil || kefu["secret"] == "site-secret" || kefu["corp_id"] != "wwsitecorp" || st.WebWidget["title"] != "Ask" {
		t.Fatalf("read back: %+v", st.BotConfig)
	}
	h.must(200, "PUT", site, map[string]any{"bot_config": st.BotConfig}, h.admin)
	h.must(200, "GET", f.verifyURL("/v1/bot/wecom-kefu", own, "again", now, f.site), nil, "")
}
