package api

import (
	"strings"
	"testing"

	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/models"
)

const aiTestPath = scPath + "/ai-config/test-connection"

// Connection tests against fake provider servers: the built-in models, the
// stored ones, given settings with the stored key restored, a changed
// endpoint that must bring its key, a refused key reported per model
// without echoing it, the address guard, and nothing stored.
func TestAIConfigTestConnection(t *testing.T) {
	const key = "sk-connection-0123456789"
	f := newFakeProvider(t, key, "Hello there, how can I help")
	other := newFakeProvider(t, key, "other")
	h := newHarness(t, "sqlite", map[string]string{"LORE_ALLOWED_PROVIDER_HOSTS": "127.0.0.1"})

	// Nothing stored: the built-in models answer, marked platform.
	var v AIConnectionTestView
	h.must(200, "POST", aiTestPath, map[string]any{}, h.admin).into(t, &v)
	if !v.OK || len(v.Results) != 3 {
		t.Fatalf("defaults: %+v", v)
	}
	for _, r := range v.Results {
		if !r.OK || r.Source != "platform" || r.Error != nil {
			t.Errorf("default %s: %+v", r.ModelType, r)
		}
	}
	local, err := deps.LocalEmbedder("", 0)
	if err != nil {
		t.Fatal(err)
	}
	if v.Results[1].Dimension == nil || *v.Results[1].Dimension != local.Dimension() {
		t.Errorf("local embedding dimension: %+v", v.Results[1])
	}

	// Stored remote models: one small call each.
	h.must(200, "PUT", scPath+"/ai-config", map[string]any{
		"chat":      map[string]any{"provider": "openai-compatible", "model": "fake-chat", "api_key": key, "base_url": f.URL()},
		"embedding": map[string]any{"provider": "openai-compatible", "model": "fake-embed", "api_key": key, "base_url": f.URL()},
		"rerank":    map[string]any{"provider": "cohere", "model": "fake-rerank", "api_key": key, "base_url": f.URL()},
	}, h.admin)
	stored := scStored(h, deps.AIConfigKey)
	h.must(200, "POST", aiTestPath, map[string]any{}, h.admin).into(t, &v)
	if !v.OK {
		t.Fatalf("stored: %+v", v)
	}
	chat, emb, rr := v.Results[0], v.Results[1], v.Results[2]
	if chat.Source != "stored" || chat.Model != "fake-chat" || !strings.HasPrefix(chat.Details, "Response: Hello there") ||
		emb.Dimension == nil || *emb.Dimension != 8 || rr.Details != "score 0.8750" {
		t.Errorf("stored results: %+v", v.Results)
	}
	if f.count("/v1/chat/completions") != 1 || f.count("/v1/embeddings") != 1 || f.count("/v1/rerank") != 1 {
		t.Errorf("calls: %v", f.calls)
	}
	if mt := f.lastBody("/v1/chat/completions")["max_tokens"]; mt != float64(5) {
		t.Errorf("chat test max_tokens %v, want 5", mt)
	}

	// The reference's shape with the key sent back masked: the stored key
	// is used for the same endpoint.
	masked := map[string]any{"provider": "openai-compatible", "model": "fake-chat", "api_key": maskSecret(key), "base_url": f.URL()}
	h.must(200, "POST", aiTestPath, map[string]any{"model_type": "chat", "config": masked}, h.admin).into(t, &v)
	if !v.OK || len(v.Results) != 1 || v.Results[0].Source != "request" {
		t.Errorf("masked key, same endpoint: %+v", v)
	}
	// model_type alone: the stored settings of that model.
	h.must(200, "POST", aiTestPath, map[string]any{"model_type": "rerank"}, h.admin).into(t, &v)
	if len(v.Results) != 1 || v.Results[0].ModelType != "rerank" || v.Results[0].Source != "stored" || !v.OK {
		t.Errorf("model_type alone: %+v", v)
	}

	// A changed endpoint never gets the stored key: 422 unless sent.
	moved := map[string]any{"provider": "openai-compatible", "model": "fake-chat", "api_key": maskSecret(key), "base_url": other.URL()}
	h.must(422, "POST", aiTestPath, map[string]any{"model_type": "chat", "config": moved}, h.admin)
	delete(moved, "api_key")
	h.must(422, "POST", aiTestPath, map[string]any{"chat": moved}, h.admin)
	if other.count("/v1/chat/completions") != 0 {
		t.Fatalf("the stored key went to a new endpoint")
	}
	moved["api_key"] = key
	h.must(200, "POST", aiTestPath, map[string]any{"chat": moved}, h.admin).into(t, &v)
	if !v.OK || other.count("/v1/chat/completions") != 1 {
		t.Errorf("new endpoint with its key: %+v", v)
	}

	// A refused key: per model in the full test (the others still ok), 400
	// in the reference's shape; the key is never in the answer.
	const wrong = "sk-wrong-key-abcdefghij"
	bad := map[string]any{"provider": "openai-compatible", "model": "fake-embed", "api_key": wrong, "base_url": f.URL()}
	r := h.must(200, "POST", aiTestPath, map[string]any{"embedding": bad}, h.admin)
	r.into(t, &v)
	if v.OK || !v.Results[0].OK || v.Results[1].OK || v.Results[1].Error == nil || !strings.Contains(*v.Results[1].Error, "401") ||
		!v.Results[2].OK || strings.Contains(string(r.Raw), wrong) || strings.Contains(string(r.Raw), key) {
		t.Errorf("refused key: %s", r.Raw)
	}
	r = h.must(400, "POST", aiTestPath, map[string]any{"model_type": "embedding", "config": bad}, h.admin)
	if !strings.Contains(r.Msg, "Incorrect API key") || strings.Contains(string(r.Raw), wrong) {
		t.Errorf("refused key, one model: %s", r.Raw)
	}

	// The address guard, shapes, roles.
	meta := map[string]any{"provider": "openai-compatible", "model": "m", "api_key": "k", "base_url": "http://169.254.169.254/v1"}
	h.must(422, "POST", aiTestPath, map[string]any{"model_type": "chat", "config": meta}, h.admin)
	h.must(422, "POST", aiTestPath, map[string]any{"rerank": meta}, h.admin)
	strict := newHarness(t, "sqlite", nil)
	h2 := map[string]any{"provider": "openai-compatible", "model": "m", "api_key": "k", "base_url": f.URL()}
	strict.must(422, "POST", aiTestPath, map[string]any{"model_type": "chat", "config": h2}, strict.admin)
	for name, body := range map[string]any{
		"config without model_type": map[string]any{"config": masked},
		"both shapes":               map[string]any{"model_type": "chat", "chat": masked},
		"unknown model_type":        map[string]any{"model_type": "vision"},
		"unknown key":               map[string]any{"chats": masked},
		"unknown provider":          map[string]any{"chat": map[string]any{"provider": "magic", "api_key": "k"}},
	} {
		if r := h.do("POST", aiTestPath, body, h.admin); r.Status != 422 {
			t.Errorf("%s: status %d, want 422: %s", name, r.Status, r.Raw)
		}
	}
	h.must(403, "POST", aiTestPath, map[string]any{}, h.userToken(models.RoleSiteAdmin))
	h.must(401, "POST", aiTestPath, map[string]any{}, "")

	if got := scStored(h, deps.AIConfigKey); got != stored {
		t.Errorf("a test changed the stored ai-config:\n%s\n%s", stored, got)
	}
}
