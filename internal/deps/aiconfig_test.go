package deps

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/lorekb/lore/internal/config"
)

// A tenant's ai-config is kept briefly, and every write of its
// configuration documents drops the copy at once (through the database's
// change feed, not the handler that wrote it).
func TestAIConfigCopyDroppedByConfigWrites(t *testing.T) {
	cfg, err := config.LoadFrom(config.MapSource(map[string]string{"LORE_DATA_DIR": t.TempDir(), "TEMPORAL_ADDRESS": "none"}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d, err := Open(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	tid, err := d.DB.EnsureDefaultTenant(ctx)
	if err != nil {
		t.Fatal(err)
	}
	model := func() string {
		t.Helper()
		ai, err := d.AIConfig(ctx, tid)
		if err != nil {
			t.Fatal(err)
		}
		return ai.Chat.Model
	}
	put := func(m string) {
		t.Helper()
		raw, _ := json.Marshal(AIConfig{Chat: ModelConfig{Provider: "openai", Model: m, BaseURL: "https://llm.example.com/v1"}})
		if _, err := d.DB.PutSystemConfig(ctx, tid, AIConfigKey, string(raw)); err != nil {
			t.Fatal(err)
		}
	}
	put("first")
	if got := model(); got != "first" {
		t.Fatalf("model %q", got)
	}
	put("second") // within aiConfigTTL of the read
	if got := model(); got != "second" {
		t.Fatalf("after a put: %q, want second", got)
	}
	if _, err := d.DB.UpdateSystemConfig(ctx, tid, AIConfigKey, func(cur string, _ bool) (string, error) {
		var a AIConfig
		_ = json.Unmarshal([]byte(cur), &a)
		a.Chat.Model = "third"
		raw, err := json.Marshal(a)
		return string(raw), err
	}); err != nil {
		t.Fatal(err)
	}
	if got := model(); got != "third" {
		t.Fatalf("after an update: %q, want third", got)
	}
	if err := d.DB.DeleteSystemConfig(ctx, tid, AIConfigKey); err != nil {
		t.Fatal(err)
	}
	if got, def := model(), d.DefaultAIConfig().Chat.Model; got != def {
		t.Fatalf("after a delete: %q, want the default %q", got, def)
	}
}
