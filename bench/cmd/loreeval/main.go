// Command loreeval measures retrieval and answer quality end to end and
// writes bench/EVAL.md (make eval). It starts a Temporal dev server and
// `bin/lore serve` on the embedded defaults (SQLite, embedded vector store,
// local embedder, lexical reranker, extractive responder; override any with
// -lore-env, e.g. EMBED_PROVIDER=openai), loads three real documentation
// packages (nodejs-doc, sqlite3-doc, manpages-zh, apache2-doc) through the HTTP API, one
// site each, and asks held-out questions, and each English corpus's
// paraphrase subset, through the HTTP API:
//
//   - retrieval, through POST /admin/api/v1/documents:retrieve (the chunks the
//     chat's search gets), for the full pipeline and with each stage off,
//     next to a plain BM25 over sections of the same files computed here;
//   - answers, through POST /v1/chat/responses, for abstention on
//     off-topic and answerable questions and the share of answers whose
//     first citation is from a relevant file.
//
// Every run, online or -offline, ends with a one-screen summary of the
// per-set figures and the targets.
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

	"github.com/lorekb/lore/bench/internal/env"
)

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

type options struct {
	root, out, loreBin, temporal string
	dump, replay                 string
	keep, debug                  bool
	timeout                      time.Duration
	loreEnv                      multiFlag
	k                            int
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func main() {
	o := &options{}
	flag.StringVar(&o.root, "root", ".", "repository root")
	flag.StringVar(&o.out, "out", "bench/EVAL.md", "report file, relative to -root (empty: print only)")
	flag.StringVar(&o.loreBin, "lore", "bin/lore", "lore binary, relative to -root")
	flag.StringVar(&o.temporal, "temporal", "bin/temporal", "Temporal CLI, relative to -root")
	flag.BoolVar(&o.keep, "keep", false, "keep the work directory (logs, data)")
	flag.BoolVar(&o.debug, "debug", false, "log the top chunks of every question (full pipeline)")
	flag.DurationVar(&o.timeout, "timeout", 20*time.Minute, "abort after this long")
	flag.IntVar(&o.k, "k", 10, "chunks retrieved per question (MRR@k)")
	flag.StringVar(&o.dump, "dump", "", "write every chat question with the passages its answer saw to this file (JSON lines), for calibrating the responder")
	flag.StringVar(&o.replay, "replay", "", "answer the questions of a -dump file again with this build's extractive responder and print the answer figures (no servers)")
	flag.Var(&o.loreEnv, "lore-env", "extra KEY=VALUE for lore serve (repeatable), e.g. EMBED_PROVIDER=openai")
	offlineDir := flag.String("offline", "", "a work directory kept by -keep: measure this build's retrieval and extractive answers in-process over its store (no servers), for tuning")
	misses := flag.Bool("misses", false, "with -offline: list each question whose relevant file the full pipeline does not rank first, with the stage scores of the first three results and of the relevant file's chunks in the top 20, and each answer whose first citation is not from a relevant file, with its passages")
	corpusDir := flag.String("corpus", "", "measure your own documents instead of the built-in corpora: a folder of .md and .html files (one document each), with -questions")
	questionsFile := flag.String("questions", "", "with -corpus: a JSON-lines file of questions, {\"q\": ..., \"file\": \"path/under/corpus.md\"} (\"off_topic\": true for ones the docs cannot answer, \"paraphrase\": true for a paraphrase row)")
	corpusLang := flag.String("lang", "English", "with -corpus: the documents' language (English or Chinese), for the targets that apply")
	flag.Parse()
	if *corpusDir != "" || *questionsFile != "" {
		if *corpusDir == "" || *questionsFile == "" {
			logf("-corpus and -questions go together")
			os.Exit(2)
		}
		if err := useCustomCorpus(*corpusDir, *questionsFile, *corpusLang); err != nil {
			logf("%v", err)
			os.Exit(2)
		}
	}
	if *offlineDir != "" {
		if err := offline(*offlineDir, *misses); err != nil {
			logf("offline: %v", err)
			os.Exit(1)
		}
		return
	}
	if o.replay != "" {
		if err := replay(o.replay); err != nil {
			logf("replay: %v", err)
			os.Exit(1)
		}
		return
	}
	o.root, _ = filepath.Abs(o.root)
	for _, p := range []*string{&o.out, &o.loreBin, &o.temporal} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(o.root, *p)
		}
	}
	os.Exit(run(o))
}

type evaluation struct {
	o        *options
	work     string
	temporal *env.Proc
	lore     *env.Proc
	base     string
	api      *client
	rep      *report
	dump     *dumper
}

func run(o *options) int {
	sigCtx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(sigCtx, o.timeout)
	defer cancel()
	start := time.Now()
	e := &evaluation{o: o, rep: &report{machine: env.Describe(ctx, o.root), loreEnv: o.loreEnv}}
	err := e.setup(ctx)
	defer e.teardown()
	if err == nil {
		e.dump, err = newDumper(o.dump)
		defer func() { _ = e.dump.close() }()
	}
	if err == nil {
		err = e.evaluate(ctx)
	}
	e.rep.elapsed = time.Since(start)
	if err != nil {
		logf("FAILED: %v", err)
		if e.lore != nil {
			fmt.Fprintf(os.Stderr, "--- last lines of the lore log ---\n%s\n", e.lore.Tail(40))
		}
		return 1
	}
	text := e.rep.render()
	fmt.Println(text)
	if o.out != "" {
		if err := os.WriteFile(o.out, []byte(text), 0o644); err != nil {
			logf("write report: %v", err)
			return 1
		}
		logf("report written to %s", o.out)
	}
	fmt.Print("\n" + e.rep.summary())
	return 0
}

func (e *evaluation) setup(ctx context.Context) error {
	o := e.o
	for _, p := range []string{o.loreBin, o.temporal} {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("%s not found: run `make build tools` first", p)
		}
	}
	var err error
	if e.work, err = os.MkdirTemp("", "loreeval-"); err != nil {
		return err
	}
	tport, _ := env.FreePort()
	uport, _ := env.FreePort()
	taddr := fmt.Sprintf("127.0.0.1:%d", tport)
	if e.temporal, err = env.Start("temporal", e.work, o.temporal, []string{"server", "start-dev", "--headless", "--ip", "127.0.0.1",
		"--port", env.Itoa(tport), "--ui-port", env.Itoa(uport), "--log-level", "error"}, env.FilteredEnviron()); err != nil {
		return err
	}
	if err := e.temporal.WaitTCP(ctx, taddr, 90*time.Second); err != nil {
		return err
	}
	hport, _ := env.FreePort()
	e.base = fmt.Sprintf("http://127.0.0.1:%d", hport)
	secret := make([]byte, 24)
	_, _ = rand.Read(secret)
	const email, password = "eval@lore.local", "eval-password-123"
	environ := append(env.FilteredEnviron(),
		"LORE_DATA_DIR="+filepath.Join(e.work, "data"),
		"TEMPORAL_ADDRESS="+taddr,
		"TEMPORAL_TASK_QUEUE=loreeval",
		"LORE_ADMIN_EMAIL="+email,
		"LORE_ADMIN_PASSWORD="+password,
		"LORE_JWT_SECRET="+hex.EncodeToString(secret),
		fmt.Sprintf("LORE_HTTP_ADDR=127.0.0.1:%d", hport),
		"LORE_LOG_LEVEL=warn",
		// Every question comes from this one address: lift the public chat
		// limits (30 a minute per IP by default) as lorebench does.
		"LORE_CHAT_RATE_PER_IP=1000000", "LORE_CHAT_RATE_PER_SITE=1000000", "LORE_CHAT_DAILY_TOKEN_BUDGET=0",
	)
	environ = append(environ, o.loreEnv...)
	if e.lore, err = env.Start("lore", e.work, o.loreBin, []string{"serve"}, environ); err != nil {
		return err
	}
	e.api = newClient(e.base)
	if err := e.lore.WaitFor(ctx, 120*time.Second, "GET /health", func(ctx context.Context) error {
		var h struct {
			Status string            `json:"status"`
			Checks map[string]string `json:"checks"`
		}
		if err := e.api.Call(ctx, http.MethodGet, "/health", nil, &h); err != nil {
			return err
		}
		if h.Checks["temporal"] != "ok" {
			return fmt.Errorf("health %v", h.Checks)
		}
		return nil
	}); err != nil {
		return err
	}
	logf("lore serve on %s", e.base)
	return e.api.Login(ctx, email, password)
}

func (e *evaluation) teardown() {
	if e.api != nil {
		e.api.HTTP.CloseIdleConnections()
	}
	if e.lore != nil {
		e.lore.Stop(20 * time.Second)
	}
	if e.temporal != nil {
		e.temporal.Stop(10 * time.Second)
	}
	if e.work != "" {
		if e.o.keep {
			logf("work directory kept: %s", e.work)
		} else {
			_ = os.RemoveAll(e.work)
		}
	}
}
