// Package deps is the one place that reads the configuration and picks the
// implementation of every capability (embedded default or production engine).
package deps

import (
	"context"
	"fmt"
	"github.com/lorekb/lore/internal/embed/learned"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/lorekb/lore/internal/blob"
	"github.com/lorekb/lore/internal/cache"
	"github.com/lorekb/lore/internal/cache/memory"
	rediscache "github.com/lorekb/lore/internal/cache/redis"
	"github.com/lorekb/lore/internal/config"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/memo"
	"github.com/lorekb/lore/internal/netguard"
	"github.com/lorekb/lore/internal/streamhub"
	"github.com/lorekb/lore/internal/telemetry"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/workflow"
)

// Deps holds the shared handles of one process.
type Deps struct {
	Cfg      *config.Config
	Log      *slog.Logger
	DB       *db.DB
	Cache    cache.Cache
	Temporal client.Client // nil when TEMPORAL_ADDRESS=none
	Blob     blob.Store
	Metrics  *telemetry.Metrics
	// Hub is this process's chat stream hub, shared by its API and its
	// worker (see streamhub): built once here, passed to both.
	Hub     *streamhub.Hub
	closeMu sync.Mutex // guards closers: stores register theirs as they open
	closers []func()
	models  modelCache
	vectors vectorStores
	// aiConfigs holds each tenant's ai-config briefly (see AIConfig).
	aiConfigs memo.TTL[int64, AIConfig]
	// guard and guardClient: see Guard (built once, on first use).
	guardOnce   sync.Once
	guard       *netguard.Policy
	guardClient *http.Client
}

// NewLogger returns the structured JSON logger of the process.
func NewLogger(cfg *config.Config) *slog.Logger {
	lvl := slog.LevelInfo
	_ = lvl.UnmarshalText([]byte(cfg.LogLevel))
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
}

// Open connects the database (and migrates it), the cache and Temporal.
func Open(ctx context.Context, cfg *config.Config, log *slog.Logger) (*Deps, error) {
	d := &Deps{Cfg: cfg, Log: log, Metrics: telemetry.New(), Hub: streamhub.New(2 * time.Minute)}
	d.aiConfigs = memo.TTL[int64, AIConfig]{Keep: aiConfigTTL, Max: 10000}
	dsn := cfg.DatabaseURL
	if dsn == "" {
		dsn = cfg.SQLitePath()
		if err := privateFile(dsn); err != nil {
			return nil, err
		}
	}
	database, err := db.Open(ctx, dsn)
	if err != nil {
		return nil, err
	}
	d.DB = database
	database.OnChange(d.forgetConfigs)
	d.closers = append(d.closers, func() { _ = database.Close() })
	if err := database.Migrate(ctx); err != nil {
		d.Close()
		return nil, err
	}
	if err := SealSecrets(ctx, database, cfg, log); err != nil {
		d.Close()
		return nil, err
	}
	if cfg.RedisURL != "" {
		c, err := rediscache.Open(cfg.RedisURL, "lore:")
		if err != nil {
			d.Close()
			return nil, fmt.Errorf("redis: %w", err)
		}
		d.Cache = c
	} else {
		d.Cache = memory.New(cfg.CacheMaxSize)
	}
	if d.Blob, err = OpenBlob(ctx, cfg); err != nil {
		d.Close()
		return nil, err
	}
	cache := d.Cache
	d.Metrics.RegisterCacheStats(func() (int64, int64) {
		st, _ := cache.Stats(context.Background())
		return st.Hits, st.Misses
	})
	if cfg.TemporalEnabled() {
		// The tracing interceptor on the client carries API → workflow →
		// activity spans; workers built from this client inherit it.
		tracing, err := telemetry.TemporalTracingInterceptor()
		if err != nil {
			d.Close()
			return nil, err
		}
		tc, err := client.Dial(client.Options{
			HostPort:     cfg.TemporalAddr,
			Namespace:    cfg.TemporalNS,
			Logger:       newTemporalLogger(log),
			Interceptors: []interceptor.ClientInterceptor{tracing},
			// Workflows and their activities log the id of the request that
			// started them.
			ContextPropagators: []workflow.ContextPropagator{telemetry.RequestIDPropagator()},
			ConnectionOptions:  client.ConnectionOptions{GrpcCompression: grpcCompression(cfg.TemporalGzip)},
		})
		if err != nil {
			d.Close()
			return nil, fmt.Errorf("temporal: %w", err)
		}
		d.Temporal = tc
		d.closers = append(d.closers, tc.Close)
	}
	if m := d.DefaultAIConfig().Embedding; (m.Provider == "" || m.Provider == "local") && !HashingOnly(m.Model) {
		// Decode the learned model now, not inside the first model lookup
		// (which would hold the model cache for it).
		if _, err := learned.English(); err != nil {
			return nil, fmt.Errorf("the embedded learned model: %w", err)
		}
	}
	return d, nil
}

// Close releases everything Open acquired, in reverse order.
func (d *Deps) Close() {
	d.closeMu.Lock()
	closers := d.closers
	d.closers = nil
	d.closeMu.Unlock()
	for i := len(closers) - 1; i >= 0; i-- {
		closers[i]()
	}
}

// OnClose registers a release function run by Close.
func (d *Deps) OnClose(f func()) {
	d.closeMu.Lock()
	defer d.closeMu.Unlock()
	d.closers = append(d.closers, f)
}

// grpcCompression is gzip only when asked for (see TEMPORAL_GRPC_GZIP).
func grpcCompression(gzip bool) client.GrpcCompression {
	if gzip {
		return &client.GrpcCompressionGzip{}
	}
	return &client.GrpcCompressionNone{}
}
