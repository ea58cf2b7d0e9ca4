package workflows

import (
	"errors"
	"regexp"
	"sort"
	"strconv"
	"time"

	"github.com/lorekb/lore/activities"
	"github.com/lorekb/lore/internal/chatevent"
	"github.com/lorekb/lore/internal/llm"
	"github.com/lorekb/lore/internal/streamhub"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// TimeoutNotice ends a stream that exceeded CHAT_STREAM_TIMEOUT_SECONDS.
const TimeoutNotice = "\n\n[Response timed out, please try again]"

// ErrorNoticePrefix starts the notice that ends a stream whose model call
// failed: ErrorNoticePrefix + the error + "]".
const ErrorNoticePrefix = "\n\n[System Error: "

// ChatRunInput is one turn of a thread. The user's message is already stored;
// the run loads context by thread id.
type ChatRunInput struct {
	// The turn, its site and the configured limits, built the same way on
	// every path (activities.NewChatRunSpec); embedded, so its fields stay
	// top-level fields of the recorded input.
	activities.ChatRunSpec
	Model        string
	Temperature  *float64
	Instructions string
	// SourceOffset is the number before the turn's first source: 0 for
	// every turn started now (each turn numbers its sources from 1, as the
	// reference does and its client numbers the source list); kept for
	// runs recorded when numbers went on across a thread's turns.
	SourceOffset int
	Reply        *ReplyTarget // messenger channel to deliver the answer to
	// Reader is the streamhub.Hub.ID of the API process that streams the
	// turn (empty: none). A worker in that same process runs the model calls
	// as local activities: the whole agent loop then stays in one workflow
	// task, with no round trip to the server between the model calls and the
	// search, and the reader gets every event from the hub.
	Reader string
	// SiteIDs are the sites a turn of no site (SiteID 0: the reference's
	// widget without a site) searches, each retrieval scoped to one.
	SiteIDs []int64
}

// ReplyTarget says where a messenger answer goes (the DeliverReply
// activity's own type).
type ReplyTarget = activities.ReplyTarget

// ChatRunResult summarises a finished turn.
type ChatRunResult struct {
	Text  string
	Usage llm.Usage
}

var (
	modelOptions = workflow.ActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		// Cancellation reaches an activity with its heartbeat response, and
		// the SDK throttles heartbeats to 80% of this: keep it short.
		HeartbeatTimeout: 5 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: 500 * time.Millisecond, BackoffCoefficient: 2,
			MaximumInterval: 5 * time.Second, MaximumAttempts: 3},
	}
	// Short database steps run as local activities: no round trips to the
	// server, retried by the SDK all the same.
	localOptions = workflow.LocalActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: 300 * time.Millisecond, BackoffCoefficient: 2,
			MaximumInterval: 10 * time.Second, MaximumAttempts: 10},
	}
	// A model call whose reader shares the worker's process runs as a local
	// activity; the stream deadline is enforced by the call itself.
	localModelOptions = workflow.LocalActivityOptions{
		StartToCloseTimeout: 5 * time.Minute,
		RetryPolicy:         modelOptions.RetryPolicy,
	}
	// Search is short: a local activity saves two round trips to the server.
	searchOptions = workflow.LocalActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: 300 * time.Millisecond, BackoffCoefficient: 2,
			MaximumInterval: 5 * time.Second, MaximumAttempts: 3},
	}
)

// turnState is the state of one run of ChatWorkflow: the decisions and the
// event log.
type turnState struct {
	ctx      workflow.Context
	hub      *streamhub.Hub
	local    bool  // model calls run as local activities
	deadline int64 // Unix ms when the stream times out
	timedOut bool  // a model call reached the deadline
	stored   int   // the thread's messages after the turn was stored (-1: unknown)
	in       ChatRunInput
	sig      workflow.ReceiveChannel
	events   []ChatEvent
	done     bool
	turn     []activities.TurnMessage
	final    string
	partial  string // text streamed by the model call in progress
	// attempt is the attempt of the model call in progress whose events the
	// log holds (0: none yet); stale is set when another attempt of the same
	// call (a retry after its worker died mid-stream) sent events: they are
	// dropped, and the call ends as broken whatever it returns.
	attempt int32
	stale   bool
	usage   llm.Usage
	offset  int
	sources []activities.KnowledgeSource
	seenDoc map[int64]bool
	// numbered is every source number this turn's searches gave, listed
	// or not (a document's later numbers are not; see citedSources).
	numbered map[int]activities.KnowledgeSource
	elapsed  map[string]int64
	firstMs  int64
	textMs   int64
	endMs    int64 // the latest model call's end, ms from request start (real clock)
}

// versionToolStarted is the change that moved tool_call.started from the
// model call (its first piece) to the run (when the tool starts).
const versionToolStarted = "tool-started-by-run"

// ChatWorkflowName is the name ChatWorkflow.Run is registered under (and the
// workflow type of every chat turn in Temporal, kept for running turns).
const ChatWorkflowName = "ChatRun"

// ChatWorkflow is the chat run: one turn of the agent. Hub is the worker
// process's hub (nil in tests and replays): the run publishes its own events
// there too, and runs its model calls as local activities that publish
// theirs, when the turn's reader is in this process (Hub.ID ==
// ChatRunInput.Reader), so that reader sees each event the moment it exists.
type ChatWorkflow struct {
	Hub *streamhub.Hub
}

// Run runs one turn: the event log is the source of truth of what the client
// sees; activities feed it with their results (and, scheduled ones, by
// signal), readers drain it by update (long-poll) or query.
func (w ChatWorkflow) Run(ctx workflow.Context, in ChatRunInput) (ChatRunResult, error) {
	r := &turnState{ctx: ctx, hub: w.Hub, in: in, offset: in.SourceOffset, seenDoc: map[int64]bool{},
		numbered: map[int]activities.KnowledgeSource{}, elapsed: map[string]int64{}}
	if in.Reader != "" {
		// Recorded, so a replay on another worker keeps the choice.
		if err := workflow.SideEffect(ctx, func(workflow.Context) any {
			return w.Hub != nil && w.Hub.ID == in.Reader
		}).Get(&r.local); err != nil {
			return ChatRunResult{}, err
		}
	}
	if err := r.serveLog(); err != nil {
		return ChatRunResult{}, err
	}
	r.emit(chatevent.NewCreated(in.ThreadID))

	timeout := in.timeout()
	r.deadline = in.StartedAtMs + timeout.Milliseconds()
	agentCtx, cancelAgent := workflow.WithCancel(ctx)
	agentDone, timedOut := false, false
	workflow.Go(agentCtx, func(gctx workflow.Context) {
		r.agent(gctx)
		agentDone = true
	})
	timerCtx, cancelTimer := workflow.WithCancel(ctx)
	if !r.local {
		// A local model call cannot be interrupted by a timer (its workflow
		// task is open meanwhile); it stops at the deadline by itself.
		workflow.Go(timerCtx, func(gctx workflow.Context) {
			if workflow.NewTimer(gctx, timeout).Get(gctx, nil) == nil {
				timedOut = true
			}
		})
	}
	waitErr := workflow.Await(ctx, func() bool { return agentDone || timedOut })
	cancelTimer()
	// From here on the run finishes even if it was cancelled: the log gets
	// its closing events and the turn is stored.
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	if !agentDone {
		cancelAgent()
		_ = workflow.Await(dctx, func() bool { return agentDone })
	}
	r.drain()
	if !agentDone || r.final == "" {
		r.final = r.partial
	}
	if (timedOut || r.timedOut) && waitErr == nil {
		r.emitText(TimeoutNotice)
		r.final += TimeoutNotice
	}
	r.finish(dctx)
	r.persist(dctx)
	if in.Reply != nil && waitErr == nil {
		var m *activities.Messenger
		_ = workflow.ExecuteActivity(workflow.WithActivityOptions(dctx, shortOptions), m.DeliverReply, *in.Reply, r.final).Get(dctx, nil)
	}
	// Summarization (rule 2) looks at the messages after the last summary,
	// never more than the thread holds: a short thread skips the step.
	if in.SummaryTrigger > 0 && (r.stored < 0 || r.stored > in.SummaryTrigger) {
		var a *activities.Chat
		_ = workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(dctx, localOptions), a.Summarize, activities.SummarizeInput{
			ThreadID: in.ThreadID, TenantID: in.TenantID, Trigger: in.SummaryTrigger, KeepLast: in.SummaryKeep}).Get(dctx, nil)
	}
	_ = workflow.Await(dctx, func() bool { return workflow.AllHandlersFinished(dctx) })
	if waitErr != nil {
		return ChatRunResult{Text: r.final, Usage: r.usage}, waitErr
	}
	return ChatRunResult{Text: r.final, Usage: r.usage}, nil
}

// timeout is the stream's time limit (CHAT_STREAM_TIMEOUT_SECONDS).
func (in ChatRunInput) timeout() time.Duration {
	if in.TimeoutMs <= 0 {
		return 120 * time.Second
	}
	return time.Duration(in.TimeoutMs) * time.Millisecond
}

// modelInput is the input of a model call of the run: the turn so far,
// whether tools are offered, and the log length when it was scheduled.
func modelInput(in ChatRunInput, turn []activities.TurnMessage, offerTools bool, seqBase int) activities.ModelTurnInput {
	return activities.ModelTurnInput{
		ThreadID: in.ThreadID, TenantID: in.TenantID, Model: in.Model, Temperature: in.Temperature,
		Instructions: in.Instructions, Turn: turn, OfferTools: offerTools, StartedAtMs: in.StartedAtMs,
		SeqBase: seqBase, DeadlineMs: in.StartedAtMs + in.timeout().Milliseconds(),
	}
}

// agent is the loop of SPEC.md "Agent routing": tool calls go to the tools
// stage (even above the iteration limit, where a force-stop instruction is
// injected), otherwise the run ends; summarization (rule 2) runs after the
// turn is stored.
func (r *turnState) agent(ctx workflow.Context) {
	var a *activities.Chat
	iteration, empty := 0, 0
	seen := map[string]bool{}
	forceStop := false
	for {
		var res activities.ModelTurnResult
		r.attempt, r.stale = 0, false
		mi := modelInput(r.in, r.turn, !forceStop, len(r.events))
		var f workflow.Future
		if r.local {
			f = workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, localModelOptions), a.ModelTurn, mi)
		} else {
			f = workflow.ExecuteActivity(workflow.WithActivityOptions(ctx, modelOptions), a.ModelTurn, mi)
		}
		err := f.Get(ctx, &res)
		r.drain()
		if len(res.Tail.Events) > 0 {
			r.accept(res.Tail)
		}
		if err == nil && r.stale {
			err = temporal.NewNonRetryableApplicationError(errRetriedMidStream, activities.ErrModelStreamBroken, nil)
		}
		if err != nil {
			var ae *temporal.ApplicationError
			isApp := errors.As(err, &ae)
			if isApp && ae.HasDetails() {
				var tail activities.EventBatch
				if ae.Details(&tail) == nil {
					r.accept(tail)
				}
			}
			r.final = r.partial // what the reader already saw stays the answer
			if ctx.Err() != nil || temporal.IsCanceledError(err) || isApp && ae.Type() == activities.ErrClientGone {
				return
			}
			if isApp && ae.Type() == activities.ErrStreamTimeout {
				r.timedOut = true
				return
			}
			notice := ErrorNoticePrefix + RootMessage(err) + "]"
			r.emitText(notice)
			r.final += notice
			return
		}
		r.partial = ""
		iteration++
		r.usage.InputTokens += res.Usage.InputTokens
		r.usage.OutputTokens += res.Usage.OutputTokens
		if r.firstMs == 0 {
			r.firstMs = res.FirstDeltaMs
		}
		if r.textMs == 0 {
			r.textMs = res.FirstTextMs
		}
		r.endMs = max(r.endMs, res.EndMs)
		msg := res.Message
		r.turn = append(r.turn, activities.TurnMessage{Role: llm.RoleAssistant, Content: msg.Content, ToolCalls: msg.ToolCalls})
		// Rule 1, with a hard stop two iterations past the limit for a model
		// that ignores the force-stop instruction.
		if len(msg.ToolCalls) == 0 || iteration > r.in.MaxIterations+1 {
			r.final = msg.Content
			return
		}
		results := r.runTools(ctx, msg.ToolCalls)
		if ctx.Err() != nil || r.timedOut {
			return
		}
		for i, tc := range msg.ToolCalls {
			res := results[i]
			tm := activities.TurnMessage{Role: llm.RoleTool, ToolCallID: tc.ID, ToolRef: true, SourceStart: r.offset + 1, ToolHash: res.ContentHash}
			for j, s := range res.Sources {
				idx := r.offset + 1 + j
				ks := activities.KnowledgeSource{ID: strconv.FormatInt(s.DocumentID, 10), Title: s.Title,
					SiteID: s.SiteID, DocumentID: s.DocumentID, Score: s.Score, SourceIndex: idx, Revision: s.Revision, Section: s.Section}
				r.numbered[idx] = ks
				if !r.seenDoc[s.DocumentID] {
					r.seenDoc[s.DocumentID] = true
					r.sources = append(r.sources, ks)
				}
			}
			r.offset += len(res.Sources)
			if res.ChunkCount == 0 {
				empty++
			} else {
				empty = 0
			}
			if seen[res.Hash] {
				empty = r.in.MaxEmpty // identical output to an earlier call
			}
			seen[res.Hash] = true
			r.turn = append(r.turn, tm)
		}
		if iteration >= r.in.MaxIterations || empty >= r.in.MaxEmpty {
			r.turn[len(r.turn)-1].Notice = activities.ForceStopNotice
			forceStop = true
		}
	}
}

// runTools runs the turn's tool calls in parallel: each call's
// tool_call.started goes out as it starts, after the model streamed its
// tool_call.delta pieces (the reference's order, on which its client pairs a
// call with its completion), and its tool_call.completed as it finishes,
// with that call's own elapsed time.
func (r *turnState) runTools(ctx workflow.Context, calls []llm.ToolCall) []activities.SearchResult {
	var a *activities.Chat
	results := make([]activities.SearchResult, len(calls))
	sel := workflow.NewSelector(ctx)
	pending := 0
	// Runs recorded before this (version DefaultVersion) had the model
	// call emit tool_call.started with its first piece; emitting it here
	// then would end a waiting reader's update earlier than recorded. Turns
	// started with a spec version have it without asking.
	runStarts := r.in.Version >= 1 || workflow.GetVersion(ctx, versionToolStarted, workflow.DefaultVersion, 1) == 1
	for i, tc := range calls {
		if runStarts {
			r.emit(chatevent.ToolCallStarted{Tool: tc.Name})
		}
		if tc.Name != llm.SearchToolName {
			results[i] = activities.SearchResult{ToolCallID: tc.ID, Hash: "unknown-tool:" + tc.Name}
			r.toolCompleted(tc, results[i])
			continue
		}
		pending++
		f := workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, searchOptions), a.Search, activities.SearchInput{
			ThreadID: r.in.ThreadID, ToolCallID: tc.ID, TenantID: r.in.TenantID, SiteID: r.in.SiteID, SiteIDs: r.in.SiteIDs, Arguments: tc.Arguments,
			DeadlineMs: r.deadline})
		sel.AddFuture(f, func(f workflow.Future) {
			var res activities.SearchResult
			if err := f.Get(ctx, &res); err != nil {
				var ae *temporal.ApplicationError
				if errors.As(err, &ae) && ae.Type() == activities.ErrStreamTimeout {
					r.timedOut = true
				}
				res = activities.SearchResult{ToolCallID: tc.ID, Hash: "error:" + tc.ID}
			}
			results[i] = res
			r.toolCompleted(tc, res)
		})
	}
	for ; pending > 0 && ctx.Err() == nil; pending-- {
		sel.Select(ctx)
	}
	return results
}

func (r *turnState) toolCompleted(tc llm.ToolCall, res activities.SearchResult) {
	r.elapsed[tc.ID] = res.ElapsedMS
	// chunk_count is the passages the result holds (one per document), the
	// length of the array the reference's client shows in the call's dialog
	// and counts on reload; res.ChunkCount counts the fragments merged into them.
	ev := chatevent.ToolCallCompleted{Tool: tc.Name, ToolCallID: tc.ID, ChunkCount: len(res.Sources)}
	if r.in.ShowTrace {
		ev.ElapsedMS = &res.ElapsedMS
	}
	r.emit(ev)
}

// finish appends the closing events: sources, trace, completed with usage.
func (r *turnState) finish(ctx workflow.Context) {
	r.sources = citedSources(r.sources, r.numbered, r.final)
	if len(r.sources) > 0 {
		sort.SliceStable(r.sources, func(i, j int) bool { return r.sources[i].SourceIndex < r.sources[j].SourceIndex })
		r.emit(chatevent.KnowledgeSources{Sources: r.sources})
	}
	if r.in.ShowTrace {
		r.emit(chatevent.PipelineTrace{Trace: chatevent.Trace{TTFB: float64(r.firstMs), FirstToken: float64(r.textMs), Total: float64(r.totalMs(ctx))}})
	}
	r.emit(chatevent.NewCompleted(r.in.ThreadID, chatevent.NewUsage(r.usage.InputTokens, r.usage.OutputTokens)))
	r.done = true
}

// totalMs is the turn's total time so far, ms from request start. The
// workflow clock does not advance inside a workflow task (a local run's whole
// agent loop is one), so it can lag the model calls' own real-clock
// timestamps, which it never reports less than: the last call's end, its
// first text, its first piece. Every term is recorded in the history (task
// start times, activity results), so a replay computes the same value; runs
// recorded before EndMs existed fall back to the workflow clock.
func (r *turnState) totalMs(ctx workflow.Context) int64 {
	return max(workflow.Now(ctx).UnixMilli()-r.in.StartedAtMs, r.endMs, r.textMs, r.firstMs)
}

var citedNumber = regexp.MustCompile(`\[(\d+)\]`)

// citedSources adds to sources (a document's first number in the turn, as
// the reference lists them) every number the answer cites that a search of
// the turn gave but the list lacks: a document two searches returned is
// listed at its first number, and an answer citing its later one would
// otherwise cite a number nothing resolves. A document the answer cites at
// no number is marked Related: the search found it, the answer does not
// rest on it (every source of an answer that says the docs do not cover
// the question).
func citedSources(sources []activities.KnowledgeSource, numbered map[int]activities.KnowledgeSource, answer string) []activities.KnowledgeSource {
	listed := make(map[int]bool, len(sources))
	for _, s := range sources {
		listed[s.SourceIndex] = true
	}
	cited := map[int64]bool{}
	for _, m := range citedNumber.FindAllStringSubmatch(answer, -1) {
		n, err := strconv.Atoi(m[1])
		s, ok := numbered[n]
		if err != nil || !ok {
			continue
		}
		cited[s.DocumentID] = true
		if !listed[n] {
			listed[n] = true
			sources = append(sources, s)
		}
	}
	for i := range sources {
		sources[i].Related = !cited[sources[i].DocumentID]
	}
	return sources
}

// persist stores the assistant side of the turn.
func (r *turnState) persist(ctx workflow.Context) {
	var a *activities.Chat
	extra := map[string]any{"usage_metadata": map[string]int{"input_tokens": r.usage.InputTokens,
		"output_tokens": r.usage.OutputTokens, "total_tokens": r.usage.InputTokens + r.usage.OutputTokens}}
	if r.in.ShowTrace {
		extra["trace"] = map[string]any{"ttfb": r.firstMs, "first_token": r.textMs, "total": r.totalMs(ctx)}
	}
	in := activities.PersistInput{ThreadID: r.in.ThreadID, Turn: r.in.Turn, Messages: answeredOnly(r.turn), Final: r.final,
		Sources: r.sources, Extra: extra, ToolElapsed: r.elapsed, TotalMs: r.totalMs(ctx),
		SourceOffset: r.offset, SiteID: r.in.SiteID, TenantID: r.in.TenantID, Tokens: int64(r.usage.InputTokens + r.usage.OutputTokens)}
	var res activities.PersistResult
	if err := workflow.ExecuteLocalActivity(workflow.WithLocalActivityOptions(ctx, localOptions), a.Persist, in).Get(ctx, &res); err != nil {
		res.Messages = -1
	}
	r.stored = res.Messages
}

// answeredOnly is the turn without the tool calls that got no result (the
// calls of a model cut off two iterations past the limit, or of a run
// stopped during its tools stage): the stored conversation pairs every
// assistant tool call with its tool message. An assistant message left
// without calls is dropped (its text, if any, is the final answer).
func answeredOnly(turn []activities.TurnMessage) []activities.TurnMessage {
	answered := map[string]bool{}
	for _, m := range turn {
		if m.Role == llm.RoleTool {
			answered[m.ToolCallID] = true
		}
	}
	out := make([]activities.TurnMessage, 0, len(turn))
	for _, m := range turn {
		if m.Role == llm.RoleAssistant && len(m.ToolCalls) > 0 {
			var calls []llm.ToolCall
			for _, tc := range m.ToolCalls {
				if answered[tc.ID] {
					calls = append(calls, tc)
				}
			}
			if len(calls) == 0 {
				continue
			}
			m.ToolCalls = calls
		}
		out = append(out, m)
	}
	return out
}
