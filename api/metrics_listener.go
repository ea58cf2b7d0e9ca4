package api

import (
	"net/http"
	"time"

	"github.com/lorekb/lore/internal/config"
	"github.com/lorekb/lore/internal/deps"
)

// MetricsServer is the listener of LORE_METRICS_ADDR: /metrics alone, so a
// deployment can keep its metrics off the public API address (the API then
// answers 404 for /metrics). Worker-only processes serve their activity and
// workflow metrics on it too.
func MetricsServer(d *deps.Deps) *http.Server {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", d.Metrics.Handler())
	return &http.Server{Addr: d.Cfg.MetricsAddr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
}

// metricsOnAPI reports whether the public API listener serves /metrics:
// only when no metrics listener is configured (LORE_METRICS_ADDR) and
// LORE_METRICS_PUBLIC allows it. The metrics name every route, status and
// workflow outcome with their counts, which is not for any caller of the
// public address, so by default it answers 404 for them.
func metricsOnAPI(cfg *config.Config) bool { return cfg.MetricsAddr == "" && cfg.MetricsPublic }
