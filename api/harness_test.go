package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/cache"
	"github.com/lorekb/lore/internal/cache/memory"
	rediscache "github.com/lorekb/lore/internal/cache/redis"
	"github.com/lorekb/lore/internal/config"
	"github.com/lorekb/lore/internal/db/dbtest"
	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/models"
)

// harness is an API server on a fresh database of one dialect, without
// Temporal, called in-process through Fiber's Test.
type harness struct {
	t     *testing.T
	s     *Server
	d     *deps.Deps
	admin string // token of the bootstrap admin
	users int
	// always are headers sent with every request (a request's own headers
	// override them), e.g. the chat owner secret a client keeps.
	always map[string]string
}

// eachDialect runs fn against a fresh server on SQLite and on PostgreSQL.
func eachDialect(t *testing.T, fn func(t *testing.T, h *harness)) {
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) { fn(t, newHarness(t, dialect, nil)) })
	}
}

// newHarness builds a server with the default tenant and an admin; env
// overrides configuration variables.
func newHarness(t *testing.T, dialect string, env map[string]string) *harness {
	t.Helper()
	h := newBareHarness(t, dialect, env)
	if _, err := h.d.DB.EnsureDefaultTenant(context.Background()); err != nil {
		t.Fatal(err)
	}
	h.admin = h.userToken(models.RoleAdmin)
	return h
}

// newBareHarness builds a server on an empty database (migrated, nothing
// else: no tenant, no user).
func newBareHarness(t *testing.T, dialect string, env map[string]string) *harness {
	t.Helper()
	vars := map[string]string{"LORE_DATA_DIR": t.TempDir(), "LORE_JWT_SECRET": "test-secret-0123456789abcdef0123456789", "TEMPORAL_ADDRESS": "none",
		// One client address sends every request: chat limits out of the way (limit tests set their own).
		"LORE_CHAT_RATE_PER_IP": "1000000", "LORE_CHAT_RATE_PER_SITE": "1000000",
		"LORE_TRUSTED_PROXIES": "0.0.0.0"} // the in-process test client acts as the proxy
	for k, v := range env {
		vars[k] = v
	}
	cfg, err := config.LoadFrom(config.MapSource(vars))
	if err != nil {
		t.Fatal(err)
	}
	database := dbtest.Open(t, dialect)
	if err := deps.SealSecrets(context.Background(), database, cfg, nil); err != nil {
		t.Fatal(err)
	}
	var c cache.Cache = memory.New(1000)
	if cfg.RedisURL != "" {
		// Keys of this server only, dropped at the end.
		rc, err := rediscache.Open(cfg.RedisURL, fmt.Sprintf("lore-test-%d:", time.Now().UnixNano()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rc.Clear(context.Background()); _ = rc.Close() })
		c = rc
	}
	d := &deps.Deps{Cfg: cfg, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), DB: database, Cache: c}
	h := &harness{t: t, d: d}
	h.s = New(d)
	return h
}

// insertSite inserts an active site of the default tenant directly, public
// or behind a password.
func (h *harness) insertSite(name, slug string, password bool) *models.Site {
	h.t.Helper()
	now := time.Now().UTC()
	tid, err := h.d.DB.EnsureDefaultTenant(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	s := &models.Site{TenantID: tid, Name: name, Slug: slug, Status: models.SiteActive, ThemeColor: "blue",
		LayoutMode: "sidebar", QuickQuestions: "[]", BotConfig: "{}", IsPublic: !password, RequiresPassword: password,
		CreatedAt: now, UpdatedAt: now}
	if _, err := h.d.DB.NewInsert().Model(s).Exec(context.Background()); err != nil {
		h.t.Fatal(err)
	}
	return s
}

// setSite changes one column of a site directly.
func (h *harness) setSite(siteID int64, set string, arg any) {
	h.t.Helper()
	if _, err := h.d.DB.NewUpdate().Model((*models.Site)(nil)).Set(set, arg).Where("id = ?", siteID).
		Exec(context.Background()); err != nil {
		h.t.Fatal(err)
	}
	// As an admin write through this server would: its copies of the row go.
	h.siteWritten(siteID)
}

// userToken creates an active user of the role assigned to the sites and
// returns a login token for it.
func (h *harness) userToken(role string, sites ...int64) string {
	h.t.Helper()
	tid, _ := h.d.DB.EnsureDefaultTenant(context.Background())
	tok, _ := h.tenantUser(role, tid, sites...)
	return tok
}

// tenantUser creates an active user of the tenant with the role, assigned
// to the sites, and returns a login token and its id.
func (h *harness) tenantUser(role string, tenant int64, sites ...int64) (string, int64) {
	h.t.Helper()
	h.users++
	email := fmt.Sprintf("%s%d@example.com", strings.ReplaceAll(role, "_", ""), h.users)
	hash, err := HashPassword("password123")
	if err != nil {
		h.t.Fatal(err)
	}
	u := &models.User{TenantID: tenant, Name: email, Email: email, PasswordHash: hash, Role: role, Status: models.UserActive}
	if err := h.d.DB.CreateUser(context.Background(), u, sites); err != nil {
		h.t.Fatal(err)
	}
	tok, err := h.s.issueToken(u)
	if err != nil {
		h.t.Fatal(err)
	}
	return tok, u.ID
}

// resp is a decoded response.
type resp struct {
	Status int
	Header http.Header
	Raw    []byte
	Code   int             `json:"code"`
	Msg    string          `json:"msg"`
	Data   json.RawMessage `json:"data"`
}

// into decodes the envelope data into v.
func (r *resp) into(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Data, v); err != nil {
		t.Fatalf("decode data %s: %v", r.Data, err)
	}
}

// do sends a request; body may be nil, a string (sent raw) or a value (JSON).
func (h *harness) do(method, path string, body any, token string, headers ...string) *resp {
	h.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			h.t.Fatal(err)
		}
		rd = bytes.NewReader(buf)
	}
	req := httptest.NewRequest(method, path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range h.always {
		req.Header.Set(k, v)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := h.s.App().Test(req, -1)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	r := &resp{Status: res.StatusCode, Header: res.Header, Raw: raw}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		_ = json.Unmarshal(raw, r)
	}
	return r
}

// must asserts the status and returns the response.
func (h *harness) must(status int, method, path string, body any, token string, headers ...string) *resp {
	h.t.Helper()
	r := h.do(method, path, body, token, headers...)
	if r.Status != status {
		h.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.Status, status, r.Raw)
	}
	return r
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
