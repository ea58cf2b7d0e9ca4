package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/lorekb/lore/activities"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	tlog "go.temporal.io/sdk/log"
)

// importPhases splits one import's wall time into where it went, from the
// bench's clock and the workflow's history, so the report says what the
// fixed cost per file is made of.
type importPhases struct {
	post       time.Duration // POST documents:import until its answer (upload, store, workflow start)
	toFirstAct time.Duration // the answer until the first activity was scheduled
	acts       time.Duration // first activity scheduled until the last one completed
	afterActs  time.Duration // last activity completed until the workflow completed
	seen       time.Duration // the workflow completed until the bench's read of the job answered
	activities int
	actBusy    time.Duration // sum of the activities' own run time (started → completed)
	dispatch   time.Duration // sum of scheduled → started
	wfts       int
	events     int
	// CPU (user + system) over the whole import, from /proc: lore serve,
	// the Temporal server's process tree and the PostgreSQL backends of the
	// scratch database (pgOK false: not readable).
	loreCPU, temporalCPU, pgCPU time.Duration
	pgOK                        bool
	// machine is the whole machine's busy, idle and iowait CPU time over
	// the import (all cores): what the processes above leave unused.
	machine machineCPU
	// spans are the ImportBatch activities in the order they were
	// scheduled: when each started and ran, and its files and bytes.
	spans []actSpan
}

// actSpan is one batch activity of an import.
type actSpan struct {
	start, run time.Duration // started (after the first activity was scheduled), started → closed
	files      int
	bytes      int64
}

// spanText lists the batch activities as start+run ms (files, KB).
func (p *importPhases) spanText() string {
	var sb strings.Builder
	for i, s := range p.spans {
		if i > 0 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, "%d+%d ms (%d, %d KB)", s.start.Milliseconds(), s.run.Milliseconds(), s.files, s.bytes>>10)
	}
	return sb.String()
}

// importCPU is a reading of the CPU counters importPhases reports.
type importCPU struct {
	lore, temporal time.Duration
	pg             map[int]time.Duration
	machine        machineCPU
}

func (b *bench) readImportCPU(ctx context.Context) importCPU {
	return importCPU{lore: treeCPU(b.lore.Pid()), temporal: treeCPU(b.temporal.Pid()), pg: b.dbBackendsCPU(ctx), machine: readMachineCPU()}
}

// setCPU records the CPU used from c0 to c1.
func (p *importPhases) setCPU(c0, c1 importCPU) {
	p.loreCPU, p.temporalCPU = c1.lore-c0.lore, c1.temporal-c0.temporal
	p.pgCPU, p.pgOK = cpuSince(c0.pg, c1.pg)
	p.machine = c1.machine.sub(c0.machine)
}

func (p *importPhases) String() string {
	if p == nil {
		return "phases unknown"
	}
	pgText := "?"
	if p.pgOK {
		pgText = ms(p.pgCPU)
	}
	return fmt.Sprintf("POST (upload+start) %s; POST answered → first activity scheduled %s; activities %s (%d activities, busy %s summed, dispatch %s summed); "+
		"last activity → workflow closed %s; closed → job read by the bench %s; %d workflow tasks, %d events; CPU: lore %s, PostgreSQL %s, Temporal %s; the machine busy %s, idle %s, iowait %s; "+
		"batches (started+ran, files, size): %s",
		ms(p.post), ms(p.toFirstAct), ms(p.acts), p.activities, ms(p.actBusy), ms(p.dispatch), ms(p.afterActs), ms(p.seen), p.wfts, p.events,
		ms(p.loreCPU), pgText, ms(p.temporalCPU), ms(p.machine.busy), ms(p.machine.idle), ms(p.machine.iowait), p.spanText())
}

// waitWorkflow waits until the workflow id closes (whatever its outcome).
func (b *bench) waitWorkflow(ctx context.Context, id string) error {
	c, err := client.Dial(client.Options{HostPort: b.taddr, Logger: tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))})
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.GetWorkflow(ctx, id, "").Get(ctx, nil) // a failed import shows in the job the caller reads next
	return ctx.Err()
}

// readImportPhases reads the import workflow's history; answered is when the
// POST answered and seen when the bench saw the job completed.
func (b *bench) readImportPhases(ctx context.Context, id string, t0, answered, seen time.Time) (*importPhases, error) {
	c, err := client.Dial(client.Options{HostPort: b.taddr, Logger: tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	p := &importPhases{post: answered.Sub(t0)}
	var firstSched, lastDone, closed time.Time
	started := map[int64]time.Time{}
	sched := map[int64]time.Time{}
	span := map[int64]int{} // scheduled event id → index in p.spans
	it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			return nil, err
		}
		p.events++
		at := ev.EventTime.AsTime()
		switch ev.EventType {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			p.wfts++
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			p.activities++
			sched[ev.EventId] = at
			if firstSched.IsZero() {
				firstSched = at
			}
			if a := ev.GetActivityTaskScheduledEventAttributes(); a.GetActivityType().GetName() == "ImportBatch" {
				var in activities.ImportBatchInput
				if err := converter.GetDefaultDataConverter().FromPayloads(a.GetInput(), &in); err == nil {
					s := actSpan{files: len(in.Files)}
					for _, f := range in.Files {
						s.bytes += f.File.Size
					}
					span[ev.EventId] = len(p.spans)
					p.spans = append(p.spans, s)
				}
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			sid := ev.GetActivityTaskStartedEventAttributes().ScheduledEventId
			started[sid] = at
			p.dispatch += at.Sub(sched[sid])
			if i, ok := span[sid]; ok {
				p.spans[i].start = at.Sub(firstSched)
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED:
			sid := ev.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()
			if sid == 0 {
				sid = ev.GetActivityTaskFailedEventAttributes().GetScheduledEventId()
			}
			p.actBusy += at.Sub(started[sid])
			if i, ok := span[sid]; ok {
				p.spans[i].run = at.Sub(started[sid])
			}
			lastDone = at
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
			closed = at
		}
	}
	if !firstSched.IsZero() {
		p.toFirstAct = firstSched.Sub(answered)
		p.acts = lastDone.Sub(firstSched)
		p.afterActs = closed.Sub(lastDone)
	}
	p.seen = seen.Sub(closed)
	return p, nil
}
