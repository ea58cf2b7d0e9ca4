package api

import (
	"encoding/json"
	"strings"

	"github.com/lorekb/lore/models"
)

// siteStatus maps the reference's site statuses onto Lore's: its admin
// saves "disabled" for a switched-off site, Lore's name is "inactive".
func siteStatus(s string) string {
	if s == "disabled" {
		return models.SiteInactive
	}
	return s
}

// nullText is a text column as the reference sends it: null when empty.
func nullText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// clearNulls runs the clear function of every key the JSON object body sets
// to an explicit null.
func clearNulls(body []byte, clear map[string]func()) {
	for k := range jsonNulls(body) {
		if f := clear[k]; f != nil {
			f()
		}
	}
}

// mergeBotConfig replaces a site's stored bot_config with in (nil clears
// it). Masked secrets in in keep their stored values, so the reference's
// admin can send back what it read. The api_bot entry belongs to
// ee-config (its key id) and is kept whatever in says.
func mergeBotConfig(stored string, in map[string]any) (string, error) {
	old := botConfigMap(stored)
	out := map[string]any{}
	for k, v := range in {
		out[k] = v
	}
	delete(out, "api_bot")
	if err := restoreSecrets("bot_config.", out, old); err != nil {
		return "", err
	}
	if bot, ok := old["api_bot"]; ok {
		out["api_bot"] = bot
	}
	b, err := json.Marshal(out)
	return string(b), err
}

// siteBotConfig is a site's bot_config as the Admin API shows it: secrets
// masked, the ee-config bookkeeping of api_bot left out, null when empty.
func siteBotConfig(stored string) map[string]any {
	m := botConfigMap(stored)
	delete(m, "api_bot")
	if len(m) == 0 {
		return nil
	}
	return maskTree(m).(map[string]any)
}

// siteQuickQuestions is a site's quick questions, null when there are none
// (the reference's client falls back to its own suggestions only on null).
func siteQuickQuestions(stored string) []QuickQuestion {
	qs := decodeQuickQuestions(stored)
	if len(qs) == 0 || strings.TrimSpace(stored) == "" {
		return nil
	}
	return qs
}

// deref is the text a nullable string holds ("" for null).
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
