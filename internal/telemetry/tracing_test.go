package telemetry

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// These tests replace the global tracer provider, so none of them runs in
// parallel.

func TestSetupTracingWithoutEndpoint(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	shutdown, err := SetupTracing(context.Background(), "lore-test")
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(context.Background())

	if LogAttrs(context.Background()) != nil {
		t.Error("LogAttrs without a span must add nothing")
	}

	ctx, end := HTTPMiddlewareSpan(context.Background(), "GET", "/v1/documents/{id}")
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() || !sc.IsSampled() {
		t.Fatalf("span context %+v, want a valid sampled one", sc)
	}
	attrs := LogAttrs(ctx)
	want := []any{"trace_id", sc.TraceID().String(), "span_id", sc.SpanID().String()}
	if len(attrs) != 4 || attrs[0] != want[0] || attrs[1] != want[1] || attrs[2] != want[2] || attrs[3] != want[3] {
		t.Errorf("LogAttrs = %v, want %v", attrs, want)
	}
	if len(sc.TraceID().String()) != 32 || len(sc.SpanID().String()) != 16 {
		t.Errorf("ids %s/%s are not W3C-sized", sc.TraceID(), sc.SpanID())
	}
	end(200)
	end(200) // ending twice is harmless

	// The W3C propagator is installed: what one process injects, the next extracts.
	carrier := propagation.MapCarrier{}
	otel.GetTextMapPropagator().Inject(ctx, carrier)
	if !strings.HasPrefix(carrier["traceparent"], "00-"+sc.TraceID().String()+"-") {
		t.Errorf("traceparent %q does not carry the trace id", carrier["traceparent"])
	}
}

func TestExtractContinuesRemoteTrace(t *testing.T) {
	exp := installRecorder(t)
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	ctx := Extract(context.Background(), map[string]string{
		"Traceparent": "00-" + traceID + "-" + parentID + "-01", // mixed case, as some frameworks pass it
	})
	ctx, end := HTTPMiddlewareSpan(ctx, "post", "/v1/chat")
	sc := trace.SpanContextFromContext(ctx)
	if sc.TraceID().String() != traceID {
		t.Fatalf("trace id %s, want the caller's %s", sc.TraceID(), traceID)
	}
	end(503)

	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans recorded, want 1", len(spans))
	}
	s := spans[0]
	if s.Name != "POST /v1/chat" || s.SpanKind != trace.SpanKindServer {
		t.Errorf("span %q kind %v", s.Name, s.SpanKind)
	}
	if s.Parent.SpanID().String() != parentID || !s.Parent.IsRemote() {
		t.Errorf("parent %v, want remote %s", s.Parent.SpanID(), parentID)
	}
	if s.Status.Code != codes.Error {
		t.Errorf("status %v, want error for a 503", s.Status.Code)
	}
	got := map[string]string{}
	for _, kv := range s.Attributes {
		got[string(kv.Key)] = kv.Value.String()
	}
	for k, v := range map[string]string{"http.request.method": "POST", "http.route": "/v1/chat", "http.response.status_code": "503"} {
		if got[k] != v {
			t.Errorf("attribute %s = %q, want %q", k, got[k], v)
		}
	}

	// Garbage headers start a fresh trace instead of failing.
	ctx, end = HTTPMiddlewareSpan(Extract(context.Background(), map[string]string{"traceparent": "nonsense"}), "GET", "")
	if sc := trace.SpanContextFromContext(ctx); !sc.IsValid() || sc.TraceID().String() == traceID {
		t.Errorf("bad traceparent gave %+v", sc)
	}
	end(404)
	if last := exp.GetSpans()[1]; last.Status.Code == codes.Error || last.Name != "GET" {
		t.Errorf("404 span %q has status %v; client errors are not span errors", last.Name, last.Status.Code)
	}
}

// TestSetupTracingExportsOTLP points the exporter at a local OTLP/HTTP
// receiver and checks that spans reach it when shutdown flushes them.
func TestSetupTracingExportsOTLP(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	var bodies int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		paths = append(paths, r.URL.Path)
		if len(b) > 0 && r.Header.Get("Content-Type") == "application/x-protobuf" {
			bodies++
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)

	shutdown, err := SetupTracing(context.Background(), "lore-test")
	if err != nil {
		t.Fatal(err)
	}
	_, end := HTTPMiddlewareSpan(context.Background(), "GET", "/health")
	end(200)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if bodies == 0 || paths[0] != "/v1/traces" {
		t.Fatalf("collector got paths %v with %d protobuf bodies; want a POST to /v1/traces", paths, bodies)
	}
}

// TestTemporalTracingConnectsWorkflowAndActivity runs a workflow with the
// tracing interceptor and checks that the workflow and activity spans belong
// to one trace, with the activity under the workflow.
func TestTemporalTracingConnectsWorkflowAndActivity(t *testing.T) {
	exp := installRecorder(t)
	ti, err := TemporalTracingInterceptor()
	if err != nil {
		t.Fatal(err)
	}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{ti}})
	env.RegisterActivityWithOptions(greet, activity.RegisterOptions{Name: "Greet"})
	env.RegisterWorkflowWithOptions(greetWorkflow, workflow.RegisterOptions{Name: "Greeting"})
	env.ExecuteWorkflow("Greeting", "ada")
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}

	byName := map[string]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		byName[s.Name] = s
	}
	wf, ok1 := byName["RunWorkflow:Greeting"]
	start, ok2 := byName["StartActivity:Greet"]
	act, ok3 := byName["RunActivity:Greet"]
	if !ok1 || !ok2 || !ok3 {
		t.Fatalf("spans recorded: %v", keys(byName))
	}
	tid := wf.SpanContext.TraceID()
	if start.SpanContext.TraceID() != tid || act.SpanContext.TraceID() != tid {
		t.Error("workflow and activity spans are in different traces")
	}
	if start.Parent.SpanID() != wf.SpanContext.SpanID() || act.Parent.SpanID() != start.SpanContext.SpanID() {
		t.Error("activity spans are not children of the workflow span")
	}
}

// installRecorder makes the global provider record spans in memory and
// restores the previous provider afterwards.
func installRecorder(t *testing.T) *tracetest.InMemoryExporter {
	t.Helper()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	if _, err := SetupTracing(context.Background(), "lore-test"); err != nil { // installs the propagator
		t.Fatal(err)
	}
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() {
		otel.SetTracerProvider(prev)
		_ = tp.Shutdown(context.Background())
	})
	return exp
}

func keys(m map[string]tracetest.SpanStub) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
