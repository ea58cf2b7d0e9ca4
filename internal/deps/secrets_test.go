package deps

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lorekb/lore/internal/config"
)

// openAt opens Lore's dependencies on the SQLite data directory dir with
// the given LORE_SECRET_KEY ("" for the generated one).
func openAt(t *testing.T, dir, key string) (*Deps, error) {
	t.Helper()
	vars := map[string]string{"LORE_DATA_DIR": dir, "TEMPORAL_ADDRESS": "none"}
	if key != "" {
		vars["LORE_SECRET_KEY"] = key
	}
	cfg, err := config.LoadFrom(config.MapSource(vars))
	if err != nil {
		t.Fatal(err)
	}
	return Open(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// TestSecretKeyAtStartup: without LORE_SECRET_KEY the embedded default
// generates one into <data>/secret.key (0600) beside jwt.secret and keeps
// using it; a key is stored sealed in the SQLite file (no clear text in the
// file's bytes) and read back; a start with another key fails with an error
// naming LORE_SECRET_KEY instead of sending garbage; LORE_ENV=prod requires
// the key.
func TestSecretKeyAtStartup(t *testing.T) {
	dir := t.TempDir()
	d, err := openAt(t, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, "secret.key"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("secret.key: %v %v", st, err)
	}
	ctx := context.Background()
	tid, err := d.DB.EnsureDefaultTenant(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const key = "sk-very-secret-provider-key-42"
	if _, err := d.DB.PutSystemConfig(ctx, tid, AIConfigKey, `{"chat":{"provider":"openai","model":"m","base_url":"https://p.example.com/v1","api_key":"`+key+`"}}`); err != nil {
		t.Fatal(err)
	}
	d.Close()
	for _, f := range []string{"lore.db", "lore.db-wal"} {
		if b, err := os.ReadFile(filepath.Join(dir, f)); err == nil && strings.Contains(string(b), key) {
			t.Fatalf("%s holds the key in clear", f)
		}
	}

	// The generated key is used again: reads work.
	d, err = openAt(t, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	ai, err := d.AIConfig(ctx, tid)
	if err != nil || ai.Chat.APIKey != key {
		t.Fatalf("read back: %q %v", ai.Chat.APIKey, err)
	}
	d.Close()

	// Another key: a clear startup error.
	if _, err := openAt(t, dir, "a-different-secret-key-of-32-bytes-at-least"); err == nil ||
		!strings.Contains(err.Error(), "LORE_SECRET_KEY") || !strings.Contains(err.Error(), "system config") {
		t.Fatalf("wrong key: %v", err)
	}

	if _, err := config.LoadFrom(config.MapSource(map[string]string{"LORE_DATA_DIR": t.TempDir(), "LORE_ENV": "prod"})); err == nil ||
		!strings.Contains(err.Error(), "LORE_SECRET_KEY") {
		t.Fatalf("prod without a key: %v", err)
	}
	if _, err := config.LoadFrom(config.MapSource(map[string]string{"LORE_DATA_DIR": t.TempDir(), "LORE_SECRET_KEY": "short"})); err == nil {
		t.Fatal("a short key was accepted")
	}
}
