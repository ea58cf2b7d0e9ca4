package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/lorekb/lore/bench/internal/load"
	loreworker "github.com/lorekb/lore/worker"
	"github.com/lorekb/lore/workflows"
)

// The bare turn is the engine's own limit for a chat turn: a workflow of the
// chat run's shape (workflows/chatrun.go, chatlog.go) with trivial bodies,
// run by a worker in this process on its own task queue of the same
// Temporal server, started and read the way api/chat.go and
// api/chat_follow.go start and read a turn whose reader shares the worker's
// process. What it keeps of the turn:
//   - the start: eager (the first workflow task comes back in the start
//     response), the memo, summary and search attributes of a chat run
//     (workflows.JobMeta), the same ID reuse policy, no execution timeout;
//   - the run: the SideEffect that records the local choice, the event
//     log's query and update handlers and its signal channel, the agent in
//     its own coroutine, the tool-call model turn, the search, the answer
//     model turn, the closing events, the persist step, all of them local
//     activities of the first workflow task, as a Lore turn runs them (which
//     takes its versioned changes from its input: no version marker);
//   - the reader: every event the run and its model turns emit reaches the
//     reader through an in-process hub, as Lore's streamhub hands them over.
//
// The bodies do nothing but wait the scripted model's own time (its delay
// before the tool call, its delay and token pace for the answer): no HTTP,
// no database, no retrieval, so the turns/s of the same concurrency is what
// the engine and the SDK allow, and Lore's figure divided by it is what Lore
// adds.
const (
	bareQueue    = "lorebench-bare"
	bareWorkflow = "BareChatTurn"
	bareHubID    = "bench-bare"
)

// bareIn is the bare turn's input: what its bodies wait for.
type bareIn struct {
	Reader string
	Delay  time.Duration
	Tokens int
	TPS    float64
}

// bareModelIn is one model turn of the bare run.
type bareModelIn struct {
	Answer bool // the answer turn (streams tokens), else the tool-call turn
	Delay  time.Duration
	Tokens int
	TPS    float64
}

// bareEvent is what the hub hands the reader.
type bareEvent struct {
	kind string // created, act, tool, delta, completed
	at   time.Time
}

// bareHub hands each bare run's events to its reader in this process.
type bareHub struct {
	mu   sync.Mutex
	subs map[string]chan bareEvent
}

func (h *bareHub) open(id string) chan bareEvent {
	ch := make(chan bareEvent, 256)
	h.mu.Lock()
	h.subs[id] = ch
	h.mu.Unlock()
	return ch
}

func (h *bareHub) close(id string) {
	h.mu.Lock()
	delete(h.subs, id)
	h.mu.Unlock()
}

func (h *bareHub) publish(id, kind string) {
	h.mu.Lock()
	ch := h.subs[id]
	h.mu.Unlock()
	if ch != nil {
		select {
		case ch <- bareEvent{kind: kind, at: time.Now()}:
		default: // a reader that fell this far behind is not measured anyway
		}
	}
}

// bareActs are the bare run's local activities.
type bareActs struct{ hub *bareHub }

// ModelTurn waits the scripted model's time; the answer turn publishes
// each token as the model would stream it.
func (a *bareActs) ModelTurn(ctx context.Context, in bareModelIn) (int, error) {
	id := activity.GetInfo(ctx).WorkflowExecution.ID
	a.hub.publish(id, "act")
	t := time.NewTimer(in.Delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-t.C:
	}
	if !in.Answer {
		return 1, nil // one tool call
	}
	gap := time.Duration(float64(time.Second) / in.TPS)
	for i := range in.Tokens {
		if i > 0 {
			time.Sleep(gap)
		}
		a.hub.publish(id, "delta")
	}
	return 0, nil
}

// Search returns at once.
func (a *bareActs) Search(context.Context, int) (int, error) { return 3, nil }

// Persist returns at once.
func (a *bareActs) Persist(context.Context, int) (int, error) { return 2, nil }

// bareRun is the workflow; hub is nil in a replay.
func bareRun(hub *bareHub) func(workflow.Context, bareIn) (int, error) {
	return func(ctx workflow.Context, in bareIn) (int, error) {
		var local bool
		if err := workflow.SideEffect(ctx, func(workflow.Context) any { return in.Reader == bareHubID }).Get(&local); err != nil {
			return 0, err
		}
		events, done := 0, false
		emit := func(kind string) {
			events++
			if hub != nil && !workflow.IsReplaying(ctx) {
				hub.publish(workflow.GetInfo(ctx).WorkflowExecution.ID, kind)
			}
		}
		if err := workflow.SetQueryHandler(ctx, workflows.QueryEvents, func(from int) (int, error) { return events - from, nil }); err != nil {
			return 0, err
		}
		if err := workflow.SetUpdateHandler(ctx, workflows.UpdateWaitEvents, func(uctx workflow.Context, from int) (int, error) {
			_, _ = workflow.AwaitWithTimeout(uctx, 5*time.Second, func() bool { return events > from || done })
			return events - from, nil
		}); err != nil {
			return 0, err
		}
		sig := workflow.GetSignalChannel(ctx, "events")
		workflow.Go(ctx, func(g workflow.Context) {
			for {
				var n int
				if !sig.Receive(g, &n) {
					return
				}
				events += n
			}
		})
		emit("created")
		lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: 5 * time.Minute,
			RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 3}})
		var a *bareActs
		agentDone := false
		var agentErr error
		workflow.Go(ctx, func(g workflow.Context) {
			defer func() { agentDone = true }()
			var calls int
			if agentErr = workflow.ExecuteLocalActivity(lctx, a.ModelTurn, bareModelIn{Delay: in.Delay, Tokens: in.Tokens, TPS: in.TPS}).Get(g, &calls); agentErr != nil {
				return
			}
			emit("tool") // tool_call.started, decided by the turn's input (no version marker)
			var chunks int
			if agentErr = workflow.ExecuteLocalActivity(lctx, a.Search, calls).Get(g, &chunks); agentErr != nil {
				return
			}
			emit("tool")
			agentErr = workflow.ExecuteLocalActivity(lctx, a.ModelTurn, bareModelIn{Answer: true, Delay: in.Delay, Tokens: in.Tokens, TPS: in.TPS}).Get(g, nil)
		})
		if err := workflow.Await(ctx, func() bool { return agentDone }); err != nil {
			return 0, err
		}
		if agentErr != nil {
			return 0, agentErr
		}
		emit("sources")
		done = true
		emit("completed")
		var stored int
		_ = workflow.ExecuteLocalActivity(lctx, a.Persist, events).Get(ctx, &stored)
		_ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
		return events, nil
	}
}

// bareEngine is the bare turn's client and worker in this process.
type bareEngine struct {
	c   client.Client
	w   worker.Worker
	hub *bareHub
	seq atomic.Int64
}

func (b *bench) startBare() (*bareEngine, error) {
	c, err := client.Dial(client.Options{HostPort: b.taddr, Logger: tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))})
	if err != nil {
		return nil, err
	}
	e := &bareEngine{c: c, hub: &bareHub{subs: map[string]chan bareEvent{}}}
	// The options of Lore's worker (worker/worker.go) that matter for many
	// short turns.
	e.w = worker.New(c, bareQueue, bareWorkerOptions())
	e.w.RegisterWorkflowWithOptions(bareRun(e.hub), workflow.RegisterOptions{Name: bareWorkflow})
	e.w.RegisterActivity(&bareActs{hub: e.hub})
	if err := e.w.Start(); err != nil {
		c.Close()
		return nil, err
	}
	return e, nil
}

func (e *bareEngine) stop() {
	e.w.Stop()
	e.c.Close()
}

// bareTurn is one measured bare turn.
type bareTurn struct {
	firstAct time.Duration // start request → the first model turn's body runs
	first    time.Duration // start request → first answer token at the reader
	total    time.Duration // start request → completed at the reader
}

func (e *bareEngine) turn(ctx context.Context, o *options) (bareTurn, error) {
	id := fmt.Sprintf("bare-%d-%d", time.Now().UnixNano()%1_000_000_000, e.seq.Add(1))
	ch := e.hub.open(id)
	defer e.hub.close(id)
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	meta := workflows.JobMeta{Kind: workflows.KindChat, TenantID: 1, SiteID: 1, RequestedBy: "bench-member",
		Title: workflows.JobTitle("Chat turn 1 of thread", id, "Bench")}
	opts := client.StartWorkflowOptions{ID: id, TaskQueue: bareQueue, EnableEagerStart: true,
		WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowExecutionErrorWhenAlreadyStarted: true,
		Memo:                                     meta.Memo(), StaticSummary: meta.Title, TypedSearchAttributes: meta.SearchAttributes()}
	var t bareTurn
	t0 := time.Now()
	if _, err := e.c.ExecuteWorkflow(ctx, opts, bareWorkflow, bareIn{Reader: bareHubID, Delay: o.modelDelay, Tokens: o.tokens, TPS: o.tps}); err != nil {
		return t, err
	}
	for {
		select {
		case <-ctx.Done():
			return t, fmt.Errorf("bare turn %s: %w", id, ctx.Err())
		case ev := <-ch:
			switch ev.kind {
			case "act":
				if t.firstAct == 0 {
					t.firstAct = ev.at.Sub(t0)
				}
			case "delta":
				if t.first == 0 {
					t.first = ev.at.Sub(t0)
				}
			case "completed":
				t.total = ev.at.Sub(t0)
				if t.first == 0 {
					return t, fmt.Errorf("bare turn %s completed without a token", id)
				}
				return t, nil
			}
		}
	}
}

// bareLevel is conc clients, each running rounds bare turns one after
// another, as runChatLevel runs Lore's.
type bareLevel struct {
	conc, turns, errors int
	firstErr            string
	firstAct, over      load.Latencies
	elapsed             time.Duration
}

func (l *bareLevel) turnsPS() float64 { return float64(l.turns) / l.elapsed.Seconds() }

func (e *bareEngine) level(ctx context.Context, o *options, conc, rounds int) (*bareLevel, error) {
	lv := &bareLevel{conc: conc}
	var mu sync.Mutex
	var wg sync.WaitGroup
	fixed := 2 * o.modelDelay
	t0 := time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				if ctx.Err() != nil {
					return
				}
				t, err := e.turn(ctx, o)
				mu.Lock()
				if err != nil {
					lv.errors++
					if lv.firstErr == "" {
						lv.firstErr = err.Error()
					}
				} else {
					lv.turns++
					lv.firstAct = append(lv.firstAct, t.firstAct)
					lv.over = append(lv.over, t.first-fixed)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	lv.elapsed = time.Since(t0)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	lv.firstAct.Sort()
	lv.over.Sort()
	if lv.turns == 0 {
		return lv, fmt.Errorf("no bare turn succeeded at %d concurrent: %s", conc, lv.firstErr)
	}
	return lv, nil
}

// bareWorkerOptions are Lore's worker options (less its interceptors).
func bareWorkerOptions() worker.Options { return loreworker.Options() }

// settle waits (up to 20 s) until the Temporal server has been nearly idle
// (under 5% of a core) for half a second, so a level does not pay for the
// work the previous one left behind (visibility writes, task clean-up): the
// bare workflow and Lore each start from the same quiet server.
func (b *bench) settle(ctx context.Context) time.Duration {
	t0 := time.Now()
	for time.Since(t0) < 20*time.Second && ctx.Err() == nil {
		c0 := treeCPU(b.temporal.Pid())
		time.Sleep(500 * time.Millisecond)
		if treeCPU(b.temporal.Pid())-c0 < 25*time.Millisecond {
			break
		}
	}
	return time.Since(t0)
}
