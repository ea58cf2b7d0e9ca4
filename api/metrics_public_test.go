package api

import (
	"testing"

	"github.com/lorekb/lore/internal/config"
)

// TestMetricsOffThePublicListenerByDefault: the API listener serves
// /metrics only without LORE_METRICS_ADDR and with LORE_METRICS_PUBLIC.
func TestMetricsOffThePublicListenerByDefault(t *testing.T) {
	for _, c := range []struct {
		addr   string
		public bool
		want   bool
	}{{"", false, false}, {"", true, true}, {"127.0.0.1:9090", false, false}, {"127.0.0.1:9090", true, false}} {
		if got := metricsOnAPI(&config.Config{MetricsAddr: c.addr, MetricsPublic: c.public}); got != c.want {
			t.Errorf("LORE_METRICS_ADDR=%q LORE_METRICS_PUBLIC=%v: on the API %v, want %v", c.addr, c.public, got, c.want)
		}
	}
}
