package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/lorekb/lore/bench/internal/env"
	"github.com/lorekb/lore/bench/internal/load"
)

// openLoad is turns that arrive on their own schedule, each on its own
// client, whatever the earlier ones are doing (an open system, as visitors
// of a site are), unlike the levels' closed loop of clients that wait for
// their previous answer.
type openLoad struct {
	name        string
	rate        float64 // planned arrivals per second (0: a burst)
	started     int
	errors      int
	firstErr    string
	over        load.Latencies // first-token overhead
	created     load.Latencies
	arrivals    time.Duration // first → last arrival
	drained     time.Duration // first arrival → last turn ended
	maxInFlight int
	loadAvg     string
}

// runOpen starts one chat at each of the given offsets from now and waits
// for all of them.
func (b *bench) runOpen(ctx context.Context, c *http.Client, siteID int64, name string, rate float64, at []time.Duration) *openLoad {
	ol := &openLoad{name: name, rate: rate}
	var mu sync.Mutex
	var wg sync.WaitGroup
	inFlight := 0
	fixed := 2 * b.o.modelDelay
	t0 := time.Now()
	gate := make(chan struct{})
	for i, d := range at {
		if rate > 0 {
			if wait := time.Until(t0.Add(d)); wait > 0 {
				select {
				case <-ctx.Done():
				case <-time.After(wait):
				}
			}
		}
		if ctx.Err() != nil {
			break
		}
		ol.started++
		wg.Add(1)
		go func() {
			defer wg.Done()
			if rate == 0 {
				<-gate
			}
			mu.Lock()
			inFlight++
			ol.maxInFlight = max(ol.maxInFlight, inFlight)
			mu.Unlock()
			s, err := b.oneChat(ctx, c, siteID, fmt.Sprintf("open-%s-%d", name, i))
			mu.Lock()
			defer mu.Unlock()
			inFlight--
			if err != nil {
				ol.errors++
				if ol.firstErr == "" {
					ol.firstErr = err.Error()
				}
				return
			}
			ol.over = append(ol.over, s.first-fixed)
			ol.created = append(ol.created, s.created)
		}()
	}
	ol.arrivals = time.Since(t0)
	if rate == 0 {
		t0 = time.Now()
		close(gate) // every turn of the burst starts in the same instant
	}
	wg.Wait()
	ol.drained = time.Since(t0)
	ol.loadAvg = env.LoadAvgNow()
	ol.over.Sort()
	ol.created.Sort()
	return ol
}

// poissonOffsets are the arrival times of a Poisson process of the given
// rate over dur (exponential gaps), from a fixed seed so that runs compare.
func poissonOffsets(rate float64, dur time.Duration, seed uint64) []time.Duration {
	rng := rand.New(rand.NewPCG(seed, 0x10be))
	var out []time.Duration
	for t := 0.0; ; {
		t += rng.ExpFloat64() / rate
		d := time.Duration(t * float64(time.Second))
		if d >= dur {
			return out
		}
		out = append(out, d)
	}
}

// benchSteady is the steady-load part of the chat bench: turns arriving at
// a fixed Poisson rate for -chat-steady at 25%, 50% and 75% of Lore's own
// ceiling (the most turns/s of the closed-loop levels just measured), then a
// burst of -chat-burst turns in the same instant as a stress row.
func (b *bench) benchSteady(ctx context.Context, c *http.Client, siteID int64, ceiling float64, ceilingAt int) {
	o := b.o
	s := b.rep.section(fmt.Sprintf("C. Chat under steady load: Poisson arrivals for %s at a share of Lore's ceiling (%.1f turns/s, at %d concurrent above)", o.chatSteady, ceiling, ceilingAt),
		"Load", "arrivals (planned rate)", "errors", "first-token overhead p50 / p99", "response.created p50 / p99", "most turns in flight", "last turn ended after", "load average after")
	var half *openLoad
	for i, share := range []float64{0.25, 0.50, 0.75} {
		rate := share * ceiling
		at := poissonOffsets(rate, o.chatSteady, uint64(i+1))
		b.settle(ctx)
		logf("C: steady load at %.0f%% of the ceiling: %.1f turns/s for %s (%d arrivals; load average %s)", 100*share, rate, o.chatSteady, len(at), env.LoadAvgNow())
		ol := b.runOpen(ctx, c, siteID, fmt.Sprintf("steady%d", int(100*share)), rate, at)
		b.openRow(s, fmt.Sprintf("%.0f%% of the ceiling", 100*share), ol)
		if share == 0.50 {
			half = ol
		}
	}
	if o.chatBurst > 0 {
		at := make([]time.Duration, o.chatBurst)
		b.settle(ctx)
		logf("C: burst: %d turns in the same instant (load average %s)", o.chatBurst, env.LoadAvgNow())
		ol := b.runOpen(ctx, c, siteID, "burst", 0, at)
		b.openRow(s, fmt.Sprintf("burst of %d in the same instant (stress, not a target)", o.chatBurst), ol)
	}
	s.note("Before each rate and the burst the bench waits (up to 20 s) for the Temporal server to be idle, so a row does not pay for the backlog of the one before. Each arrival is a new chat (POST /v1/chat/responses, stream=true, a new thread) on its own connection, started at its planned time whatever the earlier ones are doing; the arrival times are a Poisson process (exponential gaps, fixed seed) of the planned rate. First-token overhead as in the chat table above (time to the first answer token − the model's fixed delays).")
	if half == nil {
		return
	}
	ok := half.errors == 0 && len(half.over) > 0
	b.target("chat-steady-50-p50", fmt.Sprintf("first-token overhead p50 %s at %.1f turns/s, %d errors", ms(half.over.Percentile(50)), half.rate, half.errors),
		"< 60 ms, zero errors, at 50% of Lore's ceiling", ok && half.over.Percentile(50) < 60*time.Millisecond,
		fmt.Sprintf("%.1f turns/s ceiling (closed loop, %d concurrent)", ceiling, ceilingAt))
	b.target("chat-steady-50-p99", fmt.Sprintf("first-token overhead p99 %s at %.1f turns/s, %d errors", ms(half.over.Percentile(99)), half.rate, half.errors),
		"< 150 ms, zero errors, at 50% of Lore's ceiling", ok && half.over.Percentile(99) < 150*time.Millisecond,
		fmt.Sprintf("%.1f turns/s ceiling (closed loop, %d concurrent)", ceiling, ceilingAt))
}

func (b *bench) openRow(s *section, label string, ol *openLoad) {
	planned := "same instant"
	if ol.rate > 0 {
		planned = fmt.Sprintf("%.1f/s planned, %.1f/s sent", ol.rate, float64(ol.started)/max(ol.arrivals.Seconds(), 1e-9))
	}
	logf("C: %s: %d turns, %d errors, first-token overhead p50 %s p99 %s, most in flight %d, drained after %s (load average %s)",
		label, ol.started, ol.errors, ms(ol.over.Percentile(50)), ms(ol.over.Percentile(99)), ol.maxInFlight, ol.drained.Round(time.Millisecond), ol.loadAvg)
	if ol.errors > 0 {
		logf("C:   first error: %s", ol.firstErr)
		s.note("%s: first error: %s", label, ol.firstErr)
	}
	s.row(label, fmt.Sprintf("%d (%s)", ol.started, planned), fmt.Sprint(ol.errors),
		ms(ol.over.Percentile(50))+" / "+ms(ol.over.Percentile(99)), ms(ol.created.Percentile(50))+" / "+ms(ol.created.Percentile(99)),
		fmt.Sprint(ol.maxInFlight), ol.drained.Round(time.Millisecond).String(), ol.loadAvg)
}

// target records a steady-load target in the report and prints it as one
// line a script can read (partTarget).
func (b *bench) target(name, figure, goal string, pass bool, ceiling string) {
	b.partTarget("C", name, figure, goal, pass, ceiling)
}

// partTarget records a target of a part in the report and prints it as one
// line a script can read: TARGET <name>: <figure> (<goal>) PASS|MISS.
func (b *bench) partTarget(part, name, figure, goal string, pass bool, ceiling string) {
	verdict := "MISS"
	if pass {
		verdict = "PASS"
	}
	fmt.Printf("TARGET %s%s: %s (%s) %s\n", name, b.rep.suffixName(), figure, goal, verdict)
	b.rep.check(check{part: part, target: name + ": " + goal, figure: figure, ceiling: ceiling, pass: pass})
}

// suffixName marks the target names of a run on the PostgreSQL-backed
// Temporal server (-temporal-pg), without spaces.
func (r *report) suffixName() string {
	if r.suffix != "" {
		return "-temporal-pg"
	}
	return ""
}
