package deps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/lorekb/lore/internal/db"
)

// BotConfigKey is the system configuration key of the bot channels.
const BotConfigKey = "bot-config"

// WebWidget configures the embeddable chat widget.
type WebWidget struct {
	Enabled        bool   `json:"enabled"`
	Title          string `json:"title"`
	WelcomeMessage string `json:"welcome_message"`
	PrimaryColor   string `json:"primary_color"`
	Position       string `json:"position"` // right | left
}

// APIBot configures the EE bot API (/bot/chat/completions); the keys
// themselves are per site (site_api_keys).
type APIBot struct {
	Enabled bool `json:"enabled"`
	Timeout int  `json:"timeout"`
}

// MessengerChannel is one enterprise-messenger channel (the public-account
// channel): callback crypto settings and the credentials of the send API.
type MessengerChannel struct {
	Enabled        bool   `json:"enabled"`
	CorpID         string `json:"corp_id"`
	AgentID        string `json:"agent_id,omitempty"` // app channel
	Secret         string `json:"secret"`
	Token          string `json:"token"`
	EncodingAESKey string `json:"encoding_aes_key"`
	WelcomeMessage string `json:"welcome_message,omitempty"`
	// SiteIDs limits the channel to these sites (empty: every site of the tenant).
	SiteIDs []int64 `json:"site_ids,omitempty"`
}

// BotConfig is the stored bot-config document of a tenant.
type BotConfig struct {
	WebWidget WebWidget        `json:"web_widget"`
	APIBot    APIBot           `json:"api_bot"`
	WecomKefu MessengerChannel `json:"wecom_kefu"`
	WecomApp  MessengerChannel `json:"wecom_app"`
}

// Channel returns the named messenger channel ("wecom_kefu" or "wecom_app").
func (b *BotConfig) Channel(name string) (*MessengerChannel, error) {
	switch name {
	case "wecom_kefu":
		return &b.WecomKefu, nil
	case "wecom_app":
		return &b.WecomApp, nil
	}
	return nil, fmt.Errorf("unknown channel %q", name)
}

// DefaultBotConfig is used until a tenant stores one.
func DefaultBotConfig() BotConfig {
	return BotConfig{WebWidget: WebWidget{Title: "Ask the docs", PrimaryColor: "#3b82f6", Position: "right"},
		APIBot: APIBot{Timeout: 30}}
}

// BotConfig returns the tenant's bot-config (defaults when none is stored).
func (d *Deps) BotConfig(ctx context.Context, tenantID int64) (BotConfig, error) {
	cfg := DefaultBotConfig()
	row, err := d.DB.GetSystemConfig(ctx, tenantID, BotConfigKey) // secrets opened (db/secrets.go)
	if err != nil {
		if errors.Is(err, db.ErrNotFound) {
			return cfg, nil
		}
		return cfg, err
	}
	if err := json.Unmarshal([]byte(row.Value), &cfg); err != nil {
		return cfg, fmt.Errorf("bot-config: %w", err)
	}
	return cfg, nil
}

// SiteChannel reads the named messenger channel ("wecom_kefu" or
// "wecom_app") from a site's stored bot_config, where the reference's admin
// keeps each site's channels; ok is false when the site has no such section.
func SiteChannel(siteBotConfig, name string) (ch MessengerChannel, ok bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(siteBotConfig), &m) != nil {
		return ch, false
	}
	raw, found := m[name]
	if !found || json.Unmarshal(raw, &ch) != nil {
		return MessengerChannel{}, false
	}
	ch.SiteIDs = nil // a site's own section is for that site
	return ch, true
}
