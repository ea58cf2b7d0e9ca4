package main

import (
	"math"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// TestBareTurnRunsTheChatShape: the bare turn runs its two model turns and
// the search as local activities, streams every answer token to its reader
// in this process, and ends after its closing events.
func TestBareTurnRunsTheChatShape(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	hub := &bareHub{subs: map[string]chan bareEvent{}}
	env.RegisterWorkflowWithOptions(bareRun(hub), workflow.RegisterOptions{Name: bareWorkflow})
	env.RegisterActivity(&bareActs{hub: hub})
	ch := hub.open("default-test-workflow-id")
	env.ExecuteWorkflow(bareWorkflow, bareIn{Reader: bareHubID, Delay: time.Millisecond, Tokens: 5, TPS: 1000})
	if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
		t.Fatalf("completed %v, error %v", env.IsWorkflowCompleted(), env.GetWorkflowError())
	}
	var events int
	if err := env.GetWorkflowResult(&events); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for len(ch) > 0 {
		counts[(<-ch).kind]++
	}
	// created, tool started, tool completed, sources, completed.
	if events != 5 || counts["act"] != 2 || counts["delta"] != 5 || counts["created"] != 1 || counts["completed"] != 1 {
		t.Fatalf("%d log events, hub events %v", events, counts)
	}
}

// TestPoissonOffsetsKeepTheRate: the arrivals of a planned rate come at that
// rate on average, in order, inside the duration, and the same seed gives the
// same schedule.
func TestPoissonOffsetsKeepTheRate(t *testing.T) {
	const rate, dur = 50.0, 200 * time.Second
	at := poissonOffsets(rate, dur, 1)
	if want := rate * dur.Seconds(); math.Abs(float64(len(at))-want) > 0.05*want {
		t.Fatalf("%d arrivals in %s at %.0f/s, want about %.0f", len(at), dur, rate, want)
	}
	for i := 1; i < len(at); i++ {
		if at[i] < at[i-1] || at[i] >= dur {
			t.Fatalf("arrival %d at %s after %s (duration %s)", i, at[i], at[i-1], dur)
		}
	}
	again := poissonOffsets(rate, dur, 1)
	if len(again) != len(at) || again[len(at)/2] != at[len(at)/2] {
		t.Fatal("the same seed gave another schedule")
	}
}
