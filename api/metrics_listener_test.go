package api

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/lorekb/lore/internal/telemetry"
)

// withMetrics rebuilds the harness's server with a metrics registry (the
// harness has none).
func withMetrics(h *harness) *harness {
	h.d.Metrics = telemetry.New()
	h.s = New(h.d)
	return h
}

func TestMetricsOnTheirOwnListener(t *testing.T) {
	// Default: the public API answers 404 for /metrics.
	h := withMetrics(newHarness(t, "sqlite", nil))
	h.do("GET", "/admin/api/v1/health", nil, "")
	if r := h.do("GET", "/metrics", nil, ""); r.Status != 404 || strings.Contains(string(r.Raw), "lore_http_requests_total") {
		t.Fatalf("default /metrics on the API: %d", r.Status)
	}
	// LORE_METRICS_PUBLIC without LORE_METRICS_ADDR: on the API address.
	h = withMetrics(newHarness(t, "sqlite", map[string]string{"LORE_METRICS_PUBLIC": "true"}))
	h.do("GET", "/admin/api/v1/health", nil, "")
	if r := h.do("GET", "/metrics", nil, ""); r.Status != 200 || !strings.Contains(string(r.Raw), "lore_http_requests_total") {
		t.Fatalf("LORE_METRICS_PUBLIC /metrics: %d", r.Status)
	}
	// LORE_METRICS_ADDR: the API answers 404 (LORE_METRICS_PUBLIC or not)
	// and the listener serves them.
	h = withMetrics(newHarness(t, "sqlite", map[string]string{"LORE_METRICS_ADDR": "127.0.0.1:0", "LORE_METRICS_PUBLIC": "true"}))
	h.do("GET", "/admin/api/v1/health", nil, "")
	if r := h.do("GET", "/metrics", nil, ""); r.Status != 404 {
		t.Fatalf("/metrics on the API with LORE_METRICS_ADDR: %d", r.Status)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := MetricsServer(h.d)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	res, err := http.Get("http://" + ln.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), `lore_http_requests_total`) {
		t.Fatalf("metrics listener: %d %.200s", res.StatusCode, body)
	}
	if res, err := http.Get("http://" + ln.Addr().String() + "/admin/api/v1/health"); err != nil || res.StatusCode != 404 {
		t.Fatalf("the metrics listener serves the API: %v %v", res, err)
	}
}
