// Command lorebench measures Lore end to end in one run and writes one
// report (bench/REPORT.md): every figure next to a ceiling measured in the
// same run, and the targets of issues 3, 4 and 5 with PASS/MISS.
//
// It starts a Temporal dev server and `bin/lore serve` as child processes on
// a scratch PostgreSQL database, drives them over HTTP from this process,
// and removes everything at the end (also on failure or Ctrl-C):
//
//	A. API: health (ceiling), cached site detail, document detail, keyword list
//	B. vectorization of a real documentation corpus vs a plain in-process
//	   loop; embedded vector store search latency at 100k chunks
//	C. chat: response.created and first-token overhead with a scripted
//	   OpenAI-compatible model, at 1 and 20 concurrent chats
//
// Run it with `make bench` (or scripts/bench.sh [flags]); -quick is a smoke
// run with tiny sizes.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/lorekb/lore/bench/internal/corpus"
	"github.com/lorekb/lore/bench/internal/env"
	"github.com/lorekb/lore/bench/internal/scripted"
	"github.com/lorekb/lore/workflows"
)

type options struct {
	root       string
	out        string
	loreBin    string
	temporal   string
	pgURL      string
	quick      bool
	keep       bool
	timeout    time.Duration
	only       string
	loreEnv    multiFlag
	docs       int
	docSize    int
	conns      int
	duration   time.Duration
	warmup     time.Duration
	corpusMin  int
	corpusMax  int
	corpusDir  string
	batchMax   int
	vecTimeout time.Duration
	chunks     int
	queries    int
	k          int
	chatDocs   int
	chatConc   int
	chatRounds int
	chat1      int
	modelDelay time.Duration
	tokens     int
	tps        float64
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func parseFlags() *options {
	o := &options{}
	flag.StringVar(&o.root, "root", ".", "repository root (bin/lore, bin/temporal, bench/)")
	flag.StringVar(&o.out, "out", "bench/REPORT.md", "report file, relative to -root unless absolute (empty: do not write)")
	flag.StringVar(&o.loreBin, "lore", "bin/lore", "lore binary, relative to -root unless absolute")
	flag.StringVar(&o.temporal, "temporal", "bin/temporal", "Temporal CLI binary, relative to -root unless absolute")
	flag.StringVar(&o.pgURL, "pg", env.AdminURL(), "PostgreSQL server URL used to create and drop the scratch database ($LORE_BENCH_PG_URL, $LORE_TEST_PG_URL)")
	flag.BoolVar(&o.quick, "quick", false, "smoke run: tiny sizes (flags given explicitly still win)")
	flag.BoolVar(&o.keep, "keep", false, "keep the work directory (logs, data) and print its path")
	flag.DurationVar(&o.timeout, "timeout", 40*time.Minute, "abort the whole run after this long")
	flag.StringVar(&o.only, "only", "api,vectorize,search,chat", "comma-separated parts to run: api, vectorize, search, chat")
	flag.Var(&o.loreEnv, "lore-env", "extra KEY=VALUE for the lore process (repeatable)")

	flag.IntVar(&o.docs, "docs", 10000, "A: published documents loaded into the API site")
	flag.IntVar(&o.docSize, "doc-size", 4096, "A: approximate document size in bytes")
	flag.IntVar(&o.conns, "conns", 32, "A: concurrent keep-alive connections")
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "A: measured time per endpoint")
	flag.DurationVar(&o.warmup, "warmup", 2*time.Second, "A: unmeasured warm-up per endpoint")

	flag.IntVar(&o.corpusMin, "corpus-min", 1000, "B: split the corpus into at least this many documents")
	flag.IntVar(&o.corpusMax, "corpus-max", 0, "B: use at most this many of them, spread over the corpus (0: all)")
	flag.StringVar(&o.corpusDir, "corpus-dir", "", "B: use .md/.html files from this directory instead of downloading a Debian doc package")
	flag.IntVar(&o.batchMax, "batch-max", 5000, "B: document ids per documents:batchVectorize request (the API limit)")
	flag.DurationVar(&o.vecTimeout, "vectorize-timeout", 20*time.Minute, "B: give up waiting for the vectorization jobs after this long")
	flag.IntVar(&o.chunks, "chunks", 100000, "B: chunks in the vector store search benchmark")
	flag.IntVar(&o.queries, "queries", 1000, "B: vector store search queries")
	flag.IntVar(&o.k, "k", 50, "B: top-k of each search")

	flag.IntVar(&o.chatDocs, "chat-docs", 5, "C: documents published and vectorized in the chat site")
	flag.IntVar(&o.chatConc, "chat-concurrency", 20, "C: concurrent chats of the concurrent level")
	flag.IntVar(&o.chatRounds, "chat-rounds", 5, "C: chats per client at the concurrent level")
	flag.IntVar(&o.chat1, "chat-single-rounds", 20, "C: chats at the single-chat level")
	flag.DurationVar(&o.modelDelay, "model-delay", 200*time.Millisecond, "C: scripted model wait before its first chunk")
	flag.IntVar(&o.tokens, "model-tokens", 20, "C: answer tokens the scripted model streams")
	flag.Float64Var(&o.tps, "model-tps", 50, "C: scripted model tokens per second")
	flag.Parse()

	if o.quick {
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		quick := map[string]string{
			"docs": "1000", "duration": "2s", "warmup": "500ms", "corpus-min": "1000", "corpus-max": "100",
			"chunks": "10000", "queries": "200", "chat-docs": "3", "chat-rounds": "2", "chat-single-rounds": "5",
		}
		for name, v := range quick {
			if !set[name] {
				_ = flag.Set(name, v)
			}
		}
	}
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(o.root, p)
	}
	o.root, _ = filepath.Abs(o.root)
	o.out, o.loreBin, o.temporal = abs(o.out), abs(o.loreBin), abs(o.temporal)
	return o
}

func (o *options) runs(part string) bool {
	for _, p := range strings.Split(o.only, ",") {
		if strings.TrimSpace(p) == part {
			return true
		}
	}
	return false
}

func main() {
	o := parseFlags()
	os.Exit(run(o))
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// bench holds the running system.
type bench struct {
	o         *options
	work      string
	db        *env.ScratchDB
	pool      *pgxpool.Pool
	temporal  *env.Proc
	lore      *env.Proc
	model     *scripted.Server
	base      string        // lore base URL
	taddr     string        // Temporal frontend address
	vecPosted time.Duration // part B: time until the batchVectorize requests were answered
	vecSteps  []string      // part B: per job, where the end-to-end time went
	api       *loreClient
	rep       *report

	corpus    []corpus.Doc // documents of parts B and C
	corpusSrc corpus.Source
	corpusAll int   // documents the corpus split into, before -corpus-max
	vecSite   int64 // site of part B
}

func run(o *options) (code int) {
	sigCtx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() { <-sigCtx.Done(); stop() }() // a second Ctrl-C kills at once
	ctx, cancel := context.WithTimeout(sigCtx, o.timeout)
	defer cancel()

	start := time.Now()
	b := &bench{o: o, rep: newReport(o)}
	b.rep.machine = env.Describe(ctx, o.root)
	logf("lorebench: %s", strings.Join(os.Args[1:], " "))
	logf("machine: %d CPU (%s), %s, %s, load %s", b.rep.machine.NProc, b.rep.machine.CPUModel, b.rep.machine.MemTotal, b.rep.machine.Kernel, b.rep.machine.LoadAvg)

	err := b.setup(ctx)
	defer b.teardown()
	if err == nil {
		err = b.runAll(ctx)
	}
	b.rep.elapsed = time.Since(start)
	if err != nil {
		switch {
		case sigCtx.Err() != nil:
			err = fmt.Errorf("interrupted: %w", err)
		case ctx.Err() != nil:
			err = fmt.Errorf("-timeout %s reached: %w", o.timeout, err)
		}
		b.rep.failure = err.Error()
		logf("FAILED: %v", err)
		if b.lore != nil && sigCtx.Err() == nil {
			fmt.Fprintf(os.Stderr, "--- last lines of the lore log (%s) ---\n%s\n", b.lore.LogPath, b.lore.Tail(40))
		}
		code = 1
	}
	text := b.rep.render()
	fmt.Println()
	fmt.Println(text)
	if sigCtx.Err() != nil {
		logf("interrupted: %s left as it was", o.out)
	} else if o.out != "" {
		if werr := os.WriteFile(o.out, []byte(text), 0o644); werr != nil {
			logf("write report: %v", werr)
			code = 1
		} else {
			logf("report written to %s", o.out)
		}
	}
	return code
}

func (b *bench) setup(ctx context.Context) error {
	o := b.o
	for _, p := range []string{o.loreBin, o.temporal} {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("%s not found: run `make build tools` first (or pass -lore / -temporal)", p)
		}
	}
	var err error
	if b.work, err = os.MkdirTemp("", "lorebench-"); err != nil {
		return err
	}
	logf("work directory %s", b.work)

	if b.db, err = env.CreateDB(ctx, o.pgURL); err != nil {
		return err
	}
	logf("database %s created", b.db.Name)
	if b.pool, err = pgxpool.New(ctx, b.db.DSN); err != nil {
		return fmt.Errorf("connect to %s: %w", b.db.Name, err)
	}
	if b.rep.machine.Postgres == "?" {
		var v string
		if b.pool.QueryRow(ctx, "SHOW server_version").Scan(&v) == nil {
			b.rep.machine.Postgres = "PostgreSQL " + v
		}
	}

	// Temporal dev server, in memory.
	tport, err := env.FreePort()
	if err != nil {
		return err
	}
	uport, err := env.FreePort()
	if err != nil {
		return err
	}
	taddr := fmt.Sprintf("127.0.0.1:%d", tport)
	b.taddr = taddr
	b.temporal, err = env.Start("temporal", b.work, o.temporal, append([]string{"server", "start-dev", "--headless", "--ip", "127.0.0.1",
		"--port", env.Itoa(tport), "--ui-port", env.Itoa(uport), "--log-level", "error",
		"--dynamic-config-value", "system.enableActivityEagerExecution=true"}, workflows.DevServerSearchAttributeArgs()...), env.FilteredEnviron())
	if err != nil {
		return err
	}
	if err := b.temporal.WaitTCP(ctx, taddr, 90*time.Second); err != nil {
		return err
	}
	logf("temporal dev server on %s (pid %d)", taddr, b.temporal.Pid())

	// Scripted model for part C; lore is configured with it from the start
	// (the chat settings do not touch parts A and B).
	if b.model, err = scripted.Start(o.modelDelay, o.tokens, o.tps); err != nil {
		return err
	}

	hport, err := env.FreePort()
	if err != nil {
		return err
	}
	b.base = fmt.Sprintf("http://127.0.0.1:%d", hport)
	secret := make([]byte, 24)
	_, _ = rand.Read(secret)
	const email, password = "bench@lore.local", "bench-password-123"
	data := filepath.Join(b.work, "data")
	environ := append(env.FilteredEnviron(),
		"DATABASE_URL="+b.db.DSN,
		"LORE_DATA_DIR="+data,
		"TEMPORAL_ADDRESS="+taddr,
		"TEMPORAL_TASK_QUEUE=lorebench",
		"LORE_ADMIN_EMAIL="+email,
		"LORE_ADMIN_PASSWORD="+password,
		"LORE_JWT_SECRET="+hex.EncodeToString(secret),
		fmt.Sprintf("LORE_HTTP_ADDR=127.0.0.1:%d", hport),
		"LORE_LOG_LEVEL=warn",
		"CHAT_PROVIDER=openai",
		"CHAT_BASE_URL="+b.model.BaseURL(),
		"CHAT_MODEL=scripted",
		"CHAT_API_KEY=bench",
	)
	environ = append(environ, o.loreEnv...)
	b.rep.loreEnv = fmt.Sprintf("DATABASE_URL=<scratch database %s> LORE_DATA_DIR=<temp dir> TEMPORAL_ADDRESS=%s (dev server, in memory) TEMPORAL_TASK_QUEUE=lorebench LORE_HTTP_ADDR=127.0.0.1:<free port> LORE_LOG_LEVEL=warn CHAT_PROVIDER=openai CHAT_BASE_URL=<scripted model>/v1 CHAT_MODEL=scripted%s; everything else at its default",
		b.db.Name, taddr, strings.TrimRight(" "+strings.Join(o.loreEnv, " "), " "))
	if b.lore, err = env.Start("lore", b.work, o.loreBin, []string{"serve"}, environ); err != nil {
		return err
	}
	hc := &http.Client{Timeout: 3 * time.Second}
	defer hc.CloseIdleConnections()
	err = b.lore.WaitFor(ctx, 120*time.Second, "GET /health with temporal ok", func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.base+"/health", nil)
		res, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		var h struct {
			Data struct {
				Status string            `json:"status"`
				Checks map[string]string `json:"checks"`
			} `json:"data"`
		}
		if res.StatusCode != 200 {
			return fmt.Errorf("HTTP %d", res.StatusCode)
		}
		if err := decodeJSON(res.Body, &h); err != nil {
			return err
		}
		if h.Data.Checks["temporal"] != "ok" || h.Data.Status != "healthy" {
			return fmt.Errorf("health %s, checks %v", h.Data.Status, h.Data.Checks)
		}
		return nil
	})
	if err != nil {
		return err
	}
	logf("lore serve on %s (pid %d)", b.base, b.lore.Pid())
	b.api = newLoreClient(b.base)
	return b.api.login(ctx, email, password)
}

func (b *bench) runAll(ctx context.Context) error {
	type part struct {
		name string
		fn   func(context.Context) error
	}
	for _, p := range []part{{"api", b.benchAPI}, {"vectorize", b.benchVectorize}, {"search", b.benchSearch}, {"chat", b.benchChat}} {
		if !b.o.runs(p.name) {
			continue
		}
		t0 := time.Now()
		logf("== part %s (load average %s)", p.name, env.LoadAvgNow())
		if err := p.fn(ctx); err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		logf("== part %s done in %s", p.name, time.Since(t0).Round(100*time.Millisecond))
	}
	return nil
}

func (b *bench) teardown() {
	// Idle keep-alive connections would hold up lore's graceful shutdown.
	if b.api != nil {
		b.api.http.CloseIdleConnections()
	}
	http.DefaultClient.CloseIdleConnections()
	if b.lore != nil {
		b.lore.Stop(20 * time.Second)
		logf("lore stopped")
	}
	if b.temporal != nil {
		b.temporal.Stop(10 * time.Second)
		logf("temporal stopped")
	}
	if b.model != nil {
		b.model.Close()
	}
	if b.pool != nil {
		b.pool.Close()
	}
	if b.db != nil {
		if err := b.db.Drop(); err != nil {
			logf("drop database %s: %v (drop it by hand)", b.db.Name, err)
		} else {
			logf("database %s dropped", b.db.Name)
		}
	}
	if b.work != "" {
		if b.o.keep {
			logf("work directory kept: %s", b.work)
		} else if err := os.RemoveAll(b.work); err != nil {
			logf("remove %s: %v", b.work, err)
		}
	}
}
