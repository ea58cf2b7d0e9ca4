// Command lore is the one binary of Lore: `lore serve` runs the API (and, by
// default, the Temporal worker in the same process), `lore worker` runs the
// worker alone, `lore migrate` applies database migrations.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	_ "net/http/pprof" // served only when LORE_PPROF_ADDR is set
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/lorekb/lore/api"
	"github.com/lorekb/lore/internal/config"
	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/internal/gctune"
	"github.com/lorekb/lore/internal/telemetry"
	"github.com/lorekb/lore/worker"
)

const usage = `usage: lore <command>

commands:
  serve     run the HTTP API (and the Temporal worker unless LORE_RUN_WORKER=false)
  worker    run the Temporal worker only
  migrate   apply database migrations and exit
  version   print the version
` + operatorUsage

// GC settings unless the environment sets GOGC: request handling allocates
// fast against a small live heap, and with the runtime's default (100) the
// collector runs several times a second under load, its pauses and assists
// landing in the latency tail. So lore starts at gcPercentCeiling (peak ≈ 5×
// live). But the embedded vector store holds every chunk in memory, and 5×
// its heap got lore OOM-killed at 17 GB with 1.1M chunks (issue 17): package
// gctune lowers the percentage as the live heap grows so the headroom stays
// about gcHeadroom bytes, down to gcPercentFloor.
const (
	gcPercentCeiling = 400
	gcPercentFloor   = 50
	gcHeadroom       = 1 << 30
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	if os.Getenv("GOGC") == "" {
		gctune.Tune(context.Background(), gcHeadroom, gcPercentFloor, gcPercentCeiling, time.Second)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "serve":
		err = run(ctx, true)
	case "worker":
		err = run(ctx, false)
	case "migrate":
		err = migrate(ctx)
	case "version":
		fmt.Println("lore", api.BuildVersion())
	case "temporal", "users":
		err = operate(ctx)
	default:
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "lore:", err)
		os.Exit(1)
	}
}

func migrate(ctx context.Context) error {
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	d, err := deps.Open(ctx, withoutTemporal(cfg), deps.NewLogger(cfg))
	if err != nil {
		return err
	}
	defer d.Close()
	fmt.Println("migrations applied")
	return nil
}

// operate runs an operator command (opscli.go).
func operate(ctx context.Context) error {
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	err = runOperator(ctx, cfg, os.Args[1:], os.Stdin, os.Stdout)
	if errors.Is(err, errUsage) {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	return err
}

func withoutTemporal(cfg *config.Config) *config.Config {
	c := *cfg
	c.TemporalAddr = "none"
	return &c
}

func run(ctx context.Context, serveHTTP bool) error {
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	log := deps.NewLogger(cfg)
	slog.SetDefault(log)
	shutdownTracing, err := telemetry.SetupTracing(ctx, "lore")
	if err != nil {
		return err
	}
	defer shutdownTracing(context.Background()) //nolint:errcheck
	d, err := deps.Open(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer d.Close()
	log.Info("embeddings", d.DescribeEmbedders()...)
	if err := api.Bootstrap(ctx, d, os.Stdout); err != nil {
		return err
	}
	api.EnsureSearchAttributes(ctx, d)
	errc := make(chan error, 3)
	if cfg.PprofAddr != "" {
		// Where goroutines wait (locks, channels, I/O) is what a
		// profile of a serialized load needs; sampled, and only with the
		// profiler on: one contention event in 10, blocking over 100 µs.
		runtime.SetMutexProfileFraction(10)
		runtime.SetBlockProfileRate(100_000)
		go func() {
			// net/http/pprof registers on the default mux; nothing else uses it.
			log.Warn("pprof server stopped", "err", http.ListenAndServe(cfg.PprofAddr, nil)) //nolint:gosec // operator-only, off by default
		}()
	}
	if cfg.MetricsAddr != "" {
		ms := api.MetricsServer(d)
		go func() { errc <- ms.ListenAndServe() }()
		defer ms.Close() //nolint:errcheck
	}
	var w *worker.Worker
	if !serveHTTP || cfg.RunWorker {
		if d.Temporal == nil {
			if !serveHTTP {
				return errors.New("worker: TEMPORAL_ADDRESS is not set")
			}
		} else {
			w, err = worker.New(ctx, d)
			if err != nil {
				return err
			}
			go func() { errc <- w.Run() }()
			defer w.Stop()
		}
	}
	var srv *api.Server
	if serveHTTP {
		srv = api.New(d)
		go func() { errc <- srv.Listen(cfg.HTTPAddr) }()
		base := "http://127.0.0.1" + cfg.HTTPAddr
		if !strings.HasPrefix(cfg.HTTPAddr, ":") {
			base = "http://" + cfg.HTTPAddr
		}
		fmt.Printf("\nLore is running\n  Reader:      %s/\n  Console:     %s/admin\n  Client API:  %s/v1\n  Admin API:   %s/admin/api/v1\n  API docs:    %s/docs\n",
			base, base, base, base, base)
		if d.Temporal != nil {
			fmt.Printf("  Temporal UI: %s\n", cfg.TemporalUI)
		}
		fmt.Println()
	}
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	if srv != nil {
		_ = srv.Shutdown()
	}
	return err
}
