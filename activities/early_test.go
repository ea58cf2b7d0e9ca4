package activities

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/internal/llm"
	"github.com/lorekb/lore/internal/streamhub"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
)

// gatedModel streams its words one by one, each only once the gate lets it
// (a nil gate lets everything through), and counts calls and cancellations.
type gatedModel struct {
	words     []string
	gate      chan struct{}
	calls     atomic.Int32
	cancelled atomic.Int32
	mu        sync.Mutex
	reqs      []llm.Request
}

func (m *gatedModel) Generate(ctx context.Context, req llm.Request, onDelta func(llm.Delta)) (llm.Result, error) {
	m.calls.Add(1)
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	for _, w := range m.words {
		if m.gate != nil {
			select {
			case <-m.gate:
			case <-ctx.Done():
				m.cancelled.Add(1)
				return llm.Result{}, ctx.Err()
			}
		}
		onDelta(llm.Delta{Text: w})
	}
	return llm.Result{Message: llm.Message{Role: llm.RoleAssistant, Content: strings.Join(m.words, "")},
		Usage: llm.Usage{InputTokens: 7, OutputTokens: len(m.words)}}, nil
}

func userRequest(text string) llm.Request {
	return llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: text}}, Tools: []llm.ToolDef{searchTool}}
}

// inLocalActivity runs fn as a local activity of the test environment (first
// attempt, workflow id testWorkflowID).
func inLocalActivity(t *testing.T, fn func(ctx context.Context) error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	if _, err := env.ExecuteLocalActivity(fn); err != nil {
		t.Fatal(err)
	}
}

const testWorkflowID = "default-test-workflow-id"

// firstTurn is the input of a run's first model call.
var firstTurn = ModelTurnInput{ThreadID: "t", OfferTools: true}

// run generates through what adoptEarly returns and collects the text.
func generateVia(ctx context.Context, a *Chat, in ModelTurnInput, m llm.Model, req llm.Request) (string, llm.Result, error) {
	gen, _ := a.adoptEarly(ctx, in, m, "scripted", req)
	var b strings.Builder
	res, err := gen(ctx, req, func(d llm.Delta) { b.WriteString(d.Text) })
	return b.String(), res, err
}

func startEarlyWith(a *Chat, m llm.Model, req llm.Request) {
	a.startEarly(testWorkflowID, func(context.Context) (llm.Model, string, llm.Request, error) { return m, "scripted", req, nil })
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func TestEarlyCallIsAdoptedWithPiecesInOrder(t *testing.T) {
	a := &Chat{D: &deps.Deps{}, Hub: streamhub.New(time.Minute)}
	m := &gatedModel{words: []string{"a ", "b ", "c"}, gate: make(chan struct{})}
	req := userRequest("install?")
	startEarlyWith(a, m, req)
	m.gate <- struct{}{} // the first piece arrives before the run exists
	inLocalActivity(t, func(ctx context.Context) error {
		if id := activity.GetInfo(ctx).WorkflowExecution.ID; id != testWorkflowID {
			t.Fatalf("test workflow id %q", id)
		}
		go func() { m.gate <- struct{}{}; m.gate <- struct{}{} }()
		text, res, err := generateVia(ctx, a, firstTurn, m, req)
		if err != nil || text != "a b c" || res.Message.Content != "a b c" || res.Usage.OutputTokens != 3 {
			t.Fatalf("adopted call: text %q result %+v err %v", text, res, err)
		}
		return nil
	})
	if n := m.calls.Load(); n != 1 {
		t.Fatalf("the model was called %d times, want 1 (the early call, adopted)", n)
	}
	if a.takeEarly(testWorkflowID, nil) != nil {
		t.Fatal("an early call is left on the hub after adoption")
	}
}

func TestEarlyCallFinishedBeforeItsRunIsAdopted(t *testing.T) {
	a := &Chat{D: &deps.Deps{}, Hub: streamhub.New(time.Minute)}
	m := &gatedModel{words: []string{"x", "y"}}
	req := userRequest("q")
	startEarlyWith(a, m, req)
	waitFor(t, "the early call to finish", func() bool {
		e := a.takeEarly(testWorkflowID, nil)
		if e == nil {
			return false
		}
		a.Hub.Park(testWorkflowID, e)
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.done
	})
	inLocalActivity(t, func(ctx context.Context) error {
		text, _, err := generateVia(ctx, a, firstTurn, m, req)
		if err != nil || text != "xy" {
			t.Fatalf("text %q err %v", text, err)
		}
		return nil
	})
	if n := m.calls.Load(); n != 1 {
		t.Fatalf("%d model calls, want 1", n)
	}
}

// Any difference between what the early call sent and what the run's call
// would send, and any call but the first of a turn, discards the early call:
// it is cancelled and the activity calls the model itself.
func TestEarlyCallIsDiscardedUnlessTheSameFirstCall(t *testing.T) {
	later := firstTurn
	later.Turn = []TurnMessage{{Role: llm.RoleAssistant, Content: "searching"}}
	noTools := firstTurn
	noTools.OfferTools = false
	for name, c := range map[string]struct {
		in   ModelTurnInput
		req  llm.Request
		name string
	}{
		"different request":    {firstTurn, userRequest("changed meanwhile"), "scripted"},
		"different model name": {firstTurn, userRequest("q"), "other"},
		"not the first call":   {later, userRequest("q"), "scripted"},
		"tools not offered":    {noTools, userRequest("q"), "scripted"},
	} {
		t.Run(name, func(t *testing.T) {
			a := &Chat{D: &deps.Deps{}, Hub: streamhub.New(time.Minute)}
			m := &gatedModel{words: []string{"one"}, gate: make(chan struct{})}
			startEarlyWith(a, m, userRequest("q"))
			waitFor(t, "the early call to reach the model", func() bool { return m.calls.Load() == 1 })
			inLocalActivity(t, func(ctx context.Context) error {
				gen, _ := a.adoptEarly(ctx, c.in, m, c.name, c.req)
				go func() { m.gate <- struct{}{} }()
				var text strings.Builder
				if _, err := gen(ctx, c.req, func(d llm.Delta) { text.WriteString(d.Text) }); err != nil || text.String() != "one" {
					t.Fatalf("own call: %q %v", text.String(), err)
				}
				return nil
			})
			waitFor(t, "the early call to be cancelled", func() bool { return m.cancelled.Load() == 1 })
			if n := m.calls.Load(); n != 2 {
				t.Fatalf("%d model calls, want 2 (the discarded early call and the activity's own)", n)
			}
			m.mu.Lock()
			defer m.mu.Unlock()
			if got := m.reqs[1].Messages[0].Content; got != c.req.Messages[0].Content {
				t.Fatalf("the activity's own call sent %q", got)
			}
		})
	}
}

func TestEarlyCallNobodyAdoptsIsCancelled(t *testing.T) {
	a := &Chat{D: &deps.Deps{}, Hub: streamhub.New(time.Minute), EarlyWithin: 50 * time.Millisecond}
	m := &gatedModel{words: []string{"never"}, gate: make(chan struct{})}
	startEarlyWith(a, m, userRequest("q"))
	waitFor(t, "the unadopted call to be cancelled", func() bool { return m.cancelled.Load() == 1 })
	if a.takeEarly(testWorkflowID, nil) != nil {
		t.Fatal("the unadopted call is still registered")
	}
}

func TestCancelEarlyAndAdopterGoneCancelTheCall(t *testing.T) {
	a := &Chat{D: &deps.Deps{}, Hub: streamhub.New(time.Minute)}
	m := &gatedModel{words: []string{"w"}, gate: make(chan struct{})}
	startEarlyWith(a, m, userRequest("q"))
	waitFor(t, "the call to start", func() bool { return m.calls.Load() == 1 })
	Early{Chat: a}.Cancel(testWorkflowID) // the run did not start
	waitFor(t, "CancelEarly to cancel the call", func() bool { return m.cancelled.Load() == 1 })

	// Adopted, then the activity's context ends (client gone, deadline).
	startEarlyWith(a, m, userRequest("q"))
	waitFor(t, "the second call to start", func() bool { return m.calls.Load() == 2 })
	inLocalActivity(t, func(ctx context.Context) error {
		cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		_, _, err := generateVia(cctx, a, firstTurn, m, userRequest("q"))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("adopter gone: err %v", err)
		}
		return nil
	})
	waitFor(t, "the adopted call to be cancelled", func() bool { return m.cancelled.Load() == 2 })
}
