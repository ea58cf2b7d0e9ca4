package api

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/lorekb/lore/internal/chatevent"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
)

// startingEngine is a workflow engine whose start requests answer as a
// test scripts them: each start either starts the run (its events then
// appear in the log) or not, and answers with an error or none. A start
// after the run exists is refused as the engine does, "already started".
type startingEngine struct {
	*fakeLog
	script func(n int) (land bool, err error) // n: 1 for the first start

	mu      sync.Mutex
	starts  int
	started bool
}

func (e *startingEngine) ExecuteWorkflow(_ context.Context, o client.StartWorkflowOptions, _ any, _ ...any) (client.WorkflowRun, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.starts++
	if e.started {
		return nil, serviceerror.NewWorkflowExecutionAlreadyStarted("workflow execution already started", "", "r1")
	}
	land, err := e.script(e.starts)
	if land {
		e.started = true
		e.add(turnEvents("t", "the answer")...)
	}
	return nil, err
}

// GetWorkflow is how a turn's token budget waits for its run: at once.
func (e *startingEngine) GetWorkflow(context.Context, string, string) client.WorkflowRun {
	return endedRun{}
}

type endedRun struct{ client.WorkflowRun }

func (endedRun) Get(context.Context, any) error { return nil }

// TestChatStreamFollowsARunWhoseStartAnswerWasLost: an engine too busy to
// answer a start request in time (the SDK gives one 10 s) may still have
// started the run. Its reader must follow that run, not end the stream with
// "could not start" while the turn runs, answers and is stored anyway; a
// start that surely failed still ends the stream with an error event before
// [DONE], and its notice is the stored answer.
func TestChatStreamFollowsARunWhoseStartAnswerWasLost(t *testing.T) {
	deadline := serviceerror.NewDeadlineExceeded("context deadline exceeded")
	for _, c := range []struct {
		name   string
		script func(n int) (bool, error)
		answer bool
		starts func(n int) bool
	}{
		{"started, its answer lost", func(int) (bool, error) { return true, deadline }, true,
			func(n int) bool { return n == 2 }},
		{"started, its stream reset", func(int) (bool, error) {
			return true, serviceerror.NewCanceled("stream terminated by RST_STREAM with error code: CANCEL")
		}, true, func(n int) bool { return n == 2 }},
		{"not started, the engine overloaded", func(n int) (bool, error) {
			if n == 1 {
				return false, serviceerror.NewResourceExhausted(0, "busy")
			}
			return true, nil
		}, true, func(n int) bool { return n == 2 }},
		{"never started", func(int) (bool, error) { return false, deadline }, false,
			func(n int) bool { return n > 2 }},
		{"refused", func(int) (bool, error) { return false, serviceerror.NewPermissionDenied("no", "") }, false,
			func(n int) bool { return n == 1 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, "sqlite", map[string]string{"CHAT_STREAM_TIMEOUT_SECONDS": "2"})
			site := saSite(h, "starts")
			eng := &startingEngine{fakeLog: newFakeLog(), script: c.script}
			h.d.Temporal = eng
			r := h.do("POST", clientPath+"/chat/responses", map[string]any{"input": "hello", "stream": true,
				"filter": map[string]any{"site_id": site.ID}}, "")
			raw := string(r.Raw)
			var types []chatevent.Type
			for _, line := range strings.Split(raw, "\n") {
				if data, ok := strings.CutPrefix(line, "data: "); ok && data != "[DONE]" {
					types = append(types, chatevent.Parse([]byte(data)).Type)
				}
			}
			if r.Status != 200 || !strings.HasSuffix(raw, "data: [DONE]\n\n") || len(types) < 2 || types[0] != chatevent.TypeCreated {
				t.Fatalf("stream: %d %s", r.Status, raw)
			}
			last := types[len(types)-1]
			var notices int
			if err := h.d.DB.NewSelect().Table("chat_messages").ColumnExpr("count(*)").
				Where("role = 'assistant' AND content LIKE '%could not start%'").Scan(t.Context(), &notices); err != nil {
				t.Fatal(err)
			}
			if c.answer {
				if !strings.Contains(raw, `"delta":"the answer"`) || last != chatevent.TypeCompleted || strings.Contains(raw, "response.error") {
					t.Fatalf("the run's answer, then response.completed, no error: %s", raw)
				}
				if notices != 0 {
					t.Fatal("a notice was stored for a turn that runs")
				}
			} else {
				if last != chatevent.TypeError || !strings.Contains(raw, "could not start the chat run") {
					t.Fatalf("an error event before [DONE]: %s", raw)
				}
				if notices != 1 {
					t.Fatalf("%d notices stored, want the turn's one", notices)
				}
				// Starts sent again for the stream's 2 s keep it open meanwhile.
				if c.name == "never started" && !strings.Contains(raw, "\n: keep-alive\n") {
					t.Fatalf("no keep-alive while the start was sent again: %s", raw)
				}
			}
			eng.mu.Lock()
			defer eng.mu.Unlock()
			if !c.starts(eng.starts) {
				t.Fatalf("%d start requests", eng.starts)
			}
		})
	}
}
