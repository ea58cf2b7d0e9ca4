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
//	S. scale (-only scale100k): 100,000 documents loaded, re-indexed as one
//	   job, listed and deleted
//	I. import: documents:import of real Markdown/HTML and generated DOCX
//	   and PDF files vs converting them in a loop, and until searchable
//	R. reader: the reader pages' server time at 20 readers, a page's first
//	   load in bytes, and how soon the console's job watch shows a change
//
// Run it with `make bench` (or scripts/bench.sh [flags]); -quick is a smoke
// run with tiny sizes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/lorekb/lore/bench/internal/corpus"
	"github.com/lorekb/lore/bench/internal/env"
	"github.com/lorekb/lore/bench/internal/scripted"
)

type options struct {
	root     string
	out      string
	loreBin  string
	temporal string
	// The production-shaped Temporal server (-temporal-pg).
	temporalPG     bool
	temporalDev    bool
	temporalServer string
	temporalSQL    string
	temporalShards int
	pgURL          string
	quick          bool
	scale          bool
	keep           bool
	timeout        time.Duration
	only           string
	loreEnv        multiFlag
	docs           int
	docSize        int
	conns          int
	duration       time.Duration
	warmup         time.Duration
	corpusMin      int
	corpusMax      int
	corpusDir      string
	batchMax       int
	vecTimeout     time.Duration
	chunks         int
	queries        int
	k              int
	chatDocs       int
	chatConc       int
	chatCurve      string
	ingest         string
	ingestReps     int
	ingestWarmup   bool
	chatRounds     int
	chat1          int
	chatWarmup     int
	chatBare       bool
	chatSteady     time.Duration
	chatBurst      int
	chatProfile    string
	modelDelay     time.Duration
	tokens         int
	tps            float64
	scaleDocs      int
	scaleBase      int
	scaleDocSize   int
	importRounds   int
	importSets     string
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
	flag.BoolVar(&o.temporalPG, "temporal-pg", false, "also run the vectorize and chat parts against a Temporal server on PostgreSQL (bench/temporal/start.sh)")
	flag.BoolVar(&o.temporalDev, "temporal-dev", true, "run the parts on the Temporal CLI's dev server; false with -temporal-pg: only the vectorize and chat parts, only on the server on PostgreSQL (no Temporal CLI needed)")
	flag.StringVar(&o.temporalServer, "temporal-server", "bin/temporal-server", "Temporal server binary for -temporal-pg (make tools-temporal-server), relative to -root unless absolute")
	flag.StringVar(&o.temporalSQL, "temporal-sql-tool", "bin/temporal-sql-tool", "Temporal SQL tool for -temporal-pg, relative to -root unless absolute")
	flag.IntVar(&o.temporalShards, "temporal-shards", 4, "history shards of the -temporal-pg server")
	flag.StringVar(&o.pgURL, "pg", env.AdminURL(), "PostgreSQL server URL used to create and drop the scratch database ($LORE_BENCH_PG_URL, $LORE_TEST_PG_URL)")
	flag.BoolVar(&o.quick, "quick", false, "smoke run: tiny sizes (flags given explicitly still win)")
	flag.BoolVar(&o.scale, "scale", false, "long run (within 40 minutes): a million chunks, the chat and ingestion curves, 100,000-document jobs (scale100k), and -temporal-pg (flags given explicitly still win)")
	flag.BoolVar(&o.keep, "keep", false, "keep the work directory (logs, data) and print its path")
	flag.DurationVar(&o.timeout, "timeout", 40*time.Minute, "abort the whole run after this long")
	flag.StringVar(&o.only, "only", "binary,api,vectorize,ingest,import,search,chat,reader", "comma-separated parts to run: binary, api, vectorize, ingest (only with -ingest), import, search, chat, reader, scale100k (100,000 documents, about 10 minutes; in -scale by default)")
	flag.Var(&o.loreEnv, "lore-env", "extra KEY=VALUE for the lore process (repeatable)")

	flag.IntVar(&o.docs, "docs", 10000, "A: published documents loaded into the API site")
	flag.IntVar(&o.docSize, "doc-size", 4096, "A: approximate document size in bytes")
	flag.IntVar(&o.conns, "conns", 32, "A: concurrent keep-alive connections")
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "A, R: measured time per endpoint")
	flag.DurationVar(&o.warmup, "warmup", 2*time.Second, "A, R: unmeasured warm-up per endpoint")

	flag.IntVar(&o.corpusMin, "corpus-min", 1000, "B: split the corpus into at least this many documents")
	flag.IntVar(&o.corpusMax, "corpus-max", 0, "B: use at most this many of them, spread over the corpus (0: all)")
	flag.StringVar(&o.corpusDir, "corpus-dir", "", "B: use .md/.html files from this directory instead of downloading a Debian doc package")
	flag.IntVar(&o.batchMax, "batch-max", 5000, "B: document ids per documents:batchVectorize request (the API limit)")
	flag.DurationVar(&o.vecTimeout, "vectorize-timeout", 20*time.Minute, "B: give up waiting for the vectorization jobs after this long")
	flag.StringVar(&o.ingest, "ingest", "", "B: ingestion curve, chunk counts vectorized through batch jobs, comma-separated (e.g. 10000,100000,1000000; empty: none)")
	flag.IntVar(&o.ingestReps, "ingest-reps", 3, "B: runs of the ingestion curve's first level, each in a fresh site; the curve's base is their median")
	flag.BoolVar(&o.ingestWarmup, "ingest-warmup", true, "B: vectorize the ingestion curve's first level once, not counted, before its measured runs")
	flag.IntVar(&o.chunks, "chunks", 100000, "B: chunks in the vector store search benchmark")
	flag.IntVar(&o.queries, "queries", 1000, "B: vector store search queries")
	flag.IntVar(&o.k, "k", 50, "B: top-k of each search")

	flag.IntVar(&o.chatDocs, "chat-docs", 5, "C: documents published and vectorized in the chat site")
	flag.IntVar(&o.chatConc, "chat-concurrency", 20, "C: concurrent chats of the concurrent level (its rows carry the concurrent chat targets)")
	flag.StringVar(&o.chatCurve, "chat-curve", "100,200", "C: more concurrent levels, comma-separated (100 carries the first-token and response.created targets, 100 and 200 the lore / bare workflow ratio targets; empty: none)")
	flag.IntVar(&o.chatRounds, "chat-rounds", 5, "C: chats per client at the concurrent level")
	flag.IntVar(&o.chat1, "chat-single-rounds", 20, "C: chats at the single-chat level")
	flag.IntVar(&o.chatWarmup, "chat-warmup-rounds", 1, "C: unmeasured rounds at the first concurrent level before the measured levels (heap, connection pools, workflow cache and the Temporal server warm up)")
	flag.BoolVar(&o.chatBare, "chat-bare", true, "C: run the bare workflow of the chat turn's shape (the engine's own limit) at every concurrent level, beside Lore's")
	flag.DurationVar(&o.chatSteady, "chat-steady", time.Minute, "C: duration of each steady-load rate (Poisson arrivals at 25%, 50%, 75% of Lore's ceiling); 0: no steady load")
	flag.IntVar(&o.chatBurst, "chat-burst", 100, "C: turns started in the same instant after the steady load (a stress row; 0: none)")
	flag.StringVar(&o.chatProfile, "chat-profile", "", "C: directory for lore's CPU, mutex and block profiles (and the bench's own CPU profile) at the largest concurrent level (lore runs with LORE_PPROF_ADDR); empty: none")
	flag.DurationVar(&o.modelDelay, "model-delay", 200*time.Millisecond, "C: scripted model wait before its first chunk")
	flag.IntVar(&o.tokens, "model-tokens", 20, "C: answer tokens the scripted model streams")
	flag.Float64Var(&o.tps, "model-tps", 50, "C: scripted model tokens per second")

	flag.IntVar(&o.scaleDocs, "scale-docs", 100000, "S (-only scale100k): documents of the large site")
	flag.IntVar(&o.scaleBase, "scale-base", 1000, "S: documents of the reference site whose re-index rate the large one is held to")
	flag.IntVar(&o.scaleDocSize, "scale-doc-size", 1000, "S: approximate document size in bytes")
	flag.IntVar(&o.importRounds, "import-rounds", 5, "I: rounds per file set of the plain loop, the parallel loop and an import, alternating; the figures are their medians")
	flag.StringVar(&o.importSets, "import-sets", "", "I: run only the file sets whose name contains one of these comma-separated words (e.g. DOCX; empty: all)")
	flag.Parse()

	if o.quick {
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		quick := map[string]string{
			"docs": "1000", "duration": "2s", "warmup": "500ms", "corpus-min": "1000", "corpus-max": "100",
			"chunks": "10000", "queries": "200", "chat-docs": "3", "chat-rounds": "2", "chat-steady": "5s", "chat-single-rounds": "5",
			"scale-docs": "2000", "scale-base": "200", "import-rounds": "1",
		}
		for name, v := range quick {
			if !set[name] {
				_ = flag.Set(name, v)
			}
		}
	}
	if o.scale {
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		for name, v := range scaleDefaults {
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
	o.temporalServer, o.temporalSQL = abs(o.temporalServer), abs(o.temporalSQL)
	return o
}

// chatLevels are the concurrent chat levels: -chat-concurrency, then
// -chat-curve.
func (o *options) chatLevels() []int {
	levels := []int{o.chatConc}
	for _, f := range strings.Split(o.chatCurve, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 && n != o.chatConc {
			levels = append(levels, n)
		}
	}
	return levels
}

// scaleDefaults are the -scale sizes.
var scaleDefaults = map[string]string{
	"chunks": "1000000", "queries": "500", "temporal-pg": "true", "chat-curve": "50,100,200", "chat-rounds": "3",
	"ingest": "10000,100000,1000000", "only": "binary,api,vectorize,ingest,search,chat,reader,scale100k", "timeout": "60m",
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

	loreEnviron []string // lore serve's environment (the binary part starts more)
	lastJobs    []string // job ids of the last vectorizeViaAPI
	kind        backend  // the Temporal server of the current run
	temporalDB  string   // databases of the Temporal server on PostgreSQL (prefix)
	// temporalPprof is the PostgreSQL-backed server's pprof address.
	temporalPprof string
	// lorePprof is lore's pprof address (-chat-profile), empty: off.
	lorePprof string
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
	var err error
	if b.work, err = os.MkdirTemp("", "lorebench-"); err != nil {
		return err
	}
	logf("work directory %s", b.work)
	if !o.runs("binary") && !o.runs("api") && !o.runs("vectorize") && !o.runs("ingest") && !o.runs("import") && !o.runs("chat") && !o.runs("reader") && !o.runs("scale100k") {
		logf("only in-process parts: no database, Temporal server or lore started")
		return nil
	}
	if !o.temporalDev && !o.temporalPG {
		return errors.New("-temporal-dev=false needs -temporal-pg: there is no other Temporal server to run on")
	}
	need := []string{o.loreBin}
	if o.temporalDev {
		need = append(need, o.temporal)
	}
	for _, p := range need {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("%s not found: run `make build tools` first (or pass -lore / -temporal)", p)
		}
	}

	// Scripted model for part C; lore is configured with it from the start
	// (the chat settings do not touch parts A and B).
	if b.model, err = scripted.Start(o.modelDelay, o.tokens, o.tps); err != nil {
		return err
	}
	if !o.temporalDev {
		b.rep.suffix = " [" + backendPG.label() + "]"
		return b.startServers(ctx, backendPG)
	}
	return b.startServers(ctx, backendDev)
}

func (b *bench) runAll(ctx context.Context) error {
	type part struct {
		name string
		fn   func(context.Context) error
	}
	run := func(parts []part) error {
		for _, p := range parts {
			if !b.o.runs(p.name) {
				continue
			}
			t0 := time.Now()
			logf("== part %s on %s (load average %s)", p.name, b.kind.label(), env.LoadAvgNow())
			if err := p.fn(ctx); err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
			logf("== part %s done in %s", p.name, time.Since(t0).Round(100*time.Millisecond))
		}
		return nil
	}
	if b.kind == backendPG {
		return run([]part{{"vectorize", b.benchVectorize}, {"chat", b.benchChat}})
	}
	if err := run([]part{{"binary", b.benchBinary}, {"api", b.benchAPI}, {"vectorize", b.benchVectorize}, {"ingest", b.benchIngest}, {"import", b.benchImport}, {"search", b.benchSearch}, {"chat", b.benchChat}, {"reader", b.benchReader}, {"scale100k", b.benchScale}}); err != nil {
		return err
	}
	if !b.o.temporalPG || !(b.o.runs("vectorize") || b.o.runs("chat")) {
		return nil
	}
	// The same server parts against the production-shaped Temporal: a new
	// database and lore, the PostgreSQL-backed server.
	b.stopServers()
	if err := b.startServers(ctx, backendPG); err != nil {
		return fmt.Errorf("start on %s: %w", backendPG.label(), err)
	}
	b.rep.suffix = " [" + backendPG.label() + "]"
	return run([]part{{"vectorize", b.benchVectorize}, {"chat", b.benchChat}})
}

func (b *bench) teardown() {
	b.stopServers()
	if b.model != nil {
		b.model.Close()
	}
	if b.work != "" {
		if b.o.keep {
			logf("work directory kept: %s", b.work)
		} else if err := os.RemoveAll(b.work); err != nil {
			logf("remove %s: %v", b.work, err)
		}
	}
}
