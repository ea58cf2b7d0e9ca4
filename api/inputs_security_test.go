package api

import (
	"strings"
	"testing"

	"github.com/lorekb/lore/internal/config"
)

// TestPasswordsAreCheckedInBytes: bcrypt takes at most 72 bytes; a longer
// password in characters that pass the length rule is 422, never a 500.
func TestPasswordsAreCheckedInBytes(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	long := strings.Repeat("é", 37) // 37 characters, 74 bytes
	r := h.must(422, "POST", adminPath+"/users", map[string]any{"name": "x", "email": "long@example.com", "password": long}, h.admin)
	if !strings.Contains(r.Msg, "72 bytes") {
		t.Fatalf("user password: %s", r.Raw)
	}
	st := saSite(h, "bytes")
	h.must(422, "PUT", adminPath+"/sites/"+itoa(st.ID)+"/password", map[string]string{"password": strings.Repeat("密", 30)}, h.admin)
	h.must(200, "PUT", adminPath+"/sites/"+itoa(st.ID)+"/password", map[string]string{"password": strings.Repeat("密", 24)}, h.admin)
}

// TestInvisibleTitlesAreBlank: a title of zero-width or other format and
// space characters is blank (422), on create and update.
func TestInvisibleTitlesAreBlank(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	st := saSite(h, "blank")
	for _, title := range []string{"\u200b", "\ufeff\u200b \u2060", "\u3000\u200d"} {
		h.must(422, "POST", adminPath+"/documents", map[string]any{"site_id": st.ID, "title": title, "content": "x"}, h.admin)
		h.must(422, "POST", adminPath+"/collections", map[string]any{"site_id": st.ID, "title": title}, h.admin)
	}
}

// TestShortJWTSecretIsRefused: LORE_JWT_SECRET must be at least 32 bytes.
func TestShortJWTSecretIsRefused(t *testing.T) {
	_, err := config.LoadFrom(config.MapSource(map[string]string{"LORE_DATA_DIR": t.TempDir(), "LORE_JWT_SECRET": "secret"}))
	if err == nil || !strings.Contains(err.Error(), "32 bytes") {
		t.Fatalf("short secret: %v", err)
	}
	if _, err := config.LoadFrom(config.MapSource(map[string]string{"LORE_DATA_DIR": t.TempDir(),
		"LORE_JWT_SECRET": strings.Repeat("k", 32)})); err != nil {
		t.Fatal(err)
	}
}
