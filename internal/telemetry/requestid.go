package telemetry

import (
	"context"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"
)

// The request id of the HTTP request that started a workflow travels in the
// workflow's header (and from there into every activity's header), so the
// lines workflows and activities log carry the same request_id as the
// request's own log line.

type requestIDKey struct{}

// requestIDHeader is the Temporal header field that carries the request id.
const requestIDHeader = "lore-request-id"

// WithRequestID returns ctx carrying the request id; a workflow started with
// it (through a client with RequestIDPropagator) carries it too.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID is the request id ctx carries ("" when none); in an activity it
// is the id of the request that started the workflow.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// WorkflowRequestID is the id of the request that started the workflow.
func WorkflowRequestID(ctx workflow.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// RequestIDPropagator moves the request id between contexts and Temporal
// headers: client → workflow → activities and child workflows. Put it in
// client.Options.ContextPropagators (the worker inherits the client's).
func RequestIDPropagator() workflow.ContextPropagator { return requestIDPropagator{} }

type requestIDPropagator struct{}

func (requestIDPropagator) Inject(ctx context.Context, w workflow.HeaderWriter) error {
	return inject(RequestID(ctx), w)
}

func (requestIDPropagator) InjectFromWorkflow(ctx workflow.Context, w workflow.HeaderWriter) error {
	return inject(WorkflowRequestID(ctx), w)
}

func (requestIDPropagator) Extract(ctx context.Context, r workflow.HeaderReader) (context.Context, error) {
	if id := extract(r); id != "" {
		ctx = WithRequestID(ctx, id)
	}
	return ctx, nil
}

func (requestIDPropagator) ExtractToWorkflow(ctx workflow.Context, r workflow.HeaderReader) (workflow.Context, error) {
	if id := extract(r); id != "" {
		ctx = workflow.WithValue(ctx, requestIDKey{}, id)
	}
	return ctx, nil
}

func inject(id string, w workflow.HeaderWriter) error {
	if id == "" {
		return nil
	}
	p, err := converter.GetDefaultDataConverter().ToPayload(id)
	if err != nil {
		return err
	}
	w.Set(requestIDHeader, p)
	return nil
}

func extract(r workflow.HeaderReader) string {
	p, ok := r.Get(requestIDHeader)
	if !ok {
		return ""
	}
	var id string
	if converter.GetDefaultDataConverter().FromPayload(p, &id) != nil || len(id) > 128 {
		return ""
	}
	return id
}
