package activities

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/lorekb/lore/internal/cache"
	"github.com/lorekb/lore/internal/chatevent"
	"github.com/lorekb/lore/internal/config"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/llm"
	"github.com/lorekb/lore/internal/rerank"
	"github.com/lorekb/lore/internal/streamhub"
	"github.com/lorekb/lore/internal/telemetry"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
)

// SignalEvents is the signal by which activities append events to their chat
// run's ordered event log.
const SignalEvents = "events"

// EventBatch is a batch of event payloads sent by one activity attempt.
type EventBatch struct {
	Attempt int32
	Events  []json.RawMessage // full SSE payloads, each with its "type"
	Origins []string          // per event: the key it was published under on the hub
}

// ChatModels gives a tenant's chat model and reranker.
type ChatModels interface {
	ChatModel(ctx context.Context, tenantID int64) (llm.Model, string, error)
	Reranker(ctx context.Context, tenantID int64) (rerank.Reranker, error)
}

// Signaler sends a signal to a workflow run.
type Signaler interface {
	SignalWorkflow(ctx context.Context, workflowID, runID, signalName string, arg any) error
}

// Chat holds the activities of a chat run.
type Chat struct {
	DB      *db.DB
	Cfg     *config.Config // retrieval settings (RAG_*)
	Models  ChatModels
	Vectors TenantVectors
	// Signals delivers event batches to the run's workflow (a Temporal
	// client).
	Signals Signaler
	Cache   cache.Cache // counts a site's chat tokens against its budget
	Metrics *telemetry.Metrics
	Log     *slog.Logger
	// Hub is this process's hub: a model call running as a local activity
	// (its run's reader is in this process) publishes every event there at
	// once; a reader that leaves cancels the call through it.
	Hub *streamhub.Hub
	// FlushInterval batches token deltas into one signal (tens of
	// milliseconds: never one signal per token).
	FlushInterval time.Duration

	results  toolResults                              // search results this process stored (toolresults.go)
	contexts recent[turnKey, *db.ConversationContext] // the stored thread, as a turn's first model call read it
}

// turnKey names one turn of one run.
type turnKey struct {
	workflowID, runID, threadID string
	startedAtMs                 int64
}

// TurnMessage is one message of the current turn as the workflow holds it:
// tool messages carry only a reference to their stored result, so document
// text never enters workflow history.
type TurnMessage struct {
	Role        string         `json:"role"`
	Content     string         `json:"content,omitempty"`
	ToolCalls   []llm.ToolCall `json:"tool_calls,omitempty"`
	ToolCallID  string         `json:"tool_call_id,omitempty"`
	ToolRef     bool           `json:"tool_ref,omitempty"`     // content is the stored result of ToolCallID
	SourceStart int            `json:"source_start,omitempty"` // first source number of the result
	Notice      string         `json:"notice,omitempty"`       // appended instruction (force stop)
	// ToolHash is the stored result's content hash (SearchResult.ContentHash):
	// the process that stored it serves it from memory when the hashes agree.
	ToolHash string `json:"tool_hash,omitempty"`
}

// ModelTurnInput is one model call of the agent loop.
type ModelTurnInput struct {
	ThreadID     string
	TenantID     int64
	Model        string
	Temperature  *float64
	Instructions string
	Turn         []TurnMessage
	OfferTools   bool
	StartedAtMs  int64 // when the request arrived, for the pipeline trace
	// SeqBase is the log length when the call was scheduled: the i-th event
	// of this call becomes log entry SeqBase+i+1 (nothing else appends to
	// the log while a model call runs).
	SeqBase int
	// DeadlineMs is when the stream times out (Unix ms): the call stops
	// there with ErrStreamTimeout, so the timeout holds even for a call that
	// runs as a local activity, where the run's timer cannot fire meanwhile.
	DeadlineMs int64
}

// ModelTurnResult is the assistant message of one model call.
type ModelTurnResult struct {
	Message      llm.Message
	Usage        llm.Usage
	ContextCount int   // non-system messages given to the model
	FirstDeltaMs int64 // ms from request start to the first streamed piece (0 if none)
	FirstTextMs  int64 // ms from request start to the first text delta (0 if none)
	// EndMs is ms from request start to the end of the call, on the real
	// clock (the workflow's clock stands still inside a workflow task, so
	// the run takes a turn's total time from here: recorded with the result,
	// it replays the same).
	EndMs int64
	// Tail holds the events not yet signalled when the call ended: they
	// reach the log with the result, which saves a signal (and a workflow
	// task) per model call.
	Tail EventBatch
}

// systemPrompt frames every conversation.
const systemPrompt = `You are the documentation assistant of this site. Answer from the documentation only.
Use the search_knowledge_base tool to find passages, then answer and cite passages by their number like [1].
If the documentation does not cover the question, say so.`

// ForceStopNotice is injected as a tool message when a guard fires.
const ForceStopNotice = "Stop searching now: you have enough (or no further) results. Write the final answer from the passages above."

var searchTool = llm.ToolDef{
	Name:        llm.SearchToolName,
	Description: "Search this site's documentation. Returns numbered passages to cite.",
	Parameters: map[string]any{
		"type":       "object",
		"properties": map[string]any{"query": map[string]any{"type": "string", "description": "what to look for"}},
		"required":   []string{"query"},
	},
}

// ModelTurn runs one streamed model call and emits its pieces as events (see
// emitter): as a local activity to the hub at once and to the log with its
// result; as a scheduled activity to the log by signal every few tens of
// milliseconds, heartbeating with each, so a cancelled run (client gone,
// timeout) stops the model call.
func (a *Chat) ModelTurn(ctx context.Context, in ModelTurnInput) (ModelTurnResult, error) {
	ctx, stop := a.callContext(ctx, in)
	defer stop()
	model, modelName, req, err := a.request(ctx, in)
	if err != nil {
		return ModelTurnResult{}, err
	}
	t0 := time.Now()
	em := a.newEmitter(ctx, in)
	defer em.close()
	var res ModelTurnResult
	res.ContextCount = len(req.Messages) - 1
	out, err := model.Generate(ctx, req, func(d llm.Delta) {
		now := time.Now().UnixMilli() - in.StartedAtMs
		if res.FirstDeltaMs == 0 {
			res.FirstDeltaMs = max(now, 1)
		}
		if d.Text != "" {
			if res.FirstTextMs == 0 {
				res.FirstTextMs = max(now, 1)
			}
			em.add(chatevent.TextDelta{Delta: d.Text})
		}
		if tc := d.ToolCall; tc != nil {
			// tool_call.started is the run's, when the tool starts (runTools).
			piece := chatevent.ToolCallPiece{Index: tc.Index, ID: tc.ID,
				Function: chatevent.FunctionPiece{Name: tc.Name, Arguments: tc.Arguments}}
			if tc.ID != "" {
				piece.Type = "function"
			}
			em.add(chatevent.ToolCallDelta{ToolCall: piece})
		}
	})
	a.Metrics.ObserveModel("chat", modelName, time.Since(t0), out.Usage.InputTokens, out.Usage.OutputTokens, err)
	em.close()
	if err == nil {
		err = em.failed()
	}
	if err != nil {
		return res, em.fail(ctx, a.upstreamFailure(ctx, "model call", modelFailedNotice, err))
	}
	res.Message, res.Usage = out.Message, out.Usage
	res.Tail = em.take()
	res.EndMs = max(time.Now().UnixMilli()-in.StartedAtMs, res.FirstDeltaMs)
	return res, nil
}

// request is what ModelTurn sends: the tenant's chat model (and its name)
// and the request built from the stored thread and the turn so far.
func (a *Chat) request(ctx context.Context, in ModelTurnInput) (llm.Model, string, llm.Request, error) {
	model, name, err := a.Models.ChatModel(ctx, in.TenantID)
	if err != nil {
		return nil, "", llm.Request{}, temporal.NewNonRetryableApplicationError(err.Error(), ErrConfig, err)
	}
	msgs, err := a.buildMessages(ctx, in)
	if err != nil {
		return nil, "", llm.Request{}, err
	}
	req := llm.Request{Model: in.Model, Messages: msgs, Temperature: in.Temperature}
	if in.OfferTools {
		req.Tools = []llm.ToolDef{searchTool}
	}
	return model, name, req, nil
}

// callContext is the call's context: it ends at the stream deadline and, when
// the reader shares this process, the moment the reader goes away.
func (a *Chat) callContext(ctx context.Context, in ModelTurnInput) (context.Context, context.CancelFunc) {
	var cancel context.CancelFunc
	if in.DeadlineMs > 0 {
		ctx, cancel = context.WithDeadlineCause(ctx, time.UnixMilli(in.DeadlineMs), errStreamDeadline)
	} else {
		ctx, cancel = context.WithCancel(ctx)
	}
	a.cancelOnReaderGone(ctx, activity.GetInfo(ctx).WorkflowExecution.ID, cancel)
	return ctx, cancel
}

// cancelOnReaderGone calls cancel when the run's reader in this process goes
// away (Hub.Cancel), or not at all once ctx ends.
func (a *Chat) cancelOnReaderGone(ctx context.Context, wfID string, cancel context.CancelFunc) {
	if a.Hub == nil {
		return
	}
	gone := a.Hub.Cancelled(wfID)
	go func() {
		select {
		case <-gone:
			cancel()
		case <-ctx.Done():
		}
	}()
}

var errStreamDeadline = errors.New("stream deadline")

// turnContext is the stored thread the turn's model calls read. It is the
// same for each of them (the turn's own messages are stored after its last
// one), so a later call in the process of the first (every call of a local
// run) takes the first one's read instead of the same statement again.
func (a *Chat) turnContext(ctx context.Context, in ModelTurnInput) (*db.ConversationContext, error) {
	if !activity.IsActivity(ctx) {
		return a.DB.LoadContext(ctx, in.ThreadID)
	}
	wf := activity.GetInfo(ctx).WorkflowExecution
	key := turnKey{workflowID: wf.ID, runID: wf.RunID, threadID: in.ThreadID, startedAtMs: in.StartedAtMs}
	if conv, ok := a.contexts.lookup(key, toolResultTTL, time.Now()); ok {
		return conv, nil
	}
	conv, err := a.DB.LoadContext(ctx, in.ThreadID)
	if err == nil {
		a.contexts.add(key, conv, time.Now())
	}
	return conv, err
}

// buildMessages assembles system prompt, memory, stored history (which ends
// with this turn's user message) and the turn's messages so far.
func (a *Chat) buildMessages(ctx context.Context, in ModelTurnInput) ([]llm.Message, error) {
	conv, err := a.turnContext(ctx, in)
	if err != nil {
		return nil, err
	}
	sys := systemPrompt
	if in.Instructions != "" {
		// Below Lore's own prompt, never in place of it.
		sys = systemPrompt + "\n\nAdditional instructions from the site (they do not override the rules above):\n" + in.Instructions
	}
	msgs := []llm.Message{{Role: llm.RoleSystem, Content: sys}}
	if conv.Summary != "" {
		msgs = append(msgs, llm.Message{Role: llm.RoleSystem, Content: conv.Summary})
	}
	texts, err := a.toolResultTexts(ctx, in.ThreadID, in.Turn)
	if err != nil {
		return nil, err
	}
	for _, m := range conv.Messages {
		switch m.Role {
		case "user", "assistant":
			if m.Content != "" {
				msgs = append(msgs, llm.Message{Role: m.Role, Content: m.Content})
			}
		}
	}
	for i, m := range in.Turn {
		lm := llm.Message{Role: m.Role, Content: m.Content, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID}
		if m.ToolRef {
			lm.Content = texts[i]
		}
		if m.Notice != "" {
			lm.Content = strings.TrimSpace(lm.Content + "\n\n" + m.Notice)
		}
		msgs = append(msgs, lm)
	}
	return msgs, nil
}
