package api

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"time"

	"github.com/lorekb/lore/internal/blob"
	"github.com/lorekb/lore/internal/deps"
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

// eeBotConfigKeys are the entries of a site's bot_config that ee-config
// manages (the API bot, the public chat settings): a site update never
// replaces them, and the site's bot_config view leaves them out.
var eeBotConfigKeys = []string{"api_bot", "chat"}

// mergeBotConfig replaces a site's stored bot_config with in (nil clears
// it). Masked secrets in in keep their stored values, so the reference's
// admin can send back what it read. The entries ee-config manages
// (eeBotConfigKeys) are kept whatever in says.
func mergeBotConfig(stored string, in map[string]any) (string, error) {
	old := botConfigMap(stored)
	out := map[string]any{}
	for k, v := range in {
		out[k] = v
	}
	for _, k := range eeBotConfigKeys {
		delete(out, k)
	}
	if err := restoreSecrets("bot_config.", out, old); err != nil {
		return "", err
	}
	if err := checkSiteBotConfig(out); err != nil {
		return "", err
	}
	for _, k := range eeBotConfigKeys {
		if v, ok := old[k]; ok {
			out[k] = v
		}
	}
	b, err := json.Marshal(out)
	return string(b), err
}

// siteBotRequired are the fields the reference requires of each enabled
// section of a site's bot_config (its SiteService.ensure_bot_config_valid):
// saving an enabled channel without them is 400, so it never fails silently.
// Lore serves wecom_kefu and wecom_app from them (MessengerChannelFor, which
// also checks the key) and web_widget (the site's web_widget); the others
// are stored and returned for the reference's admin, and no channel of
// theirs is served.
var siteBotRequired = []struct {
	section string
	fields  []string
}{
	{"wecom_kefu", []string{"corp_id", "secret", "token", "encoding_aes_key"}},
	{"wecom_app", []string{"corp_id", "secret", "token", "encoding_aes_key"}},
	{"feishu_app", []string{"app_id", "app_secret"}},
	{"dingtalk_app", []string{"client_id", "client_secret", "template_id"}},
	{"wecom_smart", []string{"bot_id", "secret"}},
	{"telegram_app", []string{"bot_token"}},
}

// checkSiteBotConfig refuses an enabled section that lacks what its channel
// needs, and a messenger section whose key the messenger crypto cannot use.
func checkSiteBotConfig(cfg map[string]any) error {
	for _, r := range siteBotRequired {
		sec, _ := cfg[r.section].(map[string]any)
		if sec == nil {
			continue
		}
		if r.section == "wecom_kefu" || r.section == "wecom_app" {
			b, _ := json.Marshal(sec)
			var ch deps.MessengerChannel
			if json.Unmarshal(b, &ch) != nil {
				return BadRequest("bot_config.%s: not a valid channel configuration", r.section)
			}
			if err := checkChannel("bot_config."+r.section, &ch); err != nil {
				return err
			}
			continue
		}
		if on, _ := sec["enabled"].(bool); !on {
			continue
		}
		var missing []string
		for _, f := range r.fields {
			if v, _ := sec[f].(string); strings.TrimSpace(v) == "" {
				missing = append(missing, f)
			}
		}
		if len(missing) > 0 {
			return BadRequest("bot_config.%s: enabling the channel requires %s", r.section, strings.Join(missing, ", "))
		}
	}
	return nil
}

// siteBotConfig is a site's bot_config as the Admin API shows it: secrets
// masked, the ee-config bookkeeping of api_bot left out, null when empty.
func siteBotConfig(stored string) map[string]any {
	m := botConfigMap(stored)
	for _, k := range eeBotConfigKeys {
		delete(m, k)
	}
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

// textOf is the text a nullable string holds ("" for null).
func textOf(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// assetURL is the URL given for an uploaded file (upload answers, file lists
// and info). The reference serves uploads from a public bucket, so the URL
// an editor embeds in a document keeps working; here it is the public bucket
// URL when S3_PUBLIC_BUCKET is set, else the Client API's download route
// under LORE_PUBLIC_URL, which never expires (the site's visibility and
// password still apply). The object name is the path between "/v1/files/"
// and ":download" (objectFromAssetURL).
func (s *Server) assetURL(ctx context.Context, store blob.Store, name string) string {
	if s.d.Cfg.S3Public {
		return s.fileURL(ctx, store, name, time.Hour)
	}
	segs := strings.Split(name, "/")
	for i := range segs {
		segs[i] = url.PathEscape(segs[i])
	}
	return deps.PublicBaseURL(s.d.Cfg) + surfacePrefixes[Client][0] + "/files/" + strings.Join(segs, "/") + ":download"
}

// objectFromAssetURL recovers the object name from an assetURL ("" when the
// URL is not one).
func objectFromAssetURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	rest, ok := strings.CutPrefix(p.EscapedPath(), surfacePrefixes[Client][0]+"/files/")
	if !ok {
		return ""
	}
	rest, ok = strings.CutSuffix(rest, ":download")
	if !ok {
		return ""
	}
	name, err := url.PathUnescape(rest)
	if err != nil {
		return ""
	}
	return name
}
