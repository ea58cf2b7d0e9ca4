package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/internal/netguard"
)

// TestProviderKeysFollowTheirEndpoint: a tenant admin who points a section
// at their own listener without sending a key gets 422, never the stored
// key nor the platform's (CHAT_API_KEY); a masked key is refused the same
// way; the same endpoint keeps its stored key.
func TestProviderKeysFollowTheirEndpoint(t *testing.T) {
	h := newHarness(t, "sqlite", map[string]string{"CHAT_PROVIDER": "openai", "CHAT_BASE_URL": "https://platform.example.com/v1",
		"CHAT_API_KEY": "sk-platform-secret-123", "CHAT_MODEL": "gpt-4o"})
	ctx := context.Background()
	tid, _ := h.d.DB.EnsureDefaultTenant(ctx)
	put := func(chat map[string]any) *resp {
		return h.do("PUT", scPath+"/ai-config", map[string]any{"chat": chat}, h.admin)
	}
	evil := "https://attacker.example.net/v1"
	for _, chat := range []map[string]any{
		{"provider": "openai", "model": "gpt-4o", "base_url": evil},
		{"provider": "openai", "model": "gpt-4o", "base_url": evil, "api_key": "sk-****123"},
		{"provider": "custom", "model": "gpt-4o", "base_url": "https://platform.example.com/v1"},
	} {
		if r := put(chat); r.Status != 422 || !strings.Contains(r.Msg, "api_key") && !strings.Contains(r.Msg, "masked") {
			t.Fatalf("%v: %d %s", chat, r.Status, r.Raw)
		}
	}
	if got := scStored(h, deps.AIConfigKey); strings.Contains(got, "sk-platform") {
		t.Fatalf("platform key stored for a tenant: %s", got)
	}
	// The platform's endpoint with its key omitted keeps the platform key
	// (it goes nowhere new); a new model name only.
	if r := put(map[string]any{"provider": "openai", "model": "gpt-4o-mini", "base_url": "https://platform.example.com/v1"}); r.Status != 200 {
		t.Fatalf("same endpoint: %d %s", r.Status, r.Raw)
	}
	// The tenant's own key to its own endpoint; then moving it needs the
	// key again.
	if r := put(map[string]any{"provider": "openai", "model": "m", "base_url": "https://mine.example.org/v1", "api_key": "sk-tenant-own-key"}); r.Status != 200 {
		t.Fatalf("own key: %d %s", r.Status, r.Raw)
	}
	if r := put(map[string]any{"provider": "openai", "model": "m", "base_url": evil}); r.Status != 422 {
		t.Fatalf("moved without key: %d %s", r.Status, r.Raw)
	}
	if r := put(map[string]any{"provider": "openai", "model": "m2", "base_url": "https://mine.example.org/v1/"}); r.Status != 200 {
		t.Fatalf("same endpoint, key omitted: %d %s", r.Status, r.Raw)
	}
	if ai, _ := h.d.AIConfig(ctx, tid); ai.Chat.APIKey != "sk-tenant-own-key" || ai.Chat.Model != "m2" {
		t.Fatalf("kept key: %+v", ai.Chat)
	}
	// An older version copied the platform key into tenant sections: it is
	// not used for another endpoint.
	raw, _ := json.Marshal(deps.AIConfig{Chat: deps.ModelConfig{Provider: "openai", Model: "m", BaseURL: evil, APIKey: "sk-platform-secret-123"}})
	if _, err := h.d.DB.PutSystemConfig(ctx, tid, deps.AIConfigKey, string(raw)); err != nil {
		t.Fatal(err)
	}
	if ai, _ := h.d.AIConfig(ctx, tid); ai.Chat.APIKey != "" {
		t.Fatalf("platform key used for %s", ai.Chat.BaseURL)
	}
}

// TestProviderEndpointsRefuseInternalAddresses: base_url may not name
// metadata, link-local, unspecified, loopback or private addresses, nor
// carry credentials (422, nothing stored); the operator's allow-list opens
// internal hosts; credentials stored by an older version are masked on read;
// and at connect time a client never reaches a refused address.
func TestProviderEndpointsRefuseInternalAddresses(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	before := scStored(h, deps.AIConfigKey)
	for _, u := range []string{"http://169.254.169.254/latest", "http://metadata.google.internal/v1", "http://0.0.0.0:11434/v1",
		"http://localhost:5432", "http://127.0.0.1:6379", "http://user:pass@llm.example.com/v1", "http://10.0.0.5/v1", "http://[::1]:8080/v1"} {
		for _, sec := range []string{"chat", "embedding", "rerank"} {
			provider := map[string]string{"chat": "openai", "embedding": "openai", "rerank": "cohere"}[sec]
			r := h.do("PUT", scPath+"/ai-config", map[string]any{sec: map[string]any{"provider": provider, "model": "m", "base_url": u, "api_key": "k"}}, h.admin)
			if r.Status != 422 || !strings.Contains(r.Msg, sec+".base_url") {
				t.Fatalf("%s %s: %d %s", sec, u, r.Status, r.Raw)
			}
		}
	}
	if scStored(h, deps.AIConfigKey) != before {
		t.Fatal("refused endpoints were stored")
	}
	allowed := newHarness(t, "sqlite", map[string]string{"LORE_ALLOWED_PROVIDER_HOSTS": "127.0.0.1, ollama.internal"})
	for _, u := range []string{"http://localhost:11434/v1", "http://ollama.internal:11434/v1"} {
		allowed.must(200, "PUT", scPath+"/ai-config", map[string]any{"chat": map[string]any{"provider": "ollama", "model": "m", "base_url": u, "api_key": ""}}, allowed.admin)
	}
	allowed.must(422, "PUT", scPath+"/ai-config", map[string]any{"chat": map[string]any{"provider": "ollama", "model": "m",
		"base_url": "http://169.254.169.254/", "api_key": ""}}, allowed.admin)

	// Credentials in a stored URL are masked on read.
	ctx := context.Background()
	tid, _ := h.d.DB.EnsureDefaultTenant(ctx)
	raw, _ := json.Marshal(deps.AIConfig{Chat: deps.ModelConfig{Provider: "openai", Model: "m", BaseURL: "https://bob:hunter22@llm.example.com/v1"}})
	if _, err := h.d.DB.PutSystemConfig(ctx, tid, deps.AIConfigKey, string(raw)); err != nil {
		t.Fatal(err)
	}
	if r := h.must(200, "GET", scPath+"/ai-config", nil, h.admin); strings.Contains(string(r.Raw), "hunter22") {
		t.Fatalf("credentials shown: %s", r.Raw)
	}

	// Connect time: a section stored pointing at a loopback listener (as an
	// older version allowed) reaches nothing, for embedding, chat and rerank.
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	m := deps.ModelConfig{Provider: "openai", Model: "m", BaseURL: srv.URL + "/v1", APIKey: "sk-leak"}
	emb, err := h.d.EmbedderFor(m)
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := emb.Embed(cctx, []string{"x"}); !errors.Is(err, netguard.ErrRefused) {
		t.Fatalf("embedding call to loopback: %v", err)
	}
	raw, _ = json.Marshal(deps.AIConfig{Chat: m, Rerank: deps.ModelConfig{Provider: "cohere", Model: "m", BaseURL: srv.URL, APIKey: "sk-leak"}})
	if _, err := h.d.DB.PutSystemConfig(ctx, tid, deps.AIConfigKey, string(raw)); err != nil {
		t.Fatal(err)
	}
	rr, err := h.d.Reranker(ctx, tid)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rr.Rerank(cctx, "q", []string{"a", "b"}, 1); !errors.Is(err, netguard.ErrRefused) {
		t.Fatalf("rerank call to loopback: %v", err)
	}
	if hits.Load() != 0 {
		t.Fatalf("the loopback listener got %d requests", hits.Load())
	}
}

// TestDocProcessorEndpointsRefuseInternalAddresses: the doc-processor
// settings meet the same rules (422 when saved) and a connection test to a
// loopback listener never reaches it (connect-time check).
func TestDocProcessorEndpointsRefuseInternalAddresses(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	path := adminPath + "/system-configs/doc-processor"
	for _, u := range []string{"http://169.254.169.254/", "http://metadata.google.internal/", "http://localhost:5432/", "http://0.0.0.0:1/"} {
		r := h.do("PUT", path, map[string]any{"processors": []map[string]any{{"name": "d", "type": "Docling", "base_url": u, "api_key": "k", "enabled": true}}}, h.admin)
		if r.Status != 422 || !strings.Contains(r.Msg, "base_url") {
			t.Fatalf("%s: %d %s", u, r.Status, r.Raw)
		}
	}
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	r := h.do("POST", path+"/test-connection", map[string]any{"config": map[string]any{"name": "d", "type": "Docling", "base_url": srv.URL, "api_key": "k"}}, h.admin)
	if r.Status < 400 || r.Status >= 500 || hits.Load() != 0 {
		t.Fatalf("connection test to loopback: %d %s (%d requests reached it)", r.Status, r.Raw, hits.Load())
	}
}
