package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/internal/convert/processor"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/internal/netguard"
)

// System configuration (admin only): per-tenant JSON documents stored in
// system_configs under a config_key. ai-config holds the chat, embedding and
// rerank models and the vectorize mode; bot-config the bot channels. deps
// reads them from the database on every call, so a change applies to the next
// request without a restart.
//
// Secrets never leave the server in clear: any key whose name contains key,
// token, secret, password, app_id or client_id is masked on read
// ("abc****xyz", or "****" for values of at most 6 characters). On write a
// value containing "****" keeps the stored secret, and so does an omitted
// secret field, so a client can send back what it read.

// ModelConfigIn is one model section of an ai-config update. api_key may be
// omitted or sent masked to keep the stored key.
type ModelConfigIn struct {
	Provider  string         `json:"provider" validate:"required,max=50" doc:"chat: local|extractive|openai|openai-compatible|ollama|vllm|custom; embedding: local|openai|openai-compatible|ollama|vllm|tei|custom; rerank: local|lexical|cohere|jina|vllm|openai-compatible|custom"`
	Model     string         `json:"model" required:"false" validate:"max=200"`
	APIKey    *string        `json:"api_key" required:"false" validate:"omitempty,max=2000"`
	BaseURL   string         `json:"base_url" required:"false" validate:"max=1000"`
	Dimension *int           `json:"dimension" required:"false" validate:"omitempty,min=0,max=65536"`
	Mode      string         `json:"mode" required:"false" validate:"omitempty,oneof=custom platform"`
	IsVision  bool           `json:"is_vision" required:"false"`
	ExtraBody map[string]any `json:"extra_body" required:"false"`
}

// AIConfigUpdate is the body of PUT /system-configs/ai-config: only the
// sections present are changed.
type AIConfigUpdate struct {
	Chat          *ModelConfigIn `json:"chat" required:"false"`
	Embedding     *ModelConfigIn `json:"embedding" required:"false"`
	Rerank        *ModelConfigIn `json:"rerank" required:"false"`
	VectorizeMode *string        `json:"vectorize_mode" required:"false" validate:"omitempty,oneof=automatic manual"`
}

// ModelConfigView is a model section as shown (api_key masked).
type ModelConfigView struct {
	Provider  string         `json:"provider"`
	Model     string         `json:"model"`
	APIKey    string         `json:"api_key"`
	BaseURL   string         `json:"base_url"`
	Dimension *int           `json:"dimension"`
	Mode      string         `json:"mode"`
	IsVision  bool           `json:"is_vision"`
	ExtraBody map[string]any `json:"extra_body"`
}

// AIConfigSections are the three model sections.
type AIConfigSections struct {
	Chat      ModelConfigView `json:"chat"`
	Embedding ModelConfigView `json:"embedding"`
	Rerank    ModelConfigView `json:"rerank"`
}

// AIFallback says, per section, whether the environment default is in use
// because the tenant has not stored the section.
type AIFallback struct {
	Chat      bool `json:"chat"`
	Embedding bool `json:"embedding"`
	Rerank    bool `json:"rerank"`
}

// AIConfigMeta is the meta object of ai-config.
type AIConfigMeta struct {
	IsPlatformFallback AIFallback `json:"is_platform_fallback"`
}

// AIConfigView is the result of GET and PUT /system-configs/ai-config.
// outdated_documents (PUT only) counts the documents marked outdated because
// the embedding model changed; reindex_job_id (PUT only) names the tenant
// re-index started for them in automatic mode.
type AIConfigView struct {
	Configs           AIConfigSections `json:"configs"`
	VectorizeMode     string           `json:"vectorize_mode"`
	Meta              AIConfigMeta     `json:"meta"`
	PlatformDefaults  map[string]any   `json:"platform_defaults"`
	OutdatedDocuments *int             `json:"outdated_documents,omitempty"`
	ReindexJobID      *string          `json:"reindex_job_id,omitempty"`
}

// WebWidgetIn is the web_widget section of a bot-config update.
type WebWidgetIn struct {
	Enabled        bool   `json:"enabled" required:"false"`
	Title          string `json:"title" required:"false" validate:"max=100"`
	WelcomeMessage string `json:"welcome_message" required:"false" validate:"max=2000"`
	PrimaryColor   string `json:"primary_color" required:"false" validate:"max=32"`
	Position       string `json:"position" required:"false" validate:"omitempty,oneof=right left"`
}

// APIBotIn is the api_bot section of a bot-config update.
type APIBotIn struct {
	Enabled bool `json:"enabled" required:"false"`
	Timeout int  `json:"timeout" required:"false" validate:"omitempty,min=1,max=600" doc:"seconds, default 30"`
}

// MessengerChannelIn is a messenger channel section of a bot-config update;
// secret, token and encoding_aes_key may be omitted or sent masked to keep
// the stored values.
type MessengerChannelIn struct {
	Enabled        bool    `json:"enabled" required:"false"`
	CorpID         string  `json:"corp_id" required:"false" validate:"max=100"`
	AgentID        string  `json:"agent_id" required:"false" validate:"max=100"`
	Secret         *string `json:"secret" required:"false" validate:"omitempty,max=500"`
	Token          *string `json:"token" required:"false" validate:"omitempty,max=500"`
	EncodingAESKey *string `json:"encoding_aes_key" required:"false" validate:"omitempty,max=100"`
	WelcomeMessage string  `json:"welcome_message" required:"false" validate:"max=2000"`
	SiteIDs        []int64 `json:"site_ids" required:"false" validate:"max=1000"`
}

// BotConfigUpdate is the body of PUT /system-configs/bot-config: only the
// sections present are changed.
type BotConfigUpdate struct {
	WebWidget *WebWidgetIn        `json:"web_widget" required:"false"`
	APIBot    *APIBotIn           `json:"api_bot" required:"false"`
	WecomKefu *MessengerChannelIn `json:"wecom_kefu" required:"false"`
	WecomApp  *MessengerChannelIn `json:"wecom_app" required:"false"`
}

// SystemConfigItem is one stored configuration document (value masked).
type SystemConfigItem struct {
	ConfigKey string    `json:"config_key"`
	Value     any       `json:"value"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ConfigDeleted is the result of DELETE /system-configs/{config_key}.
type ConfigDeleted struct {
	Deleted bool `json:"deleted"`
}

func (s *Server) systemConfigRoutes() []Route {
	return []Route{
		{Surface: Admin, Method: http.MethodGet, Path: "/system-configs", Tag: "system-configs", Perm: AdminOnly,
			Summary: "List the tenant's stored configurations (secrets masked)", Response: []SystemConfigItem{},
			Handler: s.listSystemConfigs},
		{Surface: Admin, Method: http.MethodGet, Path: "/system-configs/ai-config", Tag: "system-configs", Perm: AdminOnly,
			Summary: "Get the AI model configuration; unset sections show the environment default", Response: AIConfigView{},
			Handler: s.getAIConfig},
		{Surface: Admin, Method: http.MethodPut, Path: "/system-configs/ai-config", Tag: "system-configs", Perm: AdminOnly,
			Summary: "Update sections of the AI model configuration",
			Description: "Only the sections present change. An omitted or masked api_key keeps the stored key while the provider and base_url stay; " +
				"a section whose provider or base_url changes must send api_key (\"\" for none); outside the platform tenant, a section that would keep the " +
				"platform's key must send its own api_key when its provider, base_url or model differs from the platform's. base_url must be http(s), without credentials, " +
				"and may not name metadata, link-local, loopback or private addresses unless LORE_ALLOWED_PROVIDER_HOSTS allows them. " +
				"Changing the embedding provider, model, base_url or dimension marks the tenant's vectorized documents outdated.",
			Body: AIConfigUpdate{}, Response: AIConfigView{}, Handler: s.putAIConfig},
		{Surface: Admin, Method: http.MethodGet, Path: "/system-configs/bot-config", Tag: "system-configs", Perm: AdminOnly,
			Summary: "Get the bot channels configuration (secrets masked)", Response: deps.BotConfig{},
			Handler: s.getBotConfig},
		{Surface: Admin, Method: http.MethodPut, Path: "/system-configs/bot-config", Tag: "system-configs", Perm: AdminOnly,
			Summary: "Update sections of the bot channels configuration",
			Description: "Only the sections present change; omitted or masked secrets are kept. Enabling wecom_kefu or " +
				"wecom_app needs corp_id, secret, token and a 43-character encoding_aes_key.",
			Body: BotConfigUpdate{}, Response: deps.BotConfig{}, Handler: s.putBotConfig},
		{Surface: Admin, Method: http.MethodDelete, Path: "/system-configs/{config_key}", Tag: "system-configs", Perm: AdminOnly,
			Summary:  "Delete a stored configuration (ai-config or bot-config); defaults apply again",
			Response: ConfigDeleted{}, Handler: s.deleteSystemConfig},
	}
}

// configKeys are the configuration documents the API manages.
var configKeys = map[string]bool{deps.AIConfigKey: true, deps.BotConfigKey: true, processor.ConfigKey: true}

func cfgTenant(c *fiber.Ctx) int64 { return principal(c).User.TenantID }

func (s *Server) listSystemConfigs(c *fiber.Ctx) error {
	rows, err := s.d.DB.ListSystemConfigs(c.UserContext(), cfgTenant(c))
	if err != nil {
		return err
	}
	out := make([]SystemConfigItem, 0, len(rows))
	for _, r := range rows {
		var v any
		if err := decodeNumbers([]byte(r.Value), &v); err != nil {
			v = nil
		}
		out = append(out, SystemConfigItem{ConfigKey: r.ConfigKey, Value: maskTree(v), UpdatedAt: r.UpdatedAt})
	}
	return ok(c, out)
}

func (s *Server) deleteSystemConfig(c *fiber.Ctx) error {
	key := param(c, "config_key")
	if !configKeys[key] {
		return NotFound("config " + truncate(key, 40))
	}
	ctx := c.UserContext()
	tenant := cfgTenant(c)
	var before deps.AIConfig
	if key == deps.AIConfigKey {
		var err error
		if before, err = s.d.LoadAIConfig(ctx, tenant); err != nil {
			return err
		}
	}
	err := s.d.DB.DeleteSystemConfig(ctx, tenant, key)
	if err != nil {
		if errors.Is(err, db.ErrNotFound) {
			return NotFound("config " + key)
		}
		return err
	}
	if key == deps.AIConfigKey && s.embeddingChanged(before.Embedding, s.d.DefaultAIConfig().Embedding) {
		if _, err := s.d.DB.MarkTenantVectorsOutdated(ctx, tenant); err != nil {
			return err
		}
	}
	return ok(c, ConfigDeleted{Deleted: true})
}

// ---- ai-config --------------------------------------------------------------

// storedAIConfig decodes a stored ai-config value; sections with an empty
// provider are not set.
func storedAIConfig(value string, exists bool) (deps.AIConfig, error) {
	var st deps.AIConfig
	if !exists || value == "" {
		return st, nil
	}
	if err := json.Unmarshal([]byte(value), &st); err != nil {
		return st, fmt.Errorf("stored ai-config: %w", err)
	}
	return st, nil
}

func modelView(m deps.ModelConfig) ModelConfigView {
	v := ModelConfigView{Provider: m.Provider, Model: m.Model, APIKey: maskSecret(m.APIKey), BaseURL: netguard.RedactURL(m.BaseURL),
		Mode: m.Mode, IsVision: m.IsVision}
	if v.Mode == "" {
		v.Mode = "custom"
	}
	if m.Dimension > 0 {
		d := m.Dimension
		v.Dimension = &d
	}
	if m.ExtraBody != nil {
		v.ExtraBody, _ = maskTree(toJSONMap(m.ExtraBody)).(map[string]any)
	}
	return v
}

// aiConfigView merges the stored sections over the defaults and masks them.
func (s *Server) aiConfigView(st deps.AIConfig) AIConfigView {
	def := s.d.DefaultAIConfig()
	pick := func(stored, fallback deps.ModelConfig) (deps.ModelConfig, bool) {
		if stored.Provider != "" {
			return stored, false
		}
		return fallback, true
	}
	chat, fc := pick(st.Chat, def.Chat)
	emb, fe := pick(st.Embedding, def.Embedding)
	rr, fr := pick(st.Rerank, def.Rerank)
	mode := st.VectorizeMode
	if mode == "" {
		mode = def.VectorizeMode
	}
	return AIConfigView{
		Configs:       AIConfigSections{Chat: modelView(chat), Embedding: modelView(emb), Rerank: modelView(rr)},
		VectorizeMode: mode,
		Meta:          AIConfigMeta{IsPlatformFallback: AIFallback{Chat: fc, Embedding: fe, Rerank: fr}},
	}
}

func (s *Server) getAIConfig(c *fiber.Ctx) error {
	row, err := s.d.DB.GetSystemConfig(c.UserContext(), cfgTenant(c), deps.AIConfigKey)
	if err != nil && !errors.Is(err, db.ErrNotFound) {
		return err
	}
	var st deps.AIConfig
	if err == nil {
		if st, err = storedAIConfig(row.Value, true); err != nil {
			return err
		}
	}
	return ok(c, s.aiConfigView(st))
}

// Providers accepted per section (the names deps builds clients for).
var (
	chatProviders  = []string{"local", "extractive", "openai", "openai-compatible", "ollama", "vllm", "custom"}
	embedProviders = []string{"local", "openai", "openai-compatible", "ollama", "vllm", "tei", "custom"}
	// TEI is not among the rerank providers: its /rerank takes texts, not
	// the Cohere shape.
	rerankProviders = []string{"local", "lexical", "cohere", "jina", "vllm", "openai-compatible", "custom"}
	// selfHosted providers have no default endpoint: base_url is required.
	selfHosted = map[string]bool{"openai-compatible": true, "ollama": true, "vllm": true, "tei": true, "custom": true}
)

func cfgContains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// keyless providers run in process and take no key.
var keyless = map[string]bool{"": true, "local": true, "extractive": true, "lexical": true}

// resendKey is the rule for a section whose endpoint changed: its secrets
// are the ones sent with it and nothing else (api_key required, possibly
// empty for a server without keys; masked values are refused).
func resendKey(section string, raw json.RawMessage, m *deps.ModelConfig) error {
	var fresh deps.ModelConfig
	if err := mergeSection(section, raw, deps.ModelConfig{}, &fresh); err != nil {
		var apiErr *Error
		if errors.As(err, &apiErr) {
			return Invalid("%s (the provider or base_url changed, so stored secrets are not kept)", apiErr.Msg)
		}
		return err
	}
	sent := map[string]json.RawMessage{}
	_ = json.Unmarshal(raw, &sent)
	if _, ok := sent["api_key"]; !ok && !keyless[strings.ToLower(strings.TrimSpace(fresh.Provider))] {
		return Invalid("%s.api_key: required when the provider or base_url changes (the stored key is not sent to a new endpoint)", section)
	}
	*m = fresh
	return nil
}

// sameModelSettings reports whether a section uses the platform's model
// settings: its provider, base_url and model.
func sameModelSettings(m, def deps.ModelConfig) bool {
	norm := func(m deps.ModelConfig) [3]string {
		return [3]string{strings.ToLower(strings.TrimSpace(m.Provider)), strings.TrimRight(strings.TrimSpace(m.BaseURL), "/"),
			strings.TrimSpace(m.Model)}
	}
	return norm(m) == norm(def)
}

// platformKeyOnly is the rule for a tenant's section (not the platform
// tenant's) that would keep the platform's environment key: the platform
// pays for its key with its own provider, base_url and model only, so a
// section that changes any of them must bring its own api_key (a key sent
// in clear in this request is the caller's own, whatever its value).
func platformKeyOnly(section string, raw json.RawMessage, m, def deps.ModelConfig) error {
	if def.APIKey == "" || m.APIKey != def.APIKey || sameModelSettings(m, def) {
		return nil
	}
	sent := map[string]any{}
	_ = json.Unmarshal(raw, &sent)
	if k, ok := sent["api_key"].(string); ok && k != "" && !strings.Contains(k, "****") {
		return nil
	}
	return Invalid("%s.api_key: required when the provider, base_url or model differs from the platform's "+
		"(the platform's key is only used with the platform's model settings)", section)
}

// checkModel validates a merged model section (provider lower-cased in place).
func (s *Server) checkModel(section string, m *deps.ModelConfig, allowed []string) error {
	m.Provider = strings.ToLower(strings.TrimSpace(m.Provider))
	m.BaseURL = strings.TrimSpace(m.BaseURL)
	m.Model = strings.TrimSpace(m.Model)
	if !cfgContains(allowed, m.Provider) {
		return Invalid("%s.provider: %q is not supported; use one of [%s]", section, m.Provider, strings.Join(allowed, " "))
	}
	if m.BaseURL != "" {
		if err := s.d.Guard().CheckURL(m.BaseURL); err != nil {
			return Invalid("%s.base_url: %v", section, err)
		}
	} else if selfHosted[m.Provider] {
		return Invalid("%s.base_url: field required for provider %s", section, m.Provider)
	}
	if m.Dimension < 0 {
		return Invalid("%s.dimension: must be at least 0", section)
	}
	if section == "embedding" {
		if _, err := s.d.EmbedderFor(*m); err != nil {
			return Invalid("embedding.provider: %v", err)
		}
	}
	return nil
}

// embeddingChanged reports whether switching from a to b changes the vector
// space: provider, model, base_url or dimension (the model name and URL of
// the built-in local embedder do not matter).
func (s *Server) embeddingChanged(a, b deps.ModelConfig) bool {
	norm := func(m deps.ModelConfig) [4]string {
		p := strings.ToLower(m.Provider)
		if p == "" {
			p = "local"
		}
		dim := m.Dimension
		if e, err := s.d.EmbedderFor(m); err == nil && dim <= 0 {
			dim = e.Dimension()
		}
		if p == "local" {
			return [4]string{p, "", "", fmt.Sprint(dim)}
		}
		return [4]string{p, m.Model, strings.TrimRight(m.BaseURL, "/"), fmt.Sprint(dim)}
	}
	return norm(a) != norm(b)
}

func (s *Server) putAIConfig(c *fiber.Ctx) error {
	var in AIConfigUpdate
	if err := bindJSONBody(c.Body(), &in); err != nil { // strict: configuration keys are never guessed
		return err
	}
	raw := map[string]json.RawMessage{}
	if err := json.Unmarshal(c.Body(), &raw); err != nil {
		return BadRequest("malformed JSON: %v", err)
	}
	if in.Chat == nil && in.Embedding == nil && in.Rerank == nil && in.VectorizeMode == nil {
		return Invalid("body: send at least one of chat, embedding, rerank, vectorize_mode")
	}
	ctx := c.UserContext()
	tenant := cfgTenant(c)
	platform := principal(c).IsPlatform()
	def := s.d.DefaultAIConfig()
	var before, after deps.AIConfig
	row, err := s.d.DB.UpdateSystemConfig(ctx, tenant, deps.AIConfigKey, func(cur string, exists bool) (string, error) {
		st, err := storedAIConfig(cur, exists)
		if err != nil {
			return "", err
		}
		before = st
		sections := []struct {
			name    string
			set     bool
			stored  *deps.ModelConfig
			def     deps.ModelConfig
			allowed []string
		}{
			{"chat", in.Chat != nil, &st.Chat, def.Chat, chatProviders},
			{"embedding", in.Embedding != nil, &st.Embedding, def.Embedding, embedProviders},
			{"rerank", in.Rerank != nil, &st.Rerank, def.Rerank, rerankProviders},
		}
		for _, sec := range sections {
			if !sec.set || !cfgHas(raw, sec.name) {
				continue
			}
			old := *sec.stored
			if old.Provider == "" {
				old = sec.def // secrets of the default in use are kept too
			}
			var m deps.ModelConfig
			if err := mergeSection(sec.name, raw[sec.name], old, &m); err != nil {
				return "", err
			}
			if err := s.checkModel(sec.name, &m, sec.allowed); err != nil {
				return "", err
			}
			if !deps.SameEndpoint(old, m) {
				// A stored key (or the platform's) is never sent to a
				// new provider or base_url: the key must come again.
				if err := resendKey(sec.name, raw[sec.name], &m); err != nil {
					return "", err
				}
				if err := s.checkModel(sec.name, &m, sec.allowed); err != nil {
					return "", err
				}
			}
			if !platform {
				if err := platformKeyOnly(sec.name, raw[sec.name], m, sec.def); err != nil {
					return "", err
				}
			}
			*sec.stored = m
		}
		if in.VectorizeMode != nil {
			st.VectorizeMode = *in.VectorizeMode
		}
		after = st
		b, err := json.Marshal(st)
		return string(b), err
	})
	if err != nil {
		return err
	}
	effective := func(m, d deps.ModelConfig) deps.ModelConfig {
		if m.Provider == "" {
			return d
		}
		return m
	}
	outdated := 0
	if s.embeddingChanged(effective(before.Embedding, def.Embedding), effective(after.Embedding, def.Embedding)) {
		if outdated, err = s.d.DB.MarkTenantVectorsOutdated(ctx, tenant); err != nil {
			return err
		}
	}
	st, err := storedAIConfig(row.Value, true)
	if err != nil {
		return err
	}
	view := s.aiConfigView(st)
	view.OutdatedDocuments = &outdated
	if outdated > 0 && s.automatic(c, tenant) {
		view.ReindexJobID = s.reindexAfterModelChange(c, tenant)
	}
	return ok(c, view)
}

// ---- bot-config -------------------------------------------------------------
