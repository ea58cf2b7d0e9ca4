// Package telemetry gives Lore its operational signals in one place: Prometheus
// metrics (HTTP, Temporal workflows and activities, model calls, cache), OpenTelemetry
// tracing that follows a request from the API through Temporal into activities,
// and the trace/span ids the JSON logger attaches so logs and traces can be joined.
//
// Nothing here starts servers or reads configuration beyond the standard
// OTEL_* variables: the HTTP server mounts Metrics.Handler on /metrics and the
// worker adds the interceptors, so the package stays free of Lore's other packages.
package telemetry

import (
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Bucket layouts, in seconds. HTTP calls are mostly fast; model calls and
// activities (parsing, embedding whole documents) can take minutes, so their
// buckets reach further.
var (
	httpBuckets     = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	modelBuckets    = []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 20, 40, 80, 160}
	activityBuckets = []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
	workflowBuckets = []float64{.1, .5, 1, 5, 10, 30, 60, 300, 900, 1800, 3600, 4 * 3600}
)

// Outcome label values, shared by the activity and workflow counters so that
// dashboards can use one vocabulary.
const (
	OutcomeSuccess        = "success"          // activity returned without error
	OutcomeFailure        = "failure"          // activity returned an error or panicked
	OutcomeCanceled       = "canceled"         // activity or workflow was canceled
	OutcomePending        = "pending"          // activity will be completed asynchronously
	OutcomeCompleted      = "completed"        // workflow returned without error
	OutcomeFailed         = "failed"           // workflow returned an error
	OutcomeContinuedAsNew = "continued_as_new" // workflow continued as a new run
)

// Metrics owns Lore's Prometheus metrics. It uses a private registry instead of
// the global default one so that tests (and several instances in one process)
// never collide on registration, and /metrics shows exactly what Lore exports.
// A nil *Metrics is valid: every Observe method is then a no-op, so callers can
// run with metrics switched off without nil checks.
type Metrics struct {
	reg *prometheus.Registry

	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec

	activityTotal    *prometheus.CounterVec
	activityDuration *prometheus.HistogramVec
	workflowTotal    *prometheus.CounterVec
	workflowDuration *prometheus.HistogramVec

	modelDuration *prometheus.HistogramVec
	modelTokens   *prometheus.CounterVec
	modelErrors   *prometheus.CounterVec

	cache *cacheCollector
}

// counterVec is a counter family with its help text and label names.
func counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

// histogramVec is a histogram family with its buckets, help text and label
// names.
func histogramVec(name string, buckets []float64, help string, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
}

// New builds the registry with every Lore metric plus the Go runtime and
// process collectors (memory, goroutines, GC, open fds, CPU), which are what an
// operator looks at first when the service misbehaves.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		reg: reg,
		httpRequests: counterVec("lore_http_requests_total",
			"HTTP requests served, by method, route template and status code.", "method", "route", "status"),
		httpDuration: histogramVec("lore_http_request_duration_seconds", httpBuckets,
			"HTTP request latency, by method and route template.", "method", "route"),
		activityTotal: counterVec("lore_activity_total",
			"Temporal activity executions on this worker, by activity type and outcome.", "activity", "outcome"),
		activityDuration: histogramVec("lore_activity_duration_seconds", activityBuckets,
			"Temporal activity execution time on this worker, by activity type.", "activity"),
		workflowTotal: counterVec("lore_workflow_total",
			"Temporal workflow runs that closed on this worker (never counted during replay), by workflow type and outcome.", "workflow", "outcome"),
		workflowDuration: histogramVec("lore_workflow_duration_seconds", workflowBuckets,
			"Temporal workflow run time from start to close (workflow clock), by workflow type.", "workflow"),
		modelDuration: histogramVec("lore_model_request_duration_seconds", modelBuckets,
			"Latency of model calls, by kind (chat, embedding, rerank) and provider.", "kind", "provider"),
		modelTokens: counterVec("lore_model_tokens_total",
			"Tokens sent to (input) and received from (output) models, by kind and provider.", "kind", "provider", "direction"),
		modelErrors: counterVec("lore_model_errors_total",
			"Model calls that returned an error, by kind and provider.", "kind", "provider"),
		cache: &cacheCollector{
			hits: prometheus.NewDesc("lore_cache_hits_total",
				"Cache lookups that found a value.", nil, nil),
			misses: prometheus.NewDesc("lore_cache_misses_total",
				"Cache lookups that found nothing.", nil, nil),
		},
	}
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.httpRequests, m.httpDuration,
		m.activityTotal, m.activityDuration, m.workflowTotal, m.workflowDuration,
		m.modelDuration, m.modelTokens, m.modelErrors,
		m.cache,
	)
	return m
}

// Handler serves the registry in the Prometheus text format, for the /metrics
// route. Errors while gathering are counted in promhttp_metric_handler_errors_total
// and the remaining metrics are still served, so one broken collector does not
// blank the whole scrape.
func (m *Metrics) Handler() http.Handler {
	if m == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		Registry:      m.reg,
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// Registerer lets another package add its own collectors to the same /metrics
// output without reaching for the global registry. On a nil *Metrics it returns
// a throwaway registry, so registering is harmless when metrics are off.
func (m *Metrics) Registerer() prometheus.Registerer {
	if m == nil {
		return prometheus.NewRegistry()
	}
	return m.reg
}

// ObserveHTTP records one served request. route must be the route template
// (for example "/v1/documents/{id}"), never the raw path, so the number of
// series stays bounded; an empty route (no route matched, e.g. a 404) is
// recorded as "unmatched", and methods outside the standard set as "OTHER".
func (m *Metrics) ObserveHTTP(method, route string, status int, d time.Duration) {
	if m == nil {
		return
	}
	method = normMethod(method)
	if route == "" {
		route = "unmatched"
	}
	m.httpRequests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	m.httpDuration.WithLabelValues(method, route).Observe(d.Seconds())
}

// ObserveModel records one call to a chat, embedding or rerank model: its
// latency, the tokens it consumed and produced (zero or negative counts add
// nothing), and whether it failed. kind is "chat", "embedding" or "rerank";
// provider is the configured provider name (openai, cohere, local, ...).
// Latency is recorded for failed calls too, since slow failures (time-outs)
// are exactly what the histogram should show.
func (m *Metrics) ObserveModel(kind, provider string, d time.Duration, inputTokens, outputTokens int, err error) {
	if m == nil {
		return
	}
	if kind == "" {
		kind = "unknown"
	}
	if provider == "" {
		provider = "unknown"
	}
	m.modelDuration.WithLabelValues(kind, provider).Observe(d.Seconds())
	in := m.modelTokens.WithLabelValues(kind, provider, "input")
	out := m.modelTokens.WithLabelValues(kind, provider, "output")
	if inputTokens > 0 {
		in.Add(float64(inputTokens))
	}
	if outputTokens > 0 {
		out.Add(float64(outputTokens))
	}
	// Touch the error series even on success so rate(errors)/rate(requests)
	// has a zero to divide instead of a missing series.
	errs := m.modelErrors.WithLabelValues(kind, provider)
	if err != nil {
		errs.Inc()
	}
}

// RegisterCacheStats exports the cache's own cumulative hit and miss counts as
// lore_cache_hits_total and lore_cache_misses_total. The cache keeps the
// counts (it knows its hits); fn is read at scrape time, once per scrape for
// both values. Calling it again replaces fn, e.g. after the cache is rebuilt.
func (m *Metrics) RegisterCacheStats(fn func() (hits, misses int64)) {
	if m == nil {
		return
	}
	m.cache.mu.Lock()
	m.cache.fn = fn
	m.cache.mu.Unlock()
}

// cacheCollector reads hits and misses with a single call per scrape so the
// two counters are consistent with each other. Until RegisterCacheStats is
// called it exports nothing.
type cacheCollector struct {
	hits, misses *prometheus.Desc
	mu           sync.Mutex
	fn           func() (int64, int64)
}

func (c *cacheCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.hits
	ch <- c.misses
}

func (c *cacheCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	fn := c.fn
	c.mu.Unlock()
	if fn == nil {
		return
	}
	hits, misses := fn()
	ch <- prometheus.MustNewConstMetric(c.hits, prometheus.CounterValue, float64(hits))
	ch <- prometheus.MustNewConstMetric(c.misses, prometheus.CounterValue, float64(misses))
}

// normMethod bounds the method label: clients can send any token as a method.
func normMethod(m string) string {
	m = strings.ToUpper(m)
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "OTHER"
}
