package api

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/lorekb/lore/models"
)

// TestWebAdminConsole serves the admin console through the real server: the
// page (HTML, strict CSP, its scripts), its assets within budget, the Admin
// API still JSON beside it, and the Markdown preview, which needs a signed-in
// user, renders as the reader does (sanitized) and bounds its input.
func TestWebAdminConsole(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	for _, path := range []string{"/admin", "/admin/"} {
		page := string(webPage(h, 200, path).Raw)
		for _, want := range []string{`id="login-form"`, "/ui/assets/admin.js", "/ui/assets/admin.css", `id="nav"`, `id="lang"`} {
			if !strings.Contains(page, want) {
				t.Errorf("%s lacks %q", path, want)
			}
		}
	}
	// The console's first load: page, styles and scripts.
	total := len(h.must(200, "GET", "/admin", nil, "").Raw)
	for _, a := range []string{"admin.js", "admin-i18n.js", "sse.js", "app.css", "admin.css", "favicon.svg"} {
		r := h.must(200, "GET", "/ui/assets/"+a, nil, "")
		total += len(r.Raw)
	}
	if total > 150<<10 {
		t.Errorf("the console's first load is %d bytes, over 150 KB", total)
	}
	if r := h.do("GET", "/admin/api/v1/sites", nil, ""); r.Status != 401 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		t.Errorf("the Admin API beside the console: %d %s", r.Status, r.Header.Get("Content-Type"))
	}
	if r := h.do("GET", "/admin/nothing", nil, ""); r.Status != 404 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		t.Errorf("an unknown /admin path: %d %s", r.Status, r.Header.Get("Content-Type"))
	}

	body := map[string]string{"title": "Hello", "content": "# Hello\n\nSome **bold** text.\n\n<script>alert(1)</script>" +
		"<img src=x onerror=alert(2)>\n\n[bad](javascript:alert(3))"}
	if r := h.do("POST", "/admin/preview", body, ""); r.Status != 401 {
		t.Errorf("preview without a token: %d", r.Status)
	}
	if r := h.do("POST", "/admin/preview", body, "not-a-token"); r.Status != 401 {
		t.Errorf("preview with a bad token: %d", r.Status)
	}
	editor := h.userToken(models.RoleEditor)
	r := h.must(200, "POST", "/admin/preview", body, editor)
	var out struct {
		HTML string `json:"html"`
	}
	if err := json.Unmarshal(r.Data, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.HTML, "<strong>bold</strong>") || strings.Contains(out.HTML, "<h1") {
		t.Errorf("preview HTML %q", out.HTML)
	}
	for _, bad := range []string{"<script", "onerror", `href="javascript`} {
		if strings.Contains(out.HTML, bad) {
			t.Errorf("preview keeps %q: %s", bad, out.HTML)
		}
	}
	if r := h.do("POST", "/admin/preview", "{not json", editor); r.Status != 400 {
		t.Errorf("preview of a malformed body: %d", r.Status)
	}
	big := []byte(`{"content":"` + strings.Repeat("a", 3<<20) + `"}`)
	if r := h.do("POST", "/admin/preview", big, editor); r.Status != 413 {
		t.Errorf("preview of 3 MB: %d", r.Status)
	}
}
