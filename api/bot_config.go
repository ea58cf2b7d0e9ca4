package api

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/internal/deps"
)

func maskedBotConfig(cfg deps.BotConfig) any {
	return maskTree(toJSONMap(cfg))
}

func (s *Server) getBotConfig(c *fiber.Ctx) error {
	cfg, err := s.d.BotConfig(c.UserContext(), cfgTenant(c))
	if err != nil {
		return err
	}
	return ok(c, maskedBotConfig(cfg))
}

// checkChannel validates a merged messenger channel.
func checkChannel(name string, ch *deps.MessengerChannel) error {
	ch.CorpID = strings.TrimSpace(ch.CorpID)
	ch.EncodingAESKey = strings.TrimSpace(ch.EncodingAESKey)
	keyOK := len(ch.EncodingAESKey) == 43
	if keyOK {
		if b, err := base64.StdEncoding.DecodeString(ch.EncodingAESKey + "="); err != nil || len(b) != 32 {
			keyOK = false
		}
	}
	if ch.Enabled {
		var missing []string
		for _, f := range []struct{ name, v string }{{"corp_id", ch.CorpID}, {"secret", ch.Secret}, {"token", ch.Token}} {
			if strings.TrimSpace(f.v) == "" {
				missing = append(missing, f.name)
			}
		}
		if !keyOK {
			missing = append(missing, "encoding_aes_key (43 characters)")
		}
		if len(missing) > 0 {
			return BadRequest("%s: enabling the channel requires %s", name, strings.Join(missing, ", "))
		}
	}
	if ch.EncodingAESKey != "" && !keyOK {
		return BadRequest("%s.encoding_aes_key: must be 43 base64 characters", name)
	}
	return nil
}

func (s *Server) putBotConfig(c *fiber.Ctx) error {
	var in BotConfigUpdate
	if err := bindJSONBody(c.Body(), &in); err != nil { // strict: configuration keys are never guessed
		return err
	}
	raw := map[string]json.RawMessage{}
	if err := json.Unmarshal(c.Body(), &raw); err != nil {
		return BadRequest("malformed JSON: %v", err)
	}
	if in.WebWidget == nil && in.APIBot == nil && in.WecomKefu == nil && in.WecomApp == nil {
		return Invalid("body: send at least one of web_widget, api_bot, wecom_kefu, wecom_app")
	}
	// Sites named by a channel must exist in the caller's tenant (checked
	// before the transaction).
	for _, name := range []string{"wecom_kefu", "wecom_app"} {
		ch := in.WecomKefu
		if name == "wecom_app" {
			ch = in.WecomApp
		}
		if ch == nil || len(ch.SiteIDs) == 0 {
			continue
		}
		tenants, err := s.d.DB.SiteTenants(c.UserContext(), ch.SiteIDs)
		if err != nil {
			return err
		}
		for _, id := range ch.SiteIDs {
			if t, found := tenants[id]; !found || t != cfgTenant(c) {
				return BadRequest("%s.site_ids: site %d does not exist", name, id)
			}
		}
	}
	row, err := s.d.DB.UpdateSystemConfig(c.UserContext(), cfgTenant(c), deps.BotConfigKey, func(cur string, exists bool) (string, error) {
		cfg := deps.DefaultBotConfig()
		if exists && cur != "" {
			if err := json.Unmarshal([]byte(cur), &cfg); err != nil {
				return "", fmt.Errorf("stored bot-config: %w", err)
			}
		}
		if cfgHas(raw, "web_widget") {
			w := deps.WebWidget{}
			if err := mergeSection("web_widget", raw["web_widget"], cfg.WebWidget, &w); err != nil {
				return "", err
			}
			def := deps.DefaultBotConfig().WebWidget
			if w.PrimaryColor == "" {
				w.PrimaryColor = def.PrimaryColor
			}
			if w.Position == "" {
				w.Position = def.Position
			}
			cfg.WebWidget = w
		}
		if cfgHas(raw, "api_bot") {
			a := deps.APIBot{}
			if err := mergeSection("api_bot", raw["api_bot"], cfg.APIBot, &a); err != nil {
				return "", err
			}
			if a.Timeout == 0 {
				a.Timeout = deps.DefaultBotConfig().APIBot.Timeout
			}
			cfg.APIBot = a
		}
		for _, name := range []string{"wecom_kefu", "wecom_app"} {
			if !cfgHas(raw, name) {
				continue
			}
			dst, _ := cfg.Channel(name)
			ch := deps.MessengerChannel{}
			if err := mergeSection(name, raw[name], *dst, &ch); err != nil {
				return "", err
			}
			if err := checkChannel(name, &ch); err != nil {
				return "", err
			}
			*dst = ch
		}
		b, err := json.Marshal(cfg)
		return string(b), err
	})
	if err != nil {
		return err
	}
	cfg := deps.DefaultBotConfig()
	if err := json.Unmarshal([]byte(row.Value), &cfg); err != nil {
		return err
	}
	return ok(c, maskedBotConfig(cfg))
}
