package telemetry

import (
	"context"
	"encoding/binary"
	"math/rand/v2"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
	"go.opentelemetry.io/otel/trace/noop"
)

// idTracerProvider is the tracer provider when no exporter is configured.
// Its spans record nothing but carry the ids, flags and trace state the
// SDK's spans would (its newSpan with the default parent-based sampler), so
// logs and the traceparent handed to Temporal stay correlated without the
// SDK's work for spans nobody exports.
type idTracerProvider struct{ embedded.TracerProvider }

func (idTracerProvider) Tracer(string, ...trace.TracerOption) trace.Tracer { return idTracer{} }

type idTracer struct{ embedded.Tracer }

func (idTracer) Start(ctx context.Context, _ string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	var parent trace.SpanContext
	if cfg := trace.NewSpanStartConfig(opts...); !cfg.NewRoot() {
		parent = trace.SpanContextFromContext(ctx)
	}
	tid := parent.TraceID()
	if !tid.IsValid() {
		tid = newTraceID()
	}
	flags := parent.TraceFlags() | trace.FlagsSampled
	if parent.IsValid() && !parent.IsSampled() {
		flags = parent.TraceFlags() &^ trace.FlagsSampled
	}
	s := idSpan{sc: trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: newSpanID(), TraceFlags: flags, TraceState: parent.TraceState(),
	})}
	return trace.ContextWithSpan(ctx, s), s
}

// idSpan is a span that records nothing and has ids.
type idSpan struct {
	noop.Span
	sc trace.SpanContext
}

func (s idSpan) SpanContext() trace.SpanContext     { return s.sc }
func (idSpan) TracerProvider() trace.TracerProvider { return idTracerProvider{} }

func newTraceID() (id trace.TraceID) {
	for !id.IsValid() {
		binary.NativeEndian.PutUint64(id[:8], rand.Uint64())
		binary.NativeEndian.PutUint64(id[8:], rand.Uint64())
	}
	return id
}

func newSpanID() (id trace.SpanID) {
	for !id.IsValid() {
		binary.NativeEndian.PutUint64(id[:], rand.Uint64())
	}
	return id
}
