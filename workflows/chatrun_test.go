package workflows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/activities"
	"github.com/lorekb/lore/internal/chatevent"
	"github.com/lorekb/lore/internal/llm"
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/lorekb/lore/internal/streamhub"
)

func chatInput() ChatRunInput {
	return ChatRunInput{ChatRunSpec: activities.ChatRunSpec{ThreadID: "auto-test", Turn: 1, TenantID: 1, SiteID: 1, MaxIterations: 5, MaxEmpty: 2,
		SummaryTrigger: 10, SummaryKeep: 6, TimeoutMs: 60000}}
}

func toolCall(id string) llm.Message {
	return llm.Message{Role: "assistant", ToolCalls: []llm.ToolCall{{ID: id, Name: llm.SearchToolName, Arguments: `{"query":"q"}`}}}
}

// chatEnv mocks the chat activities; model answers with the scripted messages
// (the last one repeats) and records every input it got.
type chatEnv struct {
	env        *testsuite.TestWorkflowEnvironment
	hub        *streamhub.Hub // the worker's hub (nil: none)
	local      []bool         // per model call: ran as a local activity
	inputs     []activities.ModelTurnInput
	searches   []activities.SearchInput
	persist    *activities.PersistInput
	summary    int
	stored     int                                // the thread's message count Persist reports
	failSearch func(activities.SearchInput) error // non-nil: a search error instead of the result
	// timing, when set, gives every model call's real-clock timestamps
	// (FirstDeltaMs, FirstTextMs, EndMs).
	timing *activities.ModelTurnResult
}

func newChatEnv(t *testing.T, script []llm.Message, search func(in activities.SearchInput) activities.SearchResult) *chatEnv {
	var s testsuite.WorkflowTestSuite
	ce := &chatEnv{env: s.NewTestWorkflowEnvironment(), stored: 100}
	var a *activities.Chat
	ce.env.RegisterActivity(a)
	ce.env.OnActivity(a.ModelTurn, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.ModelTurnInput) (activities.ModelTurnResult, error) {
			ce.inputs = append(ce.inputs, in)
			ce.local = append(ce.local, activity.GetInfo(ctx).IsLocalActivity)
			m := script[min(len(ce.inputs)-1, len(script)-1)]
			res := activities.ModelTurnResult{Message: m, Usage: llm.Usage{InputTokens: 10, OutputTokens: 5}}
			if tm := ce.timing; tm != nil {
				res.FirstDeltaMs, res.FirstTextMs, res.EndMs = tm.FirstDeltaMs, tm.FirstTextMs, tm.EndMs
			}
			return res, nil
		})
	ce.env.OnActivity(a.Search, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.SearchInput) (activities.SearchResult, error) {
			ce.searches = append(ce.searches, in)
			if ce.failSearch != nil {
				if err := ce.failSearch(in); err != nil {
					return activities.SearchResult{}, err
				}
			}
			return search(in), nil
		})
	ce.env.OnActivity(a.Persist, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.PersistInput) (activities.PersistResult, error) {
			ce.persist = &in
			return activities.PersistResult{Messages: ce.stored}, nil
		})
	ce.env.OnActivity(a.Summarize, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.SummarizeInput) (bool, error) { ce.summary++; return true, nil })
	return ce
}

// runPastTheLimit runs a turn of at most two iterations whose model keeps
// asking for tools: iterations 1 and 2 offer tools, the guard fires at 2,
// iteration 3 still goes to the tools stage (rule 1 above the limit) and
// iteration 4 is cut off, so four model calls and three searches.
func (ce *chatEnv) runPastTheLimit(t *testing.T) {
	t.Helper()
	in := chatInput()
	in.MaxIterations = 2
	ce.run(t, in)
	if len(ce.inputs) != 4 || len(ce.searches) != 3 {
		t.Fatalf("model calls %d searches %d", len(ce.inputs), len(ce.searches))
	}
}

func (ce *chatEnv) run(t *testing.T, in ChatRunInput) []string {
	t.Helper()
	executeChat(ce.env, ce.hub, in)
	if err := ce.env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	p := ce.log(t)
	if !p.Done {
		t.Fatal("log not done")
	}
	var types []string
	for i, e := range p.Events {
		if e.Seq != i+1 {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
		var x struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(e.Data, &x)
		types = append(types, x.Type)
	}
	return types
}

// log is the run's whole event log.
func (ce *chatEnv) log(t *testing.T) EventsPage {
	t.Helper()
	v, err := ce.env.QueryWorkflow(QueryEvents, 0)
	if err != nil {
		t.Fatal(err)
	}
	var p EventsPage
	if err := v.Get(&p); err != nil {
		t.Fatal(err)
	}
	return p
}

// executeChat runs ChatWorkflow with the worker's hub (or none) in env.
func executeChat(env *testsuite.TestWorkflowEnvironment, hub *streamhub.Hub, in ChatRunInput) {
	env.RegisterWorkflowWithOptions(ChatWorkflow{Hub: hub}.Run, workflow.RegisterOptions{Name: ChatWorkflowName})
	env.ExecuteWorkflow(ChatWorkflowName, in)
}

func found(in activities.SearchInput) activities.SearchResult {
	return activities.SearchResult{ToolCallID: in.ToolCallID, ChunkCount: 2, Hash: "h-" + in.ToolCallID,
		Sources: []activities.SourceRef{{DocumentID: 10, Title: "Doc", SiteID: 1, Score: 0.9}}}
}

func TestChatRule3EndsWithoutTools(t *testing.T) {
	ce := newChatEnv(t, []llm.Message{{Role: "assistant", Content: "Hello"}}, found)
	types := ce.run(t, chatInput())
	if len(ce.inputs) != 1 || len(ce.searches) != 0 {
		t.Fatalf("model calls %d, searches %d", len(ce.inputs), len(ce.searches))
	}
	if strings.Join(types, ",") != "response.created,response.completed" {
		t.Fatalf("events %v", types)
	}
	if ce.persist == nil || ce.persist.Final != "Hello" || ce.summary != 1 {
		t.Fatalf("persist %+v summary %d", ce.persist, ce.summary)
	}
}

func TestChatRule1ToolsThenAnswerWithContinuingSourceNumbers(t *testing.T) {
	ce := newChatEnv(t, []llm.Message{toolCall("c1"), {Role: "assistant", Content: "Answer [4]"}}, found)
	in := chatInput()
	in.SourceOffset = 3 // a run recorded when numbers went on across turns
	types := ce.run(t, in)
	if len(ce.searches) != 1 || len(ce.inputs) != 2 || !ce.inputs[1].OfferTools {
		t.Fatalf("searches %d model calls %d", len(ce.searches), len(ce.inputs))
	}
	last := ce.inputs[1].Turn[len(ce.inputs[1].Turn)-1]
	if !last.ToolRef || last.ToolCallID != "c1" || last.SourceStart != 4 || last.Notice != "" {
		t.Fatalf("tool message %+v", last)
	}
	// The run's own tool_call.started (the mocked model streams nothing).
	want := "response.created,response.tool_call.started,response.tool_call.completed,response.knowledge_sources,response.completed"
	if strings.Join(types, ",") != want {
		t.Fatalf("events %v", types)
	}
	if ce.persist.SourceOffset != 4 || ce.persist.Sources[0].SourceIndex != 4 {
		t.Fatalf("offset %d sources %+v", ce.persist.SourceOffset, ce.persist.Sources)
	}
}

// A turn started with a spec version takes the changes up to it from its
// input: tool_call.started is the run's even where the version marker would
// say otherwise (a run recorded before it, which still asks).
func TestChatSpecVersionDecidesWithoutTheVersionMarker(t *testing.T) {
	for _, version := range []int{0, activities.ChatRunVersion} {
		ce := newChatEnv(t, []llm.Message{toolCall("c1"), {Role: "assistant", Content: "Answer"}}, found)
		// Registered before the version mock, which the test suite requires.
		ce.env.RegisterWorkflowWithOptions(ChatWorkflow{}.Run, workflow.RegisterOptions{Name: ChatWorkflowName})
		ce.env.OnGetVersion(versionToolStarted, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
		in := chatInput()
		in.Version = version
		ce.env.ExecuteWorkflow(ChatWorkflowName, in)
		if err := ce.env.GetWorkflowError(); err != nil {
			t.Fatal(err)
		}
		started := slices.ContainsFunc(ce.log(t).Events, func(e ChatEvent) bool { return chatevent.TypeOf(e.Data) == chatevent.TypeToolCallStarted })
		if started != (version > 0) {
			t.Errorf("spec version %d: tool_call.started by the run %v", version, started)
		}
	}
}

func TestChatIterationGuardForcesStopEvenAboveTheLimit(t *testing.T) {
	// The model always asks for tools, even after the force-stop.
	n := 0
	ce := newChatEnv(t, []llm.Message{toolCall("c")}, func(in activities.SearchInput) activities.SearchResult {
		n++
		r := found(in)
		r.Hash = string(rune('a' + n))
		return r
	})
	ce.runPastTheLimit(t)
	if !ce.inputs[1].OfferTools || ce.inputs[2].OfferTools || ce.inputs[3].OfferTools {
		t.Fatal("tools must be withdrawn after the force-stop")
	}
	if notice := ce.inputs[2].Turn[len(ce.inputs[2].Turn)-1].Notice; notice != activities.ForceStopNotice {
		t.Fatalf("force-stop not injected as a tool message: %q", notice)
	}
}

// The calls of a model cut off past the limit never ran: the stored turn
// pairs every assistant tool call with its tool message.
func TestChatStoredTurnHasOnlyAnsweredToolCalls(t *testing.T) {
	ce := newChatEnv(t, []llm.Message{toolCall("c1"), toolCall("c2"), toolCall("c3"), toolCall("c4")}, func(in activities.SearchInput) activities.SearchResult {
		r := found(in)
		r.Hash = in.ToolCallID
		return r
	})
	ce.runPastTheLimit(t)
	var got []string
	for _, m := range ce.persist.Messages {
		for _, tc := range m.ToolCalls {
			got = append(got, "call:"+tc.ID)
		}
		if m.Role == llm.RoleTool {
			got = append(got, "tool:"+m.ToolCallID)
		}
	}
	if want := "call:c1,tool:c1,call:c2,tool:c2,call:c3,tool:c3"; strings.Join(got, ",") != want {
		t.Fatalf("stored turn %v, want %s", got, want)
	}
}

// A search still running at the stream deadline ends the turn with the
// timeout notice; the model is not called again.
func TestChatSearchPastTheDeadlineEndsWithTimeoutNotice(t *testing.T) {
	ce := newChatEnv(t, []llm.Message{toolCall("c1"), {Role: "assistant", Content: "never"}}, found)
	ce.failSearch = func(in activities.SearchInput) error {
		if in.DeadlineMs != chatInput().StartedAtMs+chatInput().TimeoutMs {
			t.Errorf("search deadline %d", in.DeadlineMs)
		}
		return temporal.NewNonRetryableApplicationError("deadline", activities.ErrStreamTimeout, errors.New("deadline"))
	}
	ce.run(t, chatInput())
	if len(ce.inputs) != 1 || len(ce.searches) != 1 {
		t.Fatalf("model calls %d searches %d", len(ce.inputs), len(ce.searches))
	}
	if ce.persist.Final != TimeoutNotice {
		t.Fatalf("stored answer %q", ce.persist.Final)
	}
}

func TestChatConsecutiveEmptyGuard(t *testing.T) {
	n := 0
	ce := newChatEnv(t, []llm.Message{toolCall("c1"), toolCall("c2"), {Role: "assistant", Content: "Not found"}},
		func(in activities.SearchInput) activities.SearchResult {
			n++
			return activities.SearchResult{ToolCallID: in.ToolCallID, Hash: "empty-" + string(rune('0'+n))}
		})
	in := chatInput()
	in.MaxIterations = 10
	ce.run(t, in)
	if len(ce.inputs) != 3 || !ce.inputs[1].OfferTools || ce.inputs[2].OfferTools {
		t.Fatalf("calls %d; offer %v", len(ce.inputs), []bool{ce.inputs[0].OfferTools, ce.inputs[1].OfferTools})
	}
}

func TestChatIdenticalOutputGuard(t *testing.T) {
	ce := newChatEnv(t, []llm.Message{toolCall("c1"), toolCall("c2"), {Role: "assistant", Content: "Done"}},
		func(in activities.SearchInput) activities.SearchResult {
			r := found(in)
			r.Hash = "same"
			return r
		})
	in := chatInput()
	in.MaxIterations, in.MaxEmpty = 10, 5
	ce.run(t, in)
	// The second identical result sets the empty counter to its maximum.
	if len(ce.inputs) != 3 || ce.inputs[2].OfferTools {
		t.Fatalf("calls %d", len(ce.inputs))
	}
}

// runFailingModel runs a turn whose model call fails with modelErr and
// returns the log and what was stored.
func runFailingModel(t *testing.T, modelErr error) (EventsPage, activities.PersistInput) {
	t.Helper()
	return runModel(t, func(*testsuite.TestWorkflowEnvironment, context.Context, activities.ModelTurnInput) (activities.ModelTurnResult, error) {
		return activities.ModelTurnResult{}, modelErr
	})
}

// runModel runs a turn whose model calls are model (env is the run's test
// environment) and returns the log and what was stored.
func runModel(t *testing.T, model func(*testsuite.TestWorkflowEnvironment, context.Context, activities.ModelTurnInput) (activities.ModelTurnResult, error)) (EventsPage, activities.PersistInput) {
	t.Helper()
	env, a := activityEnv[activities.Chat]()
	env.OnActivity(a.ModelTurn, mock.Anything, mock.Anything).Return(
		func(ctx context.Context, in activities.ModelTurnInput) (activities.ModelTurnResult, error) {
			return model(env, ctx, in)
		})
	var persisted activities.PersistInput
	env.OnActivity(a.Persist, mock.Anything, mock.Anything).Return(func(ctx context.Context, in activities.PersistInput) (activities.PersistResult, error) {
		persisted = in
		return activities.PersistResult{Messages: 2}, nil
	})
	env.OnActivity(a.Summarize, mock.Anything, mock.Anything).Return(false, nil)
	executeChat(env, nil, chatInput())
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	v, err := env.QueryWorkflow(QueryEvents, 0)
	if err != nil {
		t.Fatal(err)
	}
	var p EventsPage
	if err := v.Get(&p); err != nil {
		t.Fatal(err)
	}
	return p, persisted
}

func TestChatModelErrorEndsWithNoticeAndCompleted(t *testing.T) {
	p, persisted := runFailingModel(t, temporal.NewNonRetryableApplicationError("connection refused", "X", errors.New("down")))
	last := string(p.Events[len(p.Events)-1].Data)
	notice := string(p.Events[len(p.Events)-2].Data)
	if !strings.Contains(last, "response.completed") || !strings.Contains(notice, "System Error: connection refused") {
		t.Fatalf("events: %s / %s", notice, last)
	}
	if !strings.Contains(persisted.Final, "System Error") {
		t.Fatalf("persisted %+v", persisted)
	}
}

// A reader in the worker's process: the model calls run as local activities
// and the run's own events reach the hub with their log sequence numbers.
// Another reader keeps scheduled activities.
func TestChatLocalReaderRunsModelCallsLocallyAndPublishesOwnEvents(t *testing.T) {
	for _, tc := range []struct {
		reader string
		local  bool
	}{{"proc-a", true}, {"proc-b", false}, {"", false}} {
		ce := newChatEnv(t, []llm.Message{toolCall("c1"), {Role: "assistant", Content: "Answer [1]"}}, found)
		hub := streamhub.New(time.Minute)
		hub.ID = "proc-a"
		ce.hub = hub
		ce.env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "chat-hub-test"})
		in := chatInput()
		in.ThreadID = "auto-local-" + tc.reader
		in.Reader = tc.reader
		types := ce.run(t, in)
		if len(ce.local) != 2 || ce.local[0] != tc.local || ce.local[1] != tc.local {
			t.Fatalf("reader %q: local activity per model call %v, want %v", tc.reader, ce.local, tc.local)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		got := hub.Wait(ctx, "chat-hub-test", 0)
		cancel()
		want := []string{"response.created", "response.tool_call.started", "response.tool_call.completed", "response.knowledge_sources", "response.completed"}
		if strings.Join(types, ",") != strings.Join(want, ",") || len(got) != len(want) {
			t.Fatalf("log %v, hub %d events", types, len(got))
		}
		for i, e := range got {
			if e.Seq != i+1 || e.Origin != "" || !strings.Contains(string(e.Data), want[i]) {
				t.Fatalf("hub event %d: %+v", i, e)
			}
		}
	}
}

// A model call that reached the stream deadline carries what it streamed in
// its error: the log keeps it, then the timeout notice; a call stopped because
// the reader left ends the run without a notice.
func TestChatModelDeadlineAndClientGone(t *testing.T) {
	for _, tc := range []struct {
		typ    string
		notice string
	}{{activities.ErrStreamTimeout, TimeoutNotice}, {activities.ErrClientGone, ""}} {
		delta, _ := json.Marshal(map[string]any{"type": "response.output_text.delta", "delta": "Partial"})
		p, persisted := runFailingModel(t, temporal.NewNonRetryableApplicationError("stopped", tc.typ, errors.New("stopped"),
			activities.EventBatch{Attempt: 1, Events: []json.RawMessage{delta}, Origins: []string{"1/1/0"}}))
		var text strings.Builder
		for _, e := range p.Events {
			var x struct {
				Type  string `json:"type"`
				Delta string `json:"delta"`
			}
			_ = json.Unmarshal(e.Data, &x)
			text.WriteString(x.Delta)
			if strings.Contains(x.Delta, "System Error") {
				t.Fatalf("%s: error notice in %q", tc.typ, x.Delta)
			}
		}
		if want := "Partial" + tc.notice; text.String() != want || persisted.Final != want {
			t.Fatalf("%s: streamed %q, stored %q, want %q", tc.typ, text.String(), persisted.Final, want)
		}
		if p.Events[1].Origin != "1/1/0" || !strings.Contains(string(p.Events[len(p.Events)-1].Data), "response.completed") {
			t.Fatalf("%s: events %+v", tc.typ, p.Events)
		}
	}
}

// Rule 2 runs only when the stored thread can hold more messages than the
// trigger: a short thread skips the summarization step; an unknown count
// (nothing written by this attempt) does not.
func TestChatSummarizesOnlyLongThreads(t *testing.T) {
	for _, tc := range []struct {
		stored, calls int
	}{{3, 0}, {10, 0}, {11, 1}, {-1, 1}} {
		ce := newChatEnv(t, []llm.Message{{Role: "assistant", Content: "Hello"}}, found)
		ce.stored = tc.stored
		ce.run(t, chatInput()) // trigger 10
		if ce.summary != tc.calls {
			t.Fatalf("stored %d: summarize ran %d times, want %d", tc.stored, ce.summary, tc.calls)
		}
	}
}

// A scheduled model call whose first attempt streamed part of its answer and
// whose retry (its worker died mid-stream) streams again: the log keeps the
// first attempt's part once, drops the retry's events, and the turn ends
// with the error notice after that part, stored as streamed.
func TestChatRetriedModelCallIsNotStreamedTwice(t *testing.T) {
	delta := func(text string) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"type": "response.output_text.delta", "delta": text})
		return b
	}
	calls := 0
	p, persisted := runModel(t, func(env *testsuite.TestWorkflowEnvironment, ctx context.Context, in activities.ModelTurnInput) (activities.ModelTurnResult, error) {
		calls++
		attempt := activity.GetInfo(ctx).Attempt
		env.SignalWorkflow(activities.SignalEvents, activities.EventBatch{Attempt: attempt,
			Events: []json.RawMessage{delta("Hel")}, Origins: []string{"1/" + string(rune('0'+attempt)) + "/0"}})
		if attempt == 1 {
			return activities.ModelTurnResult{}, errors.New("worker lost") // retryable
		}
		return activities.ModelTurnResult{Message: llm.Message{Role: "assistant", Content: "Hello"},
			Tail: activities.EventBatch{Attempt: attempt, Events: []json.RawMessage{delta("lo")}, Origins: []string{"1/2/1"}}}, nil
	})
	var text strings.Builder
	for _, e := range p.Events {
		var x struct {
			Delta string `json:"delta"`
		}
		_ = json.Unmarshal(e.Data, &x)
		text.WriteString(x.Delta)
	}
	want := "Hel" + ErrorNoticePrefix + errRetriedMidStream + "]"
	if calls != 2 || text.String() != want || persisted.Final != want {
		t.Fatalf("%d calls; streamed %q, stored %q, want %q", calls, text.String(), persisted.Final, want)
	}
}

// TestChatTotalTimeIsOnTheRealClock: the workflow clock stands still inside a
// workflow task, so a total taken from it came out smaller than the turn's
// own time to first token; the total is at least the model calls' real-clock
// end (recorded in their results), in the trace event and the stored turn.
func TestChatTotalTimeIsOnTheRealClock(t *testing.T) {
	ce := newChatEnv(t, []llm.Message{toolCall("c1"), {Role: "assistant", Content: "answer [1]"}}, found)
	ce.timing = &activities.ModelTurnResult{FirstDeltaMs: 4000, FirstTextMs: 4500, EndMs: 6000}
	in := chatInput()
	in.ShowTrace = true
	in.StartedAtMs = ce.env.Now().UnixMilli()
	ce.run(t, in)
	p := ce.log(t)
	var trace struct {
		Type  string `json:"type"`
		Trace struct {
			TTFB       float64 `json:"ttfb"`
			FirstToken float64 `json:"first_token"`
			Total      float64 `json:"total"`
		} `json:"trace"`
	}
	for _, e := range p.Events {
		if strings.Contains(string(e.Data), `"response.pipeline_trace"`) {
			_ = json.Unmarshal(e.Data, &trace)
		}
	}
	if trace.Type == "" || trace.Trace.FirstToken != 4500 || trace.Trace.Total < 6000 || trace.Trace.Total < trace.Trace.FirstToken {
		t.Fatalf("trace %+v", trace)
	}
	if ce.persist == nil || ce.persist.TotalMs < 6000 {
		t.Fatalf("stored total %+v", ce.persist)
	}
	tr, _ := ce.persist.Extra["trace"].(map[string]any)
	var total float64
	switch v := tr["total"].(type) {
	case int64:
		total = float64(v)
	case float64:
		total = v
	}
	if total < 6000 {
		t.Fatalf("stored trace %v", tr)
	}
}

// A document that two searches of one turn both return is listed once, at
// its first number; when the answer cites its later number, that number is
// listed too, so every [n] of the answer resolves (issue 12). Numbers nobody
// cites, and numbers no search gave, are not added.
func TestChatCitedLaterNumberOfARepeatedDocumentIsListed(t *testing.T) {
	script := []llm.Message{toolCall("c1"), toolCall("c2"), {Role: "assistant", Content: "Install it [6]. See also [9]."}}
	ce := newChatEnv(t, script, found) // both searches return document 10
	in := chatInput()
	in.SourceOffset = 4
	ce.run(t, in)
	var got []string
	for _, s := range ce.persist.Sources {
		got = append(got, fmt.Sprintf("%d:%d", s.SourceIndex, s.DocumentID))
	}
	if strings.Join(got, ",") != "5:10,6:10" {
		t.Fatalf("sources %v, want [5] (first hit) and the cited [6] of document 10", got)
	}
	if ce.persist.SourceOffset != 6 {
		t.Fatalf("offset %d", ce.persist.SourceOffset)
	}
}

// The reference's client shows a search's chunk_count on the call's pill
// and the result's array (one passage per document) in its dialog, and on
// reload counts that array: chunk_count is the passages, not the fragments
// merged into them. A turn numbers its sources from 1 (its input's offset
// is 0), the next search after the last number of the first.
func TestChatToolCallCountsPassagesAndTurnNumbersFromOne(t *testing.T) {
	threeInOne := func(in activities.SearchInput) activities.SearchResult {
		r := found(in) // one document
		r.ChunkCount = 3
		return r
	}
	script := []llm.Message{toolCall("c1"), toolCall("c2"), {Role: "assistant", Content: "Install it [1]."}}
	ce := newChatEnv(t, script, threeInOne)
	ce.run(t, chatInput())
	var counts []int
	for _, e := range ce.log(t).Events {
		var ev struct {
			Type       string `json:"type"`
			ChunkCount int    `json:"chunk_count"`
		}
		_ = json.Unmarshal(e.Data, &ev)
		if ev.Type == "response.tool_call.completed" {
			counts = append(counts, ev.ChunkCount)
		}
	}
	if fmt.Sprint(counts) != "[1 1]" {
		t.Fatalf("chunk_count %v, want one passage per search", counts)
	}
	if len(ce.persist.Sources) != 1 || ce.persist.Sources[0].SourceIndex != 1 {
		t.Fatalf("sources %+v, want document 10 at [1]", ce.persist.Sources)
	}
	if turn := ce.inputs[2].Turn; turn[1].SourceStart != 1 || turn[3].SourceStart != 2 {
		t.Fatalf("tool messages numbered from %d and %d, want 1 and 2", turn[1].SourceStart, turn[3].SourceStart)
	}
}
