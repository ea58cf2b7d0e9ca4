package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/lorekb/lore/bench/internal/load"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
)

// chatPhases reads the histories of the ChatRun workflows started since t0
// and splits the path to the answer turn into its steps, so a report says
// where the orchestration time goes.
type chatPhases struct {
	runs, events, wfts, signals, updates, timers       int
	start, wft1, dispatch1, model1, between, dispatch2 load.Latencies
}

func (b *bench) readChatPhases(ctx context.Context, t0 time.Time) (*chatPhases, error) {
	c, err := client.Dial(client.Options{HostPort: b.taddr, Logger: tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	q := fmt.Sprintf("WorkflowType = 'ChatRun' AND StartTime > '%s'", t0.UTC().Format(time.RFC3339Nano))
	var ids []string
	for tok := []byte(nil); ; {
		res, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: q, NextPageToken: tok})
		if err != nil {
			return nil, err
		}
		for _, e := range res.Executions {
			ids = append(ids, e.Execution.WorkflowId)
		}
		if tok = res.NextPageToken; len(tok) == 0 {
			break
		}
	}
	ph := &chatPhases{}
	for n, id := range ids {
		var evs []*historypb.HistoryEvent
		it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				return nil, err
			}
			evs = append(evs, ev)
		}
		at := func(ev *historypb.HistoryEvent) time.Time { return ev.EventTime.AsTime() }
		if n == 0 && len(evs) > 0 {
			var seq []string
			for _, ev := range evs {
				seq = append(seq, fmt.Sprintf("+%dms %s", at(ev).Sub(at(evs[0])).Milliseconds(),
					strings.TrimPrefix(ev.EventType.String(), "EVENT_TYPE_")))
			}
			logf("C: history of %s: %s", id, strings.Join(seq, ", "))
		}
		var started time.Time
		var apiStart int64
		var wftSched, wftDone time.Time
		var actSched []time.Time
		actStart := map[int64]time.Time{}
		actDone := map[int64]time.Time{}
		var schedIDs []int64
		for _, ev := range evs {
			ph.events++
			switch ev.EventType {
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
				ph.wfts++
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
				ph.signals++
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
				ph.updates++
			case enumspb.EVENT_TYPE_TIMER_STARTED:
				ph.timers++
			}
			switch ev.EventType {
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
				started = at(ev)
				if p := ev.GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads(); len(p) > 0 {
					var in struct{ StartedAtMs int64 }
					_ = json.Unmarshal(p[0].Data, &in)
					apiStart = in.StartedAtMs
				}
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
				if wftSched.IsZero() {
					wftSched = at(ev)
				}
			case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
				if wftDone.IsZero() {
					wftDone = at(ev)
				}
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
				if ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName() == "ModelTurn" {
					actSched = append(actSched, at(ev))
					schedIDs = append(schedIDs, ev.EventId)
				}
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
				actStart[ev.GetActivityTaskStartedEventAttributes().ScheduledEventId] = at(ev)
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
				actDone[ev.GetActivityTaskCompletedEventAttributes().ScheduledEventId] = at(ev)
			}
		}
		if apiStart == 0 {
			continue
		}
		ph.runs++
		ph.start = append(ph.start, started.Sub(time.UnixMilli(apiStart)))
		ph.wft1 = append(ph.wft1, wftDone.Sub(wftSched))
		if len(schedIDs) < 2 {
			continue // model calls ran as local activities, inside the workflow task
		}
		ph.dispatch1 = append(ph.dispatch1, actStart[schedIDs[0]].Sub(actSched[0]))
		ph.model1 = append(ph.model1, actDone[schedIDs[0]].Sub(actStart[schedIDs[0]]))
		ph.between = append(ph.between, actSched[1].Sub(actDone[schedIDs[0]]))
		ph.dispatch2 = append(ph.dispatch2, actStart[schedIDs[1]].Sub(actSched[1]))
	}
	for _, l := range []load.Latencies{ph.start, ph.wft1, ph.dispatch1, ph.model1, ph.between, ph.dispatch2} {
		l.Sort()
	}
	return ph, nil
}
