package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/lorekb/lore/bench/internal/env"
	"github.com/lorekb/lore/workflows"
)

// backend is the Temporal server a run of the server parts uses.
type backend string

const (
	// backendDev is the Temporal CLI's dev server (SQLite in memory, one
	// process), what `make run` and the tests use.
	backendDev backend = "dev"
	// backendPG is the real Temporal server on PostgreSQL, started by
	// bench/temporal/start.sh: the shape of a production cluster.
	backendPG backend = "pg"
)

func (k backend) label() string {
	if k == backendPG {
		return "Temporal server v1.32 on PostgreSQL"
	}
	return "Temporal dev server, in memory"
}

// startServers creates a scratch database and starts Temporal (kind) and
// lore serve on it, then logs in.
func (b *bench) startServers(ctx context.Context, kind backend) error {
	o := b.o
	var err error
	b.kind = kind
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

	if err := b.startTemporal(ctx, kind); err != nil {
		return err
	}
	taddr := b.taddr

	hport, err := env.FreePort()
	if err != nil {
		return err
	}
	b.base = fmt.Sprintf("http://127.0.0.1:%d", hport)
	secret := make([]byte, 24)
	_, _ = rand.Read(secret)
	const email, password = "bench@lore.local", "bench-password-123"
	data := filepath.Join(b.work, "data-"+string(kind))
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
		// The load comes from one address: the public chat limits stay out of the way.
		"LORE_CHAT_RATE_PER_IP=1000000", "LORE_CHAT_RATE_PER_SITE=1000000", "LORE_CHAT_DAILY_TOKEN_BUDGET=0",
		"CHAT_PROVIDER=openai",
		"CHAT_BASE_URL="+b.model.BaseURL(),
		"CHAT_MODEL=scripted",
		"CHAT_API_KEY=bench",
	)
	if b.lorePprof = ""; o.chatProfile != "" {
		pp, err := env.FreePort()
		if err != nil {
			return err
		}
		b.lorePprof = fmt.Sprintf("127.0.0.1:%d", pp)
		environ = append(environ, "LORE_PPROF_ADDR="+b.lorePprof)
	}
	environ = append(environ, o.loreEnv...)
	b.loreEnviron = environ
	envText := fmt.Sprintf("DATABASE_URL=<scratch database %s> LORE_DATA_DIR=<temp dir> TEMPORAL_ADDRESS=%s (%s) TEMPORAL_TASK_QUEUE=lorebench LORE_HTTP_ADDR=127.0.0.1:<free port> LORE_LOG_LEVEL=warn CHAT_PROVIDER=openai CHAT_BASE_URL=<scripted model>/v1 CHAT_MODEL=scripted%s; everything else at its default",
		b.db.Name, taddr, kind.label(), strings.TrimRight(" "+strings.Join(o.loreEnv, " "), " "))
	if b.rep.loreEnv == "" {
		b.rep.loreEnv = envText
	} else {
		b.rep.loreEnv += "; for the parts marked [" + kind.label() + "]: " + envText
	}
	if b.lore, err = env.Start("lore-"+string(kind), b.work, o.loreBin, []string{"serve"}, environ); err != nil {
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
	return b.api.Login(ctx, email, password)
}

// startTemporal starts the Temporal server of kind and sets b.taddr.
func (b *bench) startTemporal(ctx context.Context, kind backend) error {
	o := b.o
	tport, err := env.FreePort()
	if err != nil {
		return err
	}
	taddr := fmt.Sprintf("127.0.0.1:%d", tport)
	b.taddr = taddr
	b.temporalPprof = ""
	if kind == backendPG {
		return b.startTemporalPG(ctx)
	}
	// Temporal dev server, in memory.
	uport, err := env.FreePort()
	if err != nil {
		return err
	}
	b.temporal, err = env.Start("temporal", b.work, o.temporal, append([]string{"server", "start-dev", "--headless", "--ip", "127.0.0.1",
		"--port", env.Itoa(tport), "--ui-port", env.Itoa(uport), "--log-level", "error"}, workflows.DevServerArgs()...), env.FilteredEnviron())
	if err != nil {
		return err
	}
	if err := b.temporal.WaitTCP(ctx, taddr, 90*time.Second); err != nil {
		return err
	}
	logf("temporal dev server on %s (pid %d)", taddr, b.temporal.Pid())
	return nil
}

// startTemporalPG runs bench/temporal/start.sh: databases and schema by the
// server's own SQL tool, the server, the namespace.
func (b *bench) startTemporalPG(ctx context.Context) error {
	o := b.o
	for _, p := range []string{o.temporalServer, o.temporalSQL} {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("%s not found: run `make tools-temporal-server` first", p)
		}
	}
	base, err := freeRange(10)
	if err != nil {
		return err
	}
	tport := base + 9 // the frontend too, under 32768
	b.taddr = fmt.Sprintf("127.0.0.1:%d", tport)
	host, port, user, pass := env.PGParts(o.pgURL)
	b.temporalDB = fmt.Sprintf("lorebench_temporal_%d", time.Now().UnixNano()%1_000_000_000)
	environ := append(env.FilteredEnviron(),
		"TEMPORAL_SERVER_BIN="+o.temporalServer, "TEMPORAL_SQL_BIN="+o.temporalSQL,
		"PGHOST="+host, "PGPORT="+port, "PGUSER="+user, "PGPASSWORD="+pass,
		"TEMPORAL_DB="+b.temporalDB, fmt.Sprintf("TEMPORAL_PORT=%d", tport), fmt.Sprintf("PORT_BASE=%d", base),
		fmt.Sprintf("TEMPORAL_SHARDS=%d", o.temporalShards))
	t0 := time.Now()
	b.temporal, err = env.Start("temporal-pg", b.work, filepath.Join(o.root, "bench/temporal/start.sh"),
		[]string{filepath.Join(b.work, "temporal-pg")}, environ)
	if err != nil {
		return err
	}
	b.temporalPprof = fmt.Sprintf("127.0.0.1:%d", base+8)
	err = b.temporal.WaitFor(ctx, 180*time.Second, "temporal-pg ready", func(context.Context) error {
		if strings.Contains(b.temporal.Tail(200), "temporal-pg ready") {
			return nil
		}
		return fmt.Errorf("not ready")
	})
	if err != nil {
		return err
	}
	// The namespace and Lore's search attributes, as an operator does once
	// per cluster; the frontend listens a little before it serves.
	for wait := time.Now().Add(90 * time.Second); ; {
		cmd := exec.CommandContext(ctx, o.loreBin, "temporal", "setup")
		cmd.Env = append(env.FilteredEnviron(), "TEMPORAL_ADDRESS="+b.taddr, "TEMPORAL_NAMESPACE=default", "DATABASE_URL="+b.db.DSN, "LORE_DATA_DIR="+filepath.Join(b.work, "temporal-setup-data"))
		out, err := cmd.CombinedOutput()
		if err == nil {
			break
		}
		if time.Now().After(wait) || ctx.Err() != nil {
			return fmt.Errorf("lore temporal setup: %v: %s", err, out)
		}
		time.Sleep(time.Second)
	}
	logf("temporal server on PostgreSQL (databases %s, %s_visibility; %d shards) on %s after %s (pid %d)",
		b.temporalDB, b.temporalDB, o.temporalShards, b.taddr, time.Since(t0).Round(100*time.Millisecond), b.temporal.Pid())
	return nil
}

// freeRange finds n consecutive free TCP ports on 127.0.0.1 below 32768:
// the server stores its membership ports in a PostgreSQL smallint.
func freeRange(n int) (int, error) {
	for try := 0; try < 200; try++ {
		p := 20000 + mrand.IntN(32000-20000-n)
		ok := true
		for i := 0; i < n && ok; i++ {
			ok = env.PortFree(p + i)
		}
		if ok {
			return p, nil
		}
	}
	return 0, fmt.Errorf("no %d consecutive free ports under 32768", n)
}

// stopServers stops lore and Temporal and drops their databases.
func (b *bench) stopServers() {
	// Idle keep-alive connections would hold up lore's graceful shutdown.
	if b.api != nil {
		b.api.HTTP.CloseIdleConnections()
	}
	http.DefaultClient.CloseIdleConnections()
	if b.lore != nil {
		b.lore.Stop(20 * time.Second)
		b.lore = nil
		logf("lore stopped")
	}
	if b.temporal != nil {
		b.temporal.Stop(15 * time.Second)
		b.temporal = nil
		logf("temporal stopped")
	}
	if b.pool != nil {
		b.pool.Close()
		b.pool = nil
	}
	if b.db != nil {
		if err := b.db.Drop(); err != nil {
			logf("drop database %s: %v (drop it by hand)", b.db.Name, err)
		} else {
			logf("database %s dropped", b.db.Name)
		}
		b.db = nil
	}
	if b.temporalDB != "" {
		for _, name := range []string{b.temporalDB, b.temporalDB + "_visibility"} {
			if err := env.DropDB(b.o.pgURL, name); err != nil {
				logf("drop database %s: %v (drop it by hand)", name, err)
			}
		}
		b.temporalDB = ""
	}
}
