package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
)

// tracerName identifies the spans this package starts itself (HTTP server spans).
const tracerName = "github.com/lorekb/lore/internal/telemetry"

// SetupTracing installs the process-wide OpenTelemetry tracer provider and the
// W3C propagators (trace context and baggage), so every library that uses the
// global otel API (the Temporal interceptor, HTTP spans) joins the same traces.
//
// When OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is
// set, spans are batched and sent over OTLP/HTTP; the exporter reads the other
// standard OTEL_EXPORTER_OTLP_* variables (headers, timeout, insecure) itself.
// Otherwise spans are neither recorded nor exported (idTracerProvider): they
// still carry trace and span ids, so logs (see LogAttrs) and the traceparent
// handed to Temporal stay correlated even without a collector. OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES override serviceName and add resource attributes.
//
// Call shutdown on exit: it flushes buffered spans within ctx's deadline.
func SetupTracing(ctx context.Context, serviceName string) (shutdown func(context.Context) error, err error) {
	res, err := resource.New(ctx,
		resource.WithTelemetrySDK(),
		resource.WithHost(),
		resource.WithAttributes(semconv.ServiceName(serviceName)),
		resource.WithFromEnv(), // last, so the OTEL_* variables win
	)
	if errors.Is(err, resource.ErrPartialResource) {
		// A malformed OTEL_RESOURCE_ATTRIBUTES should not stop the service;
		// the attributes that did parse are kept.
		slog.Warn("telemetry: partial tracing resource", "err", err)
	} else if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	shutdown = func(context.Context) error { return nil }
	if otlpEndpointConfigured() {
		exp, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("telemetry: otlp exporter: %w", err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithBatcher(exp))
		otel.SetTracerProvider(tp)
		shutdown = tp.Shutdown
	} else {
		otel.SetTracerProvider(idTracerProvider{})
	}
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(
		propagation.TraceContext{}, propagation.Baggage{}))
	// Export failures would otherwise go to the standard library logger,
	// outside the JSON log stream.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		slog.Warn("opentelemetry", "err", err)
	}))
	return shutdown, nil
}

func otlpEndpointConfigured() bool {
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// TemporalTracingInterceptor returns Temporal's OpenTelemetry interceptor,
// which writes the current span into workflow and activity headers and starts
// StartWorkflow / RunWorkflow / StartActivity / RunActivity spans from them, so
// a trace begun by an API request continues through the workflow into its
// activities. It is both a client and a worker interceptor: put it in
// client.Options.Interceptors and workers built from that client inherit it
// (adding it to worker.Options as well would record every span twice).
// It uses the global tracer provider, so call SetupTracing first.
func TemporalTracingInterceptor() (interceptor.Interceptor, error) {
	return temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{
		TextMapPropagator: otel.GetTextMapPropagator(),
	})
}

// Extract returns ctx carrying the remote span context found in headers
// (traceparent, tracestate, baggage), so that the server span started next
// becomes a child of the caller's span. Header names are matched
// case-insensitively, since HTTP frameworks differ in how they spell them.
// Without valid headers ctx is returned unchanged in effect and the next span
// starts a new trace.
func Extract(ctx context.Context, headers map[string]string) context.Context {
	carrier := make(propagation.MapCarrier, len(headers))
	for k, v := range headers {
		carrier[strings.ToLower(k)] = v
	}
	return otel.GetTextMapPropagator().Extract(ctx, carrier)
}

// HTTPMiddlewareSpan starts a server span named "METHOD route" for one HTTP
// request and returns the context to pass down (so database, model and
// Temporal calls become its children) and a function to end it with the
// response status. route is the route template, as for ObserveHTTP. Statuses
// of 500 and above mark the span as an error; 4xx are the client's fault and
// do not. Calling end more than once ends the span only once.
func HTTPMiddlewareSpan(ctx context.Context, method, route string) (context.Context, func(status int)) {
	method = normMethod(method)
	name := method
	if route != "" {
		name = method + " " + route
	}
	ctx, span := otel.Tracer(tracerName).Start(ctx, name,
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(semconv.HTTPRequestMethodKey.String(method)))
	if route != "" {
		span.SetAttributes(semconv.HTTPRoute(route))
	}
	var once sync.Once
	return ctx, func(status int) {
		once.Do(func() {
			span.SetAttributes(semconv.HTTPResponseStatusCode(status))
			if status >= 500 {
				span.SetStatus(codes.Error, fmt.Sprintf("HTTP %d", status))
			}
			span.End()
		})
	}
}

// LogAttrs returns the trace_id and span_id of the span in ctx as slog
// key/value pairs (logger.With(telemetry.LogAttrs(ctx)...)), so a log line can
// be looked up in the tracing backend and vice versa. It returns nil when ctx
// carries no valid span, adding nothing to the line.
func LogAttrs(ctx context.Context) []any {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return nil
	}
	return []any{"trace_id", sc.TraceID().String(), "span_id", sc.SpanID().String()}
}
