package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/models"
)

// GET/PATCH /sites/{id}/ee-config: the reference's EE site settings page in
// one call, over Lore's own EE pieces: access (the site password) and the
// API bot (a site API key, plus enabled and timeout kept in the site's
// bot_config under api_bot).

// apiBotKeyName names the site API key the ee-config API bot manages, apart
// from keys made with POST /sites/{id}/api-keys.
const apiBotKeyName = "api_bot"

// SiteAccessConfig is the access block of ee-config.
type SiteAccessConfig struct {
	SiteID            int64   `json:"site_id"`
	IsPublic          bool    `json:"is_public"`
	HasPassword       bool    `json:"has_password"`
	GeneratedPassword *string `json:"generated_password" doc:"set once, when making the site private generated its password"`
}

// APIBotConfig is the api_bot block of ee-config. api_key is the full key
// only in the answer that created it; afterwards its prefix and "****".
type APIBotConfig struct {
	SiteID  int64  `json:"site_id"`
	Enabled bool   `json:"enabled"`
	APIKey  string `json:"api_key"`
	Timeout int    `json:"timeout"`
}

// SiteEEConfig is the data of GET/PATCH /sites/{id}/ee-config.
type SiteEEConfig struct {
	SiteID int64            `json:"site_id"`
	Access SiteAccessConfig `json:"access"`
	APIBot APIBotConfig     `json:"api_bot"`
	Chat   SiteChatConfig   `json:"chat"`
}

// SiteChatConfig is the chat block of ee-config: what the site's public
// chat lets callers do and spend (kept in the site's bot_config under chat).
type SiteChatConfig struct {
	CallerInstructions bool   `json:"caller_instructions" doc:"callers' instructions (the instructions field, system and developer messages) reach the model, capped to LORE_CHAT_CALLER_INSTRUCTIONS_MAX characters and below Lore's own prompt; false (the default) drops them"`
	DailyTokenBudget   *int64 `json:"daily_token_budget" doc:"model tokens the site's chat may use per UTC day; null: the server default (LORE_CHAT_DAILY_TOKEN_BUDGET); 0: no budget"`
	EffectiveBudget    int64  `json:"effective_daily_token_budget" doc:"the budget in force (0: none)"`
	TokensUsedToday    int64  `json:"tokens_used_today" doc:"tokens of the turns stored since 00:00 UTC"`
}

// SiteEEConfigUpdate is the body of PATCH /sites/{id}/ee-config; absent
// blocks and fields are kept.
type SiteEEConfigUpdate struct {
	Access *struct {
		IsPublic *bool   `json:"is_public" required:"false" doc:"true removes the password; false without one generates it"`
		Password *string `json:"password" required:"false" doc:"sets the password (the site becomes private)" validate:"omitnil,max=64,pwbytes"`
	} `json:"access" required:"false"`
	APIBot *struct {
		Enabled *bool   `json:"enabled" required:"false" doc:"true creates a key when none is active; false revokes it"`
		APIKey  *string `json:"api_key" required:"false" doc:"a key of your own (16..128 characters) replaces the current one; a masked value is ignored" validate:"omitnil,max=128"`
		Timeout *int    `json:"timeout" required:"false" validate:"omitnil,min=1,max=600"`
	} `json:"api_bot" required:"false"`
	Chat *struct {
		CallerInstructions *bool  `json:"caller_instructions" required:"false"`
		DailyTokenBudget   *int64 `json:"daily_token_budget" required:"false" doc:"-1 returns to the server default" validate:"omitnil,min=-1,max=1000000000000"`
	} `json:"chat" required:"false"`
}

// storedAPIBot is the api_bot entry of a site's bot_config.
type storedAPIBot struct {
	Enabled bool  `json:"enabled"`
	Timeout int   `json:"timeout"`
	KeyID   int64 `json:"key_id"`
}

func (s *Server) eeConfigRoutes() []Route {
	return []Route{
		{Surface: Admin, Method: http.MethodGet, Path: "/sites/{id}/ee-config", Tag: "sites", Perm: SiteAdminUp,
			Summary: "EE: the site's access and API bot settings", Response: SiteEEConfig{}, Handler: s.getEEConfig},
		{Surface: Admin, Method: http.MethodPatch, Path: "/sites/{id}/ee-config", Tag: "sites", Perm: SiteAdminUp,
			Summary: "EE: change the site's access (public flag, password) and API bot (enabled, key, timeout)",
			Description: "chat.caller_instructions and chat.daily_token_budget are a tenant admin's or platform admin's to change: " +
				"a site_admin sending other values than the stored ones gets 403 and nothing is changed.",
			Body: SiteEEConfigUpdate{}, Response: SiteEEConfig{}, Handler: s.patchEEConfig},
	}
}

// botConfigMap decodes a site's bot_config (an object; {} when unset).
func botConfigMap(raw string) map[string]any {
	m := map[string]any{}
	if json.Unmarshal([]byte(raw), &m) != nil || m == nil {
		m = map[string]any{}
	}
	return m
}

func readAPIBot(st *models.Site) storedAPIBot {
	b := storedAPIBot{Timeout: 30}
	if raw, ok := botConfigMap(st.BotConfig)["api_bot"]; ok {
		enc, _ := json.Marshal(raw)
		_ = json.Unmarshal(enc, &b)
	}
	return b
}

func (s *Server) eeConfig(c *fiber.Ctx, st *models.Site, fullKey, generated string) (SiteEEConfig, error) {
	bot := readAPIBot(st)
	out := SiteEEConfig{SiteID: st.ID,
		Access: SiteAccessConfig{SiteID: st.ID, IsPublic: st.IsPublic, HasPassword: st.HasPassword()},
		APIBot: APIBotConfig{SiteID: st.ID, Enabled: bot.Enabled, Timeout: bot.Timeout, APIKey: fullKey}}
	if generated != "" {
		out.Access.GeneratedPassword = &generated
	}
	chat := readChatSettings(st)
	out.Chat = SiteChatConfig{CallerInstructions: chat.CallerInstructions, DailyTokenBudget: chat.DailyTokenBudget,
		EffectiveBudget: s.dailyTokenBudget(st)}
	used, err := s.tokensUsedToday(c.UserContext(), st, time.Now())
	if err != nil {
		return out, err
	}
	out.Chat.TokensUsedToday = used
	if fullKey == "" && bot.KeyID != 0 {
		keys, err := s.d.DB.ListSiteAPIKeys(c.UserContext(), st.ID)
		if err != nil {
			return out, err
		}
		for _, k := range keys {
			if k.ID == bot.KeyID && k.RevokedAt == nil {
				out.APIBot.APIKey = k.Prefix + "****"
			}
		}
	}
	return out, nil
}

func (s *Server) getEEConfig(c *fiber.Ctx) error {
	st, err := s.adminSiteByID(c, SiteAdminUp)
	if err != nil {
		return err
	}
	out, err := s.eeConfig(c, st, "", "")
	if err != nil {
		return err
	}
	return ok(c, out)
}

func (s *Server) patchEEConfig(c *fiber.Ctx) error {
	var in SiteEEConfigUpdate
	st, err := loadThenBindAs(c, s.adminSiteByID, SiteAdminUp, bindJSON, &in)
	if err != nil {
		return err
	}
	if ch := in.Chat; ch != nil && !principal(c).IsAdmin() && chatSettingsChange(st, ch.CallerInstructions, ch.DailyTokenBudget) {
		// Refused before any block is written: the request changes nothing.
		return Errf(http.StatusForbidden, "chat.caller_instructions and chat.daily_token_budget: only a tenant or platform admin may change them")
	}
	ctx := c.UserContext()
	generated := ""
	if a := in.Access; a != nil {
		pw := ""
		if a.Password != nil {
			pw = strings.TrimSpace(*a.Password)
		}
		switch {
		case pw != "":
			if len(pw) < 4 {
				return Invalid("access.password: must be at least 4 characters")
			}
		case a.IsPublic != nil && !*a.IsPublic && !st.HasPassword():
			if generated, err = newAPIKey(); err != nil {
				return err
			}
			generated = generated[len(apiKeyPrefix) : len(apiKeyPrefix)+12]
			pw = generated
		}
		var write func() error
		switch {
		case pw != "":
			hash, err := HashPassword(pw)
			if err != nil {
				return err
			}
			write = func() error { return s.d.DB.SetSitePassword(ctx, st.ID, hash) }
		case a.IsPublic != nil && *a.IsPublic && (st.HasPassword() || !st.IsPublic):
			write = func() error { return s.d.DB.ClearSitePassword(ctx, st.ID) }
		}
		if write != nil {
			if err := write(); err != nil {
				if errors.Is(err, db.ErrNotFound) {
					return NotFound("site")
				}
				return err
			}
			if st, err = visibleSite(s.d.DB.GetSite(ctx, st.ID)); err != nil {
				return err
			}
		}
	}
	fullKey := ""
	if b := in.APIBot; b != nil {
		if fullKey, err = s.patchAPIBot(c, st, b.Enabled, b.APIKey, b.Timeout); err != nil {
			return err
		}
	}
	if ch := in.Chat; ch != nil {
		if err := s.patchChatSettings(c, st, ch.CallerInstructions, ch.DailyTokenBudget); err != nil {
			return err
		}
	}
	fresh, err := visibleSite(s.d.DB.GetSite(ctx, st.ID))
	if err != nil {
		return err
	}
	out, err := s.eeConfig(c, fresh, fullKey, generated)
	if err != nil {
		return err
	}
	return ok(c, out)
}

// patchAPIBot applies the api_bot block: a new key of the caller's own, or a
// generated one when the bot is enabled without an active key (returned in
// full once); disabling revokes the key. It returns the full key when one
// was created.
func (s *Server) patchAPIBot(c *fiber.Ctx, st *models.Site, enabled *bool, apiKey *string, timeout *int) (string, error) {
	ctx := c.UserContext()
	bot := readAPIBot(st)
	setIf(&bot.Timeout, timeout)
	setIf(&bot.Enabled, enabled)
	active := false
	if bot.KeyID != 0 {
		keys, err := s.d.DB.ListSiteAPIKeys(ctx, st.ID)
		if err != nil {
			return "", err
		}
		for _, k := range keys {
			active = active || (k.ID == bot.KeyID && k.RevokedAt == nil)
		}
	}
	newKey := ""
	if apiKey != nil && !strings.Contains(*apiKey, "****") && strings.TrimSpace(*apiKey) != "" {
		newKey = strings.TrimSpace(*apiKey)
		if len(newKey) < 16 {
			return "", Invalid("api_bot.api_key: must be at least 16 characters")
		}
	} else if bot.Enabled && !active {
		var err error
		if newKey, err = newAPIKey(); err != nil {
			return "", err
		}
	}
	if (newKey != "" || !bot.Enabled) && bot.KeyID != 0 && active {
		if _, err := s.d.DB.RevokeSiteAPIKey(ctx, st.ID, bot.KeyID); err != nil {
			return "", err
		}
		bot.KeyID = 0
	}
	if newKey != "" && bot.Enabled {
		k := &models.SiteAPIKey{SiteID: st.ID, Name: apiBotKeyName, Prefix: newKey[:min(len(newKey), apiKeyShown)],
			KeyHash: HashAPIKey(newKey)}
		if err := s.d.DB.CreateSiteAPIKey(ctx, k); err != nil {
			if errors.Is(err, db.ErrConflict) {
				return "", Conflict("api_bot.api_key: this key is already in use")
			}
			return "", err
		}
		bot.KeyID = k.ID
	} else {
		newKey = ""
	}
	if err := s.saveBotConfigEntry(ctx, st, "api_bot", bot); err != nil {
		return "", err
	}
	return newKey, nil
}

// saveBotConfigEntry stores one entry of the site's bot_config.
func (s *Server) saveBotConfigEntry(ctx context.Context, st *models.Site, key string, v any) error {
	cfg := botConfigMap(st.BotConfig)
	cfg[key] = v
	enc, _ := json.Marshal(cfg)
	st.BotConfig = string(enc)
	if err := s.d.DB.UpdateSite(ctx, st); err != nil {
		if errors.Is(err, db.ErrNotFound) {
			return NotFound("site")
		}
		return err
	}
	return nil
}

// chatSettingsChange reports whether the chat block would change the site's
// caller instructions or daily token budget. Both decide what the site's
// public chat may spend and let in, so they are the tenant's to set: a
// site_admin may send them back as they are (a form that round-trips the
// block) but not change them.
func chatSettingsChange(st *models.Site, instructions *bool, budget *int64) bool {
	cur := readChatSettings(st)
	if instructions != nil && *instructions != cur.CallerInstructions {
		return true
	}
	if budget == nil {
		return false
	}
	if *budget < 0 {
		return cur.DailyTokenBudget != nil
	}
	return cur.DailyTokenBudget == nil || *cur.DailyTokenBudget != *budget
}

// patchChatSettings applies the chat block (a budget of -1 returns to the
// server default).
func (s *Server) patchChatSettings(c *fiber.Ctx, st *models.Site, instructions *bool, budget *int64) error {
	ctx := c.UserContext()
	st, err := visibleSite(s.d.DB.GetSite(ctx, st.ID)) // the api_bot block may have changed it
	if err != nil {
		return err
	}
	chat := readChatSettings(st)
	setIf(&chat.CallerInstructions, instructions)
	if budget != nil {
		chat.DailyTokenBudget = budget
		if *budget < 0 {
			chat.DailyTokenBudget = nil
		}
	}
	return s.saveBotConfigEntry(ctx, st, "chat", chat)
}
