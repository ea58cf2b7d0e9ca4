//go:build chaos

package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/api/apitest"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/db/dbtest"
	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/internal/vector/local"
	"github.com/lorekb/lore/models"
)

const (
	adminEmail    = "admin@chaos.test"
	adminPassword = "chaos-admin-password"
	jwtSecret     = "chaos-secret-0123456789abcdef0123456789abcdef"
)

// stack is one Lore deployment of a scenario: a fresh PostgreSQL database,
// a data directory, its own task queue, and two processes, `lore serve`
// (API only) and `lore worker`.
type stack struct {
	t       *testing.T
	sc      *scenario
	name    string
	dir     string
	DataDir string
	DSN     string
	Queue   string
	Addr    string
	Base    string
	env     map[string]string // shared by both processes
	apiEnv  map[string]string
	wEnv    map[string]string
	api     *proc
	worker  *proc
	apiN    int
	workerN int
	DB      *db.DB // the test's own connection (for setup and checks)
	token   string
	HTTP    *http.Client
}

type stackOpts struct {
	API    map[string]string // extra environment of lore serve
	Worker map[string]string // extra environment of lore worker
}

func newStack(sc *scenario, name string, o stackOpts) *stack {
	t := sc.t
	s := &stack{t: t, sc: sc, name: name, apiEnv: o.API, wEnv: o.Worker, HTTP: &http.Client{Timeout: 30 * time.Second}}
	// Under the run's temp directory, which is kept when the run fails, so
	// the process logs can be read afterwards.
	s.dir = filepath.Join(tmpRoot, name)
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		sc.fatalf("setup", "%v", err)
	}
	s.DataDir = filepath.Join(s.dir, "data")
	_, dsn, drop, err := dbtest.CreatePG()
	if err != nil {
		sc.fatalf("setup", "create PostgreSQL database: %v", err)
	}
	t.Cleanup(drop) // runs after the processes below are stopped
	s.DSN = dsn
	port, err := freePort()
	if err != nil {
		sc.fatalf("setup", "free port: %v", err)
	}
	s.Addr = fmt.Sprintf("127.0.0.1:%d", port)
	s.Base = "http://" + s.Addr
	s.Queue = fmt.Sprintf("chaos-%s-%d", name, time.Now().UnixNano())
	s.env = map[string]string{
		"LORE_DATA_DIR": s.DataDir, "DATABASE_URL": dsn, "TEMPORAL_ADDRESS": temporal.Addr,
		"TEMPORAL_NAMESPACE": "default", "TEMPORAL_TASK_QUEUE": s.Queue, "LORE_JWT_SECRET": jwtSecret,
		"LORE_CHAT_RATE_PER_IP": "1000000", "LORE_CHAT_RATE_PER_SITE": "1000000",
		"LORE_ADMIN_EMAIL": adminEmail, "LORE_ADMIN_PASSWORD": adminPassword, "LORE_LOG_LEVEL": "info",
		// One document per activity, one at a time: batches last long enough
		// for a fault to land mid-batch even at CI sizes.
		"LORE_BATCH_VECTORIZE_GROUP": "1", "LORE_BATCH_VECTORIZE_CONCURRENCY": "1",
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, p := range []*proc{s.api, s.worker} {
				if p != nil {
					t.Logf("--- last lines of %s (%s) ---\n%s", p.name, p.logPath, p.Tail(40))
				}
			}
		}
		if s.worker != nil {
			s.worker.Stop(30 * time.Second)
		}
		if s.api != nil {
			s.api.Stop(30 * time.Second)
		}
	})
	s.StartAPI() // first, so it alone runs the migrations of the fresh database
	d, err := db.Open(context.Background(), dsn)
	if err != nil {
		sc.fatalf("setup", "open database: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	s.DB = d
	s.StartWorker()
	s.login()
	return s
}

func (s *stack) envList(extra map[string]string) []string {
	env := baseEnv()
	m := map[string]string{}
	for k, v := range s.env {
		m[k] = v
	}
	for k, v := range extra {
		m[k] = v
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+m[k])
	}
	return env
}

// StartAPI starts `lore serve` with LORE_RUN_WORKER=false and waits until
// GET /health answers 200.
func (s *stack) StartAPI() {
	s.t.Helper()
	s.apiN++
	extra := map[string]string{"LORE_RUN_WORKER": "false", "LORE_HTTP_ADDR": s.Addr}
	for k, v := range s.apiEnv {
		extra[k] = v
	}
	p, err := startProc(fmt.Sprintf("api#%d", s.apiN), filepath.Join(s.dir, fmt.Sprintf("api-%d.log", s.apiN)),
		loreBin, []string{"serve"}, s.envList(extra))
	if err != nil {
		s.sc.fatalf("start lore serve", "%v", err)
	}
	s.api = p
	err = waitFor(90*time.Second, 100*time.Millisecond, func() (bool, error) {
		if p.Exited() {
			return false, fmt.Errorf("exited: %v", p.err)
		}
		res, err := s.HTTP.Get(s.Base + "/health")
		if err != nil {
			return false, err
		}
		res.Body.Close()
		return res.StatusCode == 200, fmt.Errorf("health: %d", res.StatusCode)
	})
	if err != nil {
		s.sc.fatalf("start lore serve", "not healthy: %v\n%s", err, p.Tail(30))
	}
}

// KillAPI kills the API process with SIGKILL.
func (s *stack) KillAPI() { s.api.Kill9() }

// StartWorker starts `lore worker` and waits until it polls the task queue.
func (s *stack) StartWorker() {
	s.t.Helper()
	s.workerN++
	p, err := startProc(fmt.Sprintf("worker#%d", s.workerN), filepath.Join(s.dir, fmt.Sprintf("worker-%d.log", s.workerN)),
		loreBin, []string{"worker"}, s.envList(s.wEnv))
	if err != nil {
		s.sc.fatalf("start lore worker", "%v", err)
	}
	s.worker = p
	err = waitFor(90*time.Second, 200*time.Millisecond, func() (bool, error) {
		if p.Exited() {
			return false, fmt.Errorf("exited: %v", p.err)
		}
		return temporal.PollerOf(context.Background(), s.Queue, p.Pid())
	})
	if err != nil {
		s.sc.fatalf("start lore worker", "not polling %s: %v\n%s", s.Queue, err, p.Tail(30))
	}
}

// KillWorker kills the worker process with SIGKILL.
func (s *stack) KillWorker() { s.worker.Kill9() }

// StopWorker stops the worker gracefully (SIGTERM), releasing the vector
// store directory.
func (s *stack) StopWorker() {
	if !s.worker.Stop(60 * time.Second) {
		s.t.Logf("worker did not stop within 60s; killed")
	}
}

// --- HTTP ---

// reply is a response with its envelope decoded when there is one.
type reply struct {
	Status   int
	Raw      []byte
	Envelope bool // the body is a {code, msg, data} object
	Code     int
	Msg      string
	Data     json.RawMessage
	// ErrorStatus is X-Lore-Error-Status: the status a stream's setup error
	// would have had without a stream (the stream itself answers 200).
	ErrorStatus string
}

func (s *stack) do(method, path string, body any, token string) (*reply, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.Base+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := s.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	r := parseReply(res.StatusCode, raw)
	r.ErrorStatus = res.Header.Get("X-Lore-Error-Status")
	return r, nil
}

func parseReply(status int, raw []byte) *reply {
	r := &reply{Status: status, Raw: raw}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) == nil {
		_, hasCode := m["code"]
		_, hasMsg := m["msg"]
		if hasCode && hasMsg && json.Unmarshal(m["code"], &r.Code) == nil && json.Unmarshal(m["msg"], &r.Msg) == nil {
			r.Envelope = true
			r.Data = m["data"]
		}
	}
	return r
}

// admin sends an admin request, requires a 2xx and decodes data into out.
func (s *stack) admin(method, path string, body, out any) {
	s.t.Helper()
	r, err := s.do(method, path, body, s.token)
	if err != nil {
		s.sc.fatalf(method+" "+path, "%v", err)
	}
	if r.Status >= 300 {
		s.sc.fatalf(method+" "+path, "status %d: %s", r.Status, clip(string(r.Raw), 300))
	}
	if out != nil {
		if err := json.Unmarshal(r.Data, out); err != nil {
			s.sc.fatalf(method+" "+path, "decode %s: %v", clip(string(r.Data), 200), err)
		}
	}
}

func (s *stack) login() {
	var lr struct {
		Token string `json:"token"`
	}
	s.admin("POST", "/admin/api/v1/users:login", map[string]string{"email": adminEmail, "password": adminPassword}, &lr)
	s.token = lr.Token
}

// CreateSite creates an active site through the admin API.
func (s *stack) CreateSite(name string) int64 {
	var site struct {
		ID int64 `json:"id"`
	}
	s.admin("POST", "/admin/api/v1/sites", map[string]any{"name": name}, &site)
	return site.ID
}

// guide is the body of generated documents: a few chunks each.
var guide = strings.Repeat("## Install\n\nRun the installer and follow the prompts. The installer checks the system.\n\n"+
	"## Configure\n\nSet LORE_DATA_DIR to keep data in another directory. Restart after changes.\n\n", 12)

// InsertDocs inserts n published, not yet vectorized documents by SQL.
func (s *stack) InsertDocs(siteID int64, n int) []int64 {
	now := time.Now().UTC()
	ids := make([]int64, 0, n)
	for start := 0; start < n; start += 250 {
		end := min(start+250, n)
		docs := make([]models.Document, 0, end-start)
		for i := start; i < end; i++ {
			docs = append(docs, models.Document{TenantID: 1, SiteID: siteID, Title: fmt.Sprintf("Chaos page %d", i),
				Status: models.DocPublished, Content: fmt.Sprintf("# Page %d\n\nPage %d of the chaos corpus.\n\n%s", i, i, guide),
				VectorStatus: models.VecNone, ContentVersion: 1, Tags: "[]", CreatedAt: now, UpdatedAt: now})
		}
		if _, err := s.DB.NewInsert().Model(&docs).Exec(context.Background()); err != nil {
			s.sc.fatalf("insert documents", "%v", err)
		}
		for _, d := range docs {
			ids = append(ids, d.ID)
		}
	}
	return ids
}

// --- jobs ---

type jobView struct {
	Status   string `json:"status"`
	Error    string `json:"error"`
	Progress *struct {
		Total     int  `json:"total"`
		Completed int  `json:"completed"`
		Failed    int  `json:"failed"`
		Running   int  `json:"running"`
		Pending   int  `json:"pending"`
		Done      bool `json:"done"`
	} `json:"progress"`
}

// Job reads GET /admin/api/v1/jobs/{id}; errors (e.g. 503 while Temporal is
// down) are returned, not fatal.
func (s *stack) Job(id string) (*jobView, error) { return jobAs[jobView](s, id) }

// jobAs reads GET /admin/api/v1/jobs/{id} into the part of the job view a
// test reads.
func jobAs[T any](s *stack, id string) (*T, error) {
	r, err := s.do("GET", "/admin/api/v1/jobs/"+id, nil, s.token)
	if err != nil {
		return nil, err
	}
	if r.Status != 200 {
		return nil, fmt.Errorf("status %d: %s", r.Status, clip(string(r.Raw), 200))
	}
	var v T
	if err := json.Unmarshal(r.Data, &v); err != nil {
		return nil, err
	}
	return &v, nil
}

// StartBatch posts :batchVectorize for ids and returns the job id.
func (s *stack) StartBatch(ids []int64) string {
	var br struct {
		JobID        string `json:"job_id"`
		SuccessCount int    `json:"success_count"`
	}
	s.admin("POST", "/admin/api/v1/documents:batchVectorize", map[string]any{"document_ids": ids}, &br)
	if br.SuccessCount != len(ids) || br.JobID == "" {
		s.sc.fatalf("start batch", "success_count %d of %d, job %q", br.SuccessCount, len(ids), br.JobID)
	}
	return br.JobID
}

// --- vector store ---

// StoreCounts opens the worker's embedded vector store (the worker must be
// stopped: the store holds a directory lock) and counts each document's
// chunks.
func (s *stack) StoreCounts(ids []int64) (map[int64]int, int, error) {
	emb, err := deps.LocalEmbedder("", 0) // lore serve's default embedder
	if err != nil {
		return nil, 0, err
	}
	dim := emb.Dimension()
	st, err := local.Open(filepath.Join(s.DataDir, "vectors", fmt.Sprintf("dim%d", dim)), dim)
	if err != nil {
		return nil, 0, err
	}
	defer st.Close()
	ctx := context.Background()
	out := make(map[int64]int, len(ids))
	for _, id := range ids {
		n, err := st.CountDocument(ctx, id)
		if err != nil {
			return nil, 0, err
		}
		out[id] = n
	}
	total, err := st.Count(ctx)
	return out, total, err
}

// --- server-sent events ---

// sseEvent is one event of the chat stream.
type sseEvent = apitest.Event
