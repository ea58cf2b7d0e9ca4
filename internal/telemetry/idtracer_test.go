package telemetry

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Without an exporter, spans carry the ids and flags the SDK's spans carry
// under the same parents, record nothing, and their children have ids too.
func TestIDTracerMatchesSDKIDs(t *testing.T) {
	sdk := sdktrace.NewTracerProvider().Tracer("t")
	ids := idTracerProvider{}.Tracer("t")
	ts, _ := trace.ParseTraceState("vendor=1")
	remote := func(flags trace.TraceFlags) context.Context {
		return trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5}, TraceFlags: flags, TraceState: ts, Remote: true,
		}))
	}
	cases := []struct {
		name string
		ctx  context.Context
		opts []trace.SpanStartOption
	}{
		{"root", context.Background(), nil},
		{"sampled parent", remote(trace.FlagsSampled), nil},
		{"unsampled parent", remote(0), nil},
		{"new root below a parent", remote(0), []trace.SpanStartOption{trace.WithNewRoot()}},
		{"parent without a span id", trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{9}, TraceState: ts})), nil},
		{"unsampled parent without a trace id", trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{SpanID: trace.SpanID{9}, TraceFlags: 0x02})), nil},
	}
	for _, c := range cases {
		_, want := sdk.Start(c.ctx, "s", c.opts...)
		ctx, got := ids.Start(c.ctx, "s", c.opts...)
		w, g := want.SpanContext(), got.SpanContext()
		if !g.IsValid() || g.IsRemote() || g.TraceFlags() != w.TraceFlags() || g.TraceState().String() != w.TraceState().String() {
			t.Errorf("%s: span context %+v, the SDK's %+v", c.name, g, w)
		}
		if parent := trace.SpanContextFromContext(c.ctx); (g.TraceID() == parent.TraceID()) != (w.TraceID() == parent.TraceID()) {
			t.Errorf("%s: trace %s below %s; the SDK's %s", c.name, g.TraceID(), parent.TraceID(), w.TraceID())
		}
		if g.SpanID() == w.SpanID() || got.IsRecording() || !trace.SpanContextFromContext(ctx).Equal(g) {
			t.Errorf("%s: span %+v", c.name, got)
		}
		_, child := got.TracerProvider().Tracer("t").Start(ctx, "child")
		if cc := child.SpanContext(); cc.TraceID() != g.TraceID() || cc.SpanID() == g.SpanID() || !cc.SpanID().IsValid() {
			t.Errorf("%s: child %+v of %+v", c.name, cc, g)
		}
	}
}

// Old and new side by side: a span started and ended without an exporter.
func BenchmarkSpanWithoutExporter(b *testing.B) {
	for _, p := range []struct {
		name string
		tp   trace.TracerProvider
	}{{"sdk", sdktrace.NewTracerProvider()}, {"ids", idTracerProvider{}}} {
		b.Run(p.name, func(b *testing.B) {
			tr := p.tp.Tracer("t")
			b.ReportAllocs()
			for b.Loop() {
				_, s := tr.Start(context.Background(), "GET /v1/x", trace.WithSpanKind(trace.SpanKindServer))
				s.End()
			}
		})
	}
}
