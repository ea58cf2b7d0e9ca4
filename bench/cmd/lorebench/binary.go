package main

import (
	"context"
	"debug/elf"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/lorekb/lore/bench/internal/env"
	"github.com/lorekb/lore/bench/internal/load"
)

// benchBinary reports the lore binary's size (and, for comparison, a build
// of the same tree without the release flags) and its cold start: exec of
// `lore version` (process start and package initialisation) and `lore serve`
// from exec until GET /health is healthy (database and Temporal connected,
// worker registered), with its resident memory then.
func (b *bench) benchBinary(ctx context.Context) error {
	o := b.o
	st, err := os.Stat(o.loreBin)
	if err != nil {
		return err
	}
	stripped := "stripped: no symbol table"
	if f, err := elf.Open(o.loreBin); err == nil {
		if f.Section(".symtab") != nil || f.Section(".debug_info") != nil {
			stripped = "has a symbol table or DWARF: not a release build"
		}
		f.Close()
	}
	plain := filepath.Join(b.work, "lore-default-flags")
	var plainSize int64
	t0 := time.Now()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", plain, ".")
	cmd.Dir = o.root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		logf("binary: default build failed (%v): %s", err, strings.TrimSpace(string(out)))
	} else if pst, err := os.Stat(plain); err == nil {
		plainSize = pst.Size()
	}
	logf("binary: %s %.1f MB (%s); default go build %.1f MB (built in %s)", o.loreBin, mb(st.Size()), stripped, mb(plainSize), time.Since(t0).Round(time.Second))

	// lore version, 20 times.
	var ver load.Latencies
	for i := 0; i < 20; i++ {
		t := time.Now()
		c := exec.CommandContext(ctx, o.loreBin, "version")
		c.Env = env.FilteredEnviron()
		if out, err := c.CombinedOutput(); err != nil {
			return fmt.Errorf("lore version: %v: %s", err, out)
		}
		ver = append(ver, time.Since(t))
	}
	ver.Sort()

	// lore serve from exec to healthy, 5 times, each on its own port and
	// task queue and data directory (so it takes no work and no lock from
	// the measured lore).
	var ready load.Latencies
	var rss []string
	hc := &http.Client{Timeout: 2 * time.Second}
	defer hc.CloseIdleConnections()
	for i := 0; i < 5; i++ {
		port, err := env.FreePort()
		if err != nil {
			return err
		}
		environ := append(append([]string(nil), b.loreEnviron...),
			fmt.Sprintf("LORE_HTTP_ADDR=127.0.0.1:%d", port), fmt.Sprintf("TEMPORAL_TASK_QUEUE=lorebench-coldstart-%d", i),
			"LORE_DATA_DIR="+filepath.Join(b.work, fmt.Sprintf("coldstart-data-%d", i)))
		t := time.Now()
		p, err := env.Start(fmt.Sprintf("lore-coldstart-%d", i), b.work, o.loreBin, []string{"serve"}, environ)
		if err != nil {
			return err
		}
		url := fmt.Sprintf("http://127.0.0.1:%d/health", port)
		var d time.Duration
		for {
			if ended, err := p.Exited(); ended {
				return fmt.Errorf("cold-start lore exited (%v):\n%s", err, p.Tail(20))
			}
			if res, err := hc.Get(url); err == nil {
				res.Body.Close()
				if res.StatusCode == 200 {
					d = time.Since(t)
					break
				}
			}
			if time.Since(t) > 60*time.Second {
				p.Stop(5 * time.Second)
				return fmt.Errorf("cold-start lore not healthy after 60s:\n%s", p.Tail(20))
			}
			time.Sleep(5 * time.Millisecond)
		}
		ready = append(ready, d)
		rss = append(rss, procStatus(p.Pid(), "VmRSS"))
		hc.CloseIdleConnections()
		p.Stop(10 * time.Second)
	}
	ready.Sort()
	logf("binary: lore version p50 %s; lore serve to healthy p50 %s (max %s)", ms(ver.Percentile(50)), ms(ready.Percentile(50)), ms(ready.Percentile(100)))

	s := b.rep.section("Binary and cold start", "Figure", "Value")
	s.row("bin/lore size (make build: -trimpath -ldflags \"-s -w\")", fmt.Sprintf("%.1f MB (%s)", mb(st.Size()), stripped))
	if plainSize > 0 {
		s.row("same tree, plain `go build` (for comparison)", fmt.Sprintf("%.1f MB (release is %.0f%% of it)", mb(plainSize), 100*float64(st.Size())/float64(plainSize)))
	}
	s.row("`lore version`: exec to exit, 20 runs", fmt.Sprintf("p50 %s, max %s", ms(ver.Percentile(50)), ms(ver.Percentile(100))))
	s.row("`lore serve`: exec to GET /health healthy (PostgreSQL, Temporal, worker), 5 runs", fmt.Sprintf("p50 %s, max %s", ms(ready.Percentile(50)), ms(ready.Percentile(100))))
	s.row("`lore serve` resident memory when healthy", strings.Join(rss, ", "))
	s.note("Cold starts run beside the measured lore on their own port, task queue and data directory (an empty embedded vector store), against the same database (already migrated) and Temporal server; /health polled every 5 ms.")
	b.rep.check(check{part: "Bin", target: "release binary without symbol table (-s -w)", figure: fmt.Sprintf("%.1f MB", mb(st.Size())),
		ceiling: fmt.Sprintf("%.1f MB (plain go build)", mb(plainSize)), pass: !strings.HasPrefix(stripped, "has")})
	return nil
}

func mb(n int64) float64 { return float64(n) / 1e6 }
