package telemetry

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// scrape fetches /metrics through the real handler, as Prometheus would.
func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics status %d", resp.StatusCode)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// family returns the gathered metric family name, or nil.
func family(t *testing.T, m *Metrics, name string) *dto.MetricFamily {
	t.Helper()
	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf
		}
	}
	return nil
}

// sample finds the series of family name whose labels are exactly labels.
func sample(t *testing.T, m *Metrics, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	mf := family(t, m, name)
	if mf == nil {
		return nil
	}
next:
	for _, s := range mf.GetMetric() {
		if len(s.GetLabel()) != len(labels) {
			continue
		}
		for _, lp := range s.GetLabel() {
			if v, ok := labels[lp.GetName()]; !ok || v != lp.GetValue() {
				continue next
			}
		}
		return s
	}
	return nil
}

// counter returns the value of a counter series, failing when it is absent.
func counter(t *testing.T, m *Metrics, name string, labels map[string]string) float64 {
	t.Helper()
	s := sample(t, m, name, labels)
	if s == nil {
		t.Fatalf("no series %s%v", name, labels)
	}
	return s.GetCounter().GetValue()
}

func histCount(t *testing.T, m *Metrics, name string, labels map[string]string) (uint64, float64) {
	t.Helper()
	s := sample(t, m, name, labels)
	if s == nil {
		t.Fatalf("no series %s%v", name, labels)
	}
	return s.GetHistogram().GetSampleCount(), s.GetHistogram().GetSampleSum()
}

func TestHTTPMetricsInScrape(t *testing.T) {
	m := New()
	m.ObserveHTTP("GET", "/v1/documents/{id}", 200, 30*time.Millisecond)
	m.ObserveHTTP("get", "/v1/documents/{id}", 200, 70*time.Millisecond)
	m.ObserveHTTP("POST", "/v1/documents", 500, time.Second)
	m.ObserveHTTP("BREW", "", 404, time.Millisecond)

	out := scrape(t, m)
	for _, want := range []string{
		`lore_http_requests_total{method="GET",route="/v1/documents/{id}",status="200"} 2`,
		`lore_http_requests_total{method="POST",route="/v1/documents",status="500"} 1`,
		`lore_http_requests_total{method="OTHER",route="unmatched",status="404"} 1`,
		`lore_http_request_duration_seconds_count{method="GET",route="/v1/documents/{id}"} 2`,
		`lore_http_request_duration_seconds_sum{method="GET",route="/v1/documents/{id}"} 0.1`,
		`lore_http_request_duration_seconds_bucket{method="GET",route="/v1/documents/{id}",le="0.05"} 1`,
		`lore_http_request_duration_seconds_bucket{method="GET",route="/v1/documents/{id}",le="0.1"} 2`,
		"# TYPE lore_http_request_duration_seconds histogram",
		// runtime and process collectors are part of the same registry
		"go_goroutines ",
		"process_resident_memory_bytes ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(out, `method="BREW"`) || strings.Contains(out, `method="get"`) {
		t.Error("method label not normalised")
	}
}

func TestModelMetrics(t *testing.T) {
	m := New()
	m.ObserveModel("chat", "openai", 1500*time.Millisecond, 120, 30, nil)
	m.ObserveModel("chat", "openai", 500*time.Millisecond, 80, 0, errors.New("429 too many requests"))
	m.ObserveModel("embedding", "local", 20*time.Millisecond, 64, 0, nil)

	chat := map[string]string{"kind": "chat", "provider": "openai"}
	if n, sum := histCount(t, m, "lore_model_request_duration_seconds", chat); n != 2 || sum != 2 {
		t.Errorf("chat latency count=%d sum=%v, want 2 and 2s", n, sum)
	}
	if v := counter(t, m, "lore_model_tokens_total", map[string]string{"kind": "chat", "provider": "openai", "direction": "input"}); v != 200 {
		t.Errorf("chat input tokens = %v, want 200", v)
	}
	if v := counter(t, m, "lore_model_tokens_total", map[string]string{"kind": "chat", "provider": "openai", "direction": "output"}); v != 30 {
		t.Errorf("chat output tokens = %v, want 30", v)
	}
	if v := counter(t, m, "lore_model_errors_total", chat); v != 1 {
		t.Errorf("chat errors = %v, want 1", v)
	}
	// A provider that never failed still exports a zero error series.
	if v := counter(t, m, "lore_model_errors_total", map[string]string{"kind": "embedding", "provider": "local"}); v != 0 {
		t.Errorf("embedding errors = %v, want 0", v)
	}
	if v := counter(t, m, "lore_model_tokens_total", map[string]string{"kind": "embedding", "provider": "local", "direction": "input"}); v != 64 {
		t.Errorf("embedding input tokens = %v, want 64", v)
	}
}

func TestCacheStats(t *testing.T) {
	m := New()
	if family(t, m, "lore_cache_hits_total") != nil {
		t.Fatal("cache metrics exported before RegisterCacheStats")
	}
	calls := 0
	m.RegisterCacheStats(func() (int64, int64) { calls++; return 7, 3 })
	out := scrape(t, m)
	for _, want := range []string{
		"# TYPE lore_cache_hits_total counter", "lore_cache_hits_total 7",
		"# TYPE lore_cache_misses_total counter", "lore_cache_misses_total 3",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if calls != 1 {
		t.Errorf("stats function called %d times per scrape, want 1", calls)
	}
	// Registering again replaces the source instead of panicking on a
	// duplicate registration.
	m.RegisterCacheStats(func() (int64, int64) { return 10, 4 })
	if v := counter(t, m, "lore_cache_hits_total", nil); v != 10 {
		t.Errorf("hits after replace = %v, want 10", v)
	}
	if v := counter(t, m, "lore_cache_misses_total", nil); v != 4 {
		t.Errorf("misses after replace = %v, want 4", v)
	}
}

func TestNilMetricsIsNoop(t *testing.T) {
	var m *Metrics
	m.ObserveHTTP("GET", "/", 200, time.Millisecond)
	m.ObserveModel("chat", "openai", time.Second, 1, 1, nil)
	m.RegisterCacheStats(func() (int64, int64) { return 0, 0 })
	if m.TemporalInterceptor() == nil {
		t.Fatal("nil Metrics must still give a usable interceptor")
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("nil Metrics handler status %d, want 404", rec.Code)
	}
}
