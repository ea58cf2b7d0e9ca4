// Package e2e drives Lore end to end over HTTP against real servers: a
// Temporal dev server, SQLite and PostgreSQL, with the worker in-process.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lorekb/lore/api"
	"github.com/lorekb/lore/internal/config"
	"github.com/lorekb/lore/internal/db/dbtest"
	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/internal/testenv"
	"github.com/lorekb/lore/worker"
)

var temporalAddr string

func TestMain(m *testing.M) {
	tmp, err := testenv.StartTemporal()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	temporalAddr = tmp.Addr
	code := m.Run()
	tmp.Stop()
	os.Exit(code)
}

// app is one Lore process (API + worker) on a fresh database.
type app struct {
	t     *testing.T
	d     *deps.Deps
	srv   *api.Server
	w     *worker.Worker
	token string
	queue string
	dsn   string
	env   map[string]string
	logw  io.Writer // where the process logs (JSON); nil: discarded
	// restarted: the database was set up by an earlier start (see restart).
	restarted bool
	// jar holds the chat owner cookie (lore_chat_secret) the first chat
	// answer set, sent back on every later request as a browser does.
	jar   sync.Mutex
	owner string
}

// keepCookie stores the chat owner cookie a response sets.
func (a *app) keepCookie(res *http.Response) {
	for _, ck := range res.Cookies() {
		if ck.Name == "lore_chat_secret" {
			a.jar.Lock()
			a.owner = ck.Value
			a.jar.Unlock()
		}
	}
}

// sendCookie adds the stored chat owner cookie to a request.
func (a *app) sendCookie(req *http.Request) {
	a.jar.Lock()
	defer a.jar.Unlock()
	if a.owner != "" && req.Header.Get("X-Lore-Session-Secret") == "" {
		req.AddCookie(&http.Cookie{Name: "lore_chat_secret", Value: a.owner})
	}
}

// useOwner puts a chat owner secret in the jar.
func (a *app) useOwner(secret string) {
	a.jar.Lock()
	a.owner = secret
	a.jar.Unlock()
}

// forgetCookie empties the jar: the next requests come from a stranger.
func (a *app) forgetCookie() {
	a.jar.Lock()
	a.owner = ""
	a.jar.Unlock()
}

// newApp starts API and worker on a fresh database of the dialect, with its
// own task queue so parallel apps never steal each other's tasks.
func newApp(t *testing.T, dialect string, env map[string]string) *app {
	t.Helper()
	return newAppLogging(t, dialect, env, nil)
}

// newAppLogging is newApp with the process's JSON log written to logw.
func newAppLogging(t *testing.T, dialect string, env map[string]string, logw io.Writer) *app {
	t.Helper()
	a := &app{t: t, logw: logw, queue: fmt.Sprintf("e2e-%s-%d", t.Name(), time.Now().UnixNano()), dsn: dbtest.DSN(t, dialect)}
	a.queue = strings.NewReplacer("/", "-", " ", "-").Replace(a.queue)
	a.env = map[string]string{
		"LORE_DATA_DIR": t.TempDir(), "DATABASE_URL": a.dsn, "TEMPORAL_ADDRESS": temporalAddr,
		"TEMPORAL_TASK_QUEUE": a.queue, "LORE_JWT_SECRET": "e2e-secret-0123456789abcdef0123456789",
		"LORE_CHAT_RATE_PER_IP": "1000000", "LORE_CHAT_RATE_PER_SITE": "1000000", // one client address sends every request
		"LORE_ADMIN_EMAIL": "admin@e2e.test", "LORE_ADMIN_PASSWORD": "admin-password",
		"LORE_METRICS_PUBLIC": "true", // the chat test reads /metrics on the API address
	}
	if dialect == "sqlite" {
		a.env["DATABASE_URL"] = ""
	}
	for k, v := range env {
		a.env[k] = v
	}
	a.start()
	t.Cleanup(a.stop)
	return a
}

func (a *app) start() {
	t := a.t
	cfg, err := config.LoadFrom(config.MapSource(a.env))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if a.logw != nil {
		log = slog.New(slog.NewJSONHandler(a.logw, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	d, err := deps.Open(context.Background(), cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	a.d = d
	if err := api.Bootstrap(context.Background(), d, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !a.restarted {
		a.offsetIDs()
	}
	a.startWorker()
	a.srv = api.New(d)
	r := a.do("POST", "/admin/api/v1/users:login", map[string]string{"email": "admin@e2e.test", "password": "admin-password"}, "")
	var lr struct {
		Token string `json:"token"`
	}
	r.into(t, &lr)
	a.token = lr.Token
}

func (a *app) startWorker() {
	w, err := worker.New(context.Background(), a.d)
	if err != nil {
		a.t.Fatal(err)
	}
	a.w = w
	go func() { _ = w.Run() }()
}

func (a *app) stopWorker() {
	if a.w != nil {
		a.w.Stop()
		a.w = nil
	}
}

func (a *app) stop() {
	a.stopWorker()
	if a.srv != nil {
		_ = a.srv.Shutdown()
	}
	a.d.Close()
}

type resp struct {
	Status int
	Raw    []byte
	Code   int             `json:"code"`
	Msg    string          `json:"msg"`
	Data   json.RawMessage `json:"data"`
}

func (r *resp) into(t *testing.T, v any) {
	t.Helper()
	if r.Status >= 300 {
		t.Fatalf("status %d: %s", r.Status, r.Raw)
	}
	if err := json.Unmarshal(r.Data, v); err != nil {
		t.Fatalf("decode %s: %v", r.Data, err)
	}
}

// send makes a request with a JSON body (none when body is nil), the
// headers given in name, value pairs and the chat owner cookie the app
// holds, and keeps the cookie the answer sets.
func (a *app) send(method, path string, body any, headers ...string) *http.Response {
	a.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req := httptest.NewRequest(method, path, rd)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	a.sendCookie(req)
	res, err := a.srv.App().Test(req, -1)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	a.keepCookie(res)
	return res
}

// readResp reads an answer and its envelope, and closes its body.
func readResp(res *http.Response) *resp {
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	r := &resp{Status: res.StatusCode, Raw: raw}
	_ = json.Unmarshal(raw, r)
	return r
}

func (a *app) do(method, path string, body any, token string) *resp {
	a.t.Helper()
	var auth []string
	if token != "" {
		auth = []string{"Authorization", "Bearer " + token}
	}
	return readResp(a.send(method, path, body, auth...))
}

// admin sends a request with the admin token and requires a 2xx.
func (a *app) admin(method, path string, body any, out any) {
	a.t.Helper()
	r := a.do(method, path, body, a.token)
	if r.Status >= 300 {
		a.t.Fatalf("%s %s: %d %s", method, path, r.Status, r.Raw)
	}
	if out != nil {
		r.into(a.t, out)
	}
}

// siteAdmin creates a site_admin of the sites and logs in as them.
func (a *app) siteAdmin(email string, sites ...int64) string {
	a.admin("POST", "/admin/api/v1/users", map[string]any{"name": "sa", "email": email, "password": "site-admin-pw",
		"role": "site_admin", "managed_site_ids": sites}, nil)
	var lr struct {
		Token string `json:"token"`
	}
	a.admin("POST", "/admin/api/v1/users:login", map[string]any{"email": email, "password": "site-admin-pw"}, &lr)
	return lr.Token
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s", d, what)
}

// offsetIDs starts the id sequences of this app's database at a random
// offset. Every e2e app shares one Temporal server and workflow ids derive
// from database ids (vectorize-doc-3), so without this a run left behind by a
// stopped app could be mistaken for this app's (in production one deployment
// owns its namespace).
func (a *app) offsetIDs() {
	ctx := context.Background()
	base := 1_000_000 + rand.Int64N(1_000_000_000)
	for _, table := range []string{"sites", "documents", "collections", "chat_sessions"} {
		var err error
		if a.d.DB.Postgres() {
			_, err = a.d.DB.ExecContext(ctx, "SELECT setval(pg_get_serial_sequence(?, 'id'), ?)", table, base)
		} else {
			_, err = a.d.DB.ExecContext(ctx, "INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", table, base)
		}
		if err != nil {
			a.t.Fatalf("offset %s ids: %v", table, err)
		}
	}
}
