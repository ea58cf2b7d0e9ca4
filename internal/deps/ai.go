package deps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/embed"
	"github.com/lorekb/lore/internal/embed/learned"
	localembed "github.com/lorekb/lore/internal/embed/local"
	"github.com/lorekb/lore/internal/embed/oai"
	"github.com/lorekb/lore/internal/llm"
	"github.com/lorekb/lore/internal/llm/extractive"
	oaillm "github.com/lorekb/lore/internal/llm/oai"
	"github.com/lorekb/lore/internal/rerank"
	"github.com/lorekb/lore/internal/rerank/cohere"
	"github.com/lorekb/lore/internal/rerank/lexical"
)

// AIConfigKey is the system configuration key of the model settings.
const AIConfigKey = "ai-config"

// Vectorize modes of ai-config.
const (
	ModeAutomatic = "automatic"
	ModeManual    = "manual"
)

// ModelConfig is one model section of ai-config (WIRE.md §2 ModelConfig).
type ModelConfig struct {
	Provider  string         `json:"provider"`
	Model     string         `json:"model"`
	APIKey    string         `json:"api_key"`
	BaseURL   string         `json:"base_url"`
	Dimension int            `json:"dimension,omitempty"`
	Mode      string         `json:"mode,omitempty"` // custom | platform
	IsVision  bool           `json:"is_vision,omitempty"`
	ExtraBody map[string]any `json:"extra_body,omitempty"`
}

// AIConfig is the stored ai-config document: the chat, embedding and rerank
// models and whether document changes vectorize automatically.
type AIConfig struct {
	Chat          ModelConfig `json:"chat"`
	Embedding     ModelConfig `json:"embedding"`
	Rerank        ModelConfig `json:"rerank"`
	VectorizeMode string      `json:"vectorize_mode"`
}

// DefaultAIConfig is the configuration from the environment, used for every
// section a tenant has not set.
func (d *Deps) DefaultAIConfig() AIConfig {
	c := d.Cfg
	return AIConfig{
		Chat:          ModelConfig{Provider: c.ChatProvider, Model: c.ChatModel, APIKey: c.ChatAPIKey, BaseURL: c.ChatBaseURL},
		Embedding:     ModelConfig{Provider: c.EmbedProvider, Model: c.EmbedModel, APIKey: c.EmbedAPIKey, BaseURL: c.EmbedBaseURL, Dimension: c.EmbedDimension},
		Rerank:        ModelConfig{Provider: c.RerankProvider, Model: c.RerankModel, APIKey: c.RerankAPIKey, BaseURL: c.RerankBaseURL},
		VectorizeMode: ModeAutomatic,
	}
}

// aiConfigTTL bounds how long a process serves an ai-config it read: a
// change made through this process applies at once (ForgetAIConfig), one
// made through another process within this long. A chat turn reads it about
// five times; the copy turns that into one query a second per tenant.
const aiConfigTTL = time.Second

// AIConfig returns the tenant's stored ai-config merged over the defaults,
// read at most aiConfigTTL ago.
func (d *Deps) AIConfig(ctx context.Context, tenantID int64) (AIConfig, error) {
	return d.aiConfigs.Get(tenantID, func() (AIConfig, error) { return d.LoadAIConfig(ctx, tenantID) })
}

// forgetConfigs drops the copies of the ai-configs a committed write
// changed (db.OnChange).
func (d *Deps) forgetConfigs(_ context.Context, c db.Change) {
	for _, t := range c.Configs {
		d.aiConfigs.Forget(t)
	}
}

// LoadAIConfig reads the tenant's ai-config from the database.
func (d *Deps) LoadAIConfig(ctx context.Context, tenantID int64) (AIConfig, error) {
	cfg := d.DefaultAIConfig()
	row, err := d.DB.GetSystemConfig(ctx, tenantID, AIConfigKey) // secrets opened (db/secrets.go)
	if err != nil {
		if errors.Is(err, db.ErrNotFound) {
			return cfg, nil
		}
		return cfg, err
	}
	var stored AIConfig
	if err := json.Unmarshal([]byte(row.Value), &stored); err != nil {
		return cfg, fmt.Errorf("ai-config: %w", err)
	}
	if stored.Chat.Provider != "" {
		cfg.Chat = withoutEnvKey(stored.Chat, cfg.Chat)
	}
	if stored.Embedding.Provider != "" {
		cfg.Embedding = withoutEnvKey(stored.Embedding, cfg.Embedding)
	}
	if stored.Rerank.Provider != "" {
		cfg.Rerank = withoutEnvKey(stored.Rerank, cfg.Rerank)
	}
	if stored.VectorizeMode != "" {
		cfg.VectorizeMode = stored.VectorizeMode
	}
	return cfg, nil
}

// models caches provider clients by their configuration so each request
// reuses connections, while a changed configuration builds a new client.
type modelCache struct {
	mu sync.Mutex
	m  map[string]any
}

func (mc *modelCache) get(key string, build func() (any, error)) (any, error) {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	if mc.m == nil {
		mc.m = map[string]any{}
	}
	if v, ok := mc.m[key]; ok {
		return v, nil
	}
	v, err := build()
	if err != nil {
		return nil, err
	}
	mc.m[key] = v
	return v, nil
}

func cacheKey(kind string, m ModelConfig) string {
	b, _ := json.Marshal(m)
	return kind + ":" + string(b)
}

// isOpenAI reports whether a provider name means an OpenAI-compatible HTTP API.
func isOpenAI(p string) bool {
	switch strings.ToLower(p) {
	case "openai", "openai-compatible", "ollama", "vllm", "tei", "azure", "deepseek", "qwen", "custom":
		return true
	}
	return false
}

// Embedder returns the tenant's embedder.
func (d *Deps) Embedder(ctx context.Context, tenantID int64) (embed.Embedder, error) {
	ai, err := d.AIConfig(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	return d.EmbedderFor(ai.Embedding)
}

// EmbedderFor builds (or reuses) the embedder of a model section.
func (d *Deps) EmbedderFor(m ModelConfig) (embed.Embedder, error) {
	v, err := d.models.get(cacheKey("embed", m), func() (any, error) { return d.NewEmbedder(m) })
	if err != nil {
		return nil, err
	}
	return v.(embed.Embedder), nil
}

// NewEmbedder builds the embedder of a model section without keeping it
// (a connection test of settings that may never be saved).
func (d *Deps) NewEmbedder(m ModelConfig) (embed.Embedder, error) {
	switch {
	case m.Provider == "" || m.Provider == "local":
		return d.localEmbedder(m)
	case isOpenAI(m.Provider):
		return oai.New(oai.Config{BaseURL: m.BaseURL, APIKey: m.APIKey, Model: m.Model, Dimension: m.Dimension,
			HTTPClient: d.GuardedClient()}), nil
	}
	return nil, fmt.Errorf("embedding provider %q is not supported (local, openai)", m.Provider)
}

// ChatModel returns the tenant's chat model and its model name.
func (d *Deps) ChatModel(ctx context.Context, tenantID int64) (llm.Model, string, error) {
	ai, err := d.AIConfig(ctx, tenantID)
	if err != nil {
		return nil, "", err
	}
	m := ai.Chat
	v, err := d.models.get(cacheKey("chat", m), func() (any, error) { return d.NewChatModel(m) })
	if err != nil {
		return nil, "", err
	}
	return v.(llm.Model), m.Model, nil
}

// LocalChat reports whether a chat section is the built-in extractive
// responder (no model behind it).
func LocalChat(m ModelConfig) bool {
	switch strings.ToLower(m.Provider) {
	case "", "extractive", "local":
		return true
	}
	return false
}

// NewChatModel builds the chat model of a model section without keeping it.
func (d *Deps) NewChatModel(m ModelConfig) (llm.Model, error) {
	switch {
	case LocalChat(m):
		return extractive.New(), nil
	case isOpenAI(m.Provider):
		return oaillm.New(oaillm.Config{BaseURL: m.BaseURL, APIKey: m.APIKey, Model: m.Model, HTTPClient: d.GuardedClient()}), nil
	}
	return nil, fmt.Errorf("chat provider %q is not supported (extractive, openai)", m.Provider)
}

// Reranker returns the tenant's reranker.
func (d *Deps) Reranker(ctx context.Context, tenantID int64) (rerank.Reranker, error) {
	ai, err := d.AIConfig(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	m := ai.Rerank
	v, err := d.models.get(cacheKey("rerank", m), func() (any, error) { return d.NewReranker(m) })
	if err != nil {
		return nil, err
	}
	return v.(rerank.Reranker), nil
}

// NewReranker builds the reranker of a model section without keeping it.
func (d *Deps) NewReranker(m ModelConfig) (rerank.Reranker, error) {
	switch strings.ToLower(m.Provider) {
	case "", "lexical", "local":
		return lexical.New(), nil
	case "cohere", "jina", "vllm", "openai-compatible", "custom":
		return cohere.New(cohere.Config{BaseURL: m.BaseURL, APIKey: m.APIKey, Model: m.Model, HTTPClient: d.GuardedClient()}), nil
	}
	return nil, fmt.Errorf("rerank provider %q is not supported (lexical, cohere)", m.Provider)
}

// localEmbedder is the built-in embedder of a local model section.
func (d *Deps) localEmbedder(m ModelConfig) (embed.Embedder, error) {
	return LocalEmbedder(m.Model, m.Dimension)
}

// LocalEmbedder is the built-in embedder a local model name picks: the
// learned English model blended with hashing (learned.Hybrid), or hashing
// alone when the name asks for it (HashingOnly). hashDim sizes the hashing
// part (0: its default).
func LocalEmbedder(model string, hashDim int) (embed.Embedder, error) {
	if HashingOnly(model) {
		return localembed.New(hashDim), nil
	}
	lm, err := learned.English()
	if err != nil {
		return nil, fmt.Errorf("the embedded learned model: %w", err)
	}
	return learned.NewHybrid(lm, hashDim), nil
}

// HashingOnly reports whether a local model name picks the hashing
// embedder alone ("local-hash", "local-hash-256", lore-local-hash-v1) rather
// than the default learned one.
func HashingOnly(model string) bool {
	return strings.HasPrefix(model, "local-hash") || model == localembed.ModelName
}

// DescribeEmbedders says which embedder serves which language with the
// process's default embedding section (what lore logs at start).
func (d *Deps) DescribeEmbedders() []any {
	m := d.DefaultAIConfig().Embedding
	if m.Provider != "" && m.Provider != "local" {
		return []any{"provider", m.Provider, "model", m.Model, "languages", "all (the model's own)"}
	}
	if HashingOnly(m.Model) {
		return []any{"provider", "local", "model", localembed.ModelName, "languages", "all (hashing)"}
	}
	lm, err := learned.English()
	if err != nil {
		return []any{"provider", "local", "err", err.Error()}
	}
	return []any{"provider", "local", "model", lm.ID() + "+" + localembed.ModelName,
		"english", lm.ID() + " (" + fmt.Sprint(lm.Words) + " words, " + fmt.Sprint(lm.Dim) + " dimensions)",
		"other languages and unknown words", localembed.ModelName}
}
