package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lorekb/lore/bench/internal/env"
	"github.com/lorekb/lore/internal/chunk"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
)

// ingestLevel is one point of the ingestion curve.
type ingestLevel struct {
	target, docs  int
	label         string // the level's row in the report
	chunks        int64
	failed        int64
	elapsed       time.Duration
	jobs          int
	maxHistory    int64 // events of the longest batch job history
	storeBefore   int64 // chunks already in lore's store when the level began
	docsPS, chkPS float64
	// rssKB and hwmKB are lore's VmRSS and VmHWM (kB) when the level ended
	// (0: unreadable): the whole process's memory, not just the store's heap.
	rssKB, hwmKB int64
}

// procKB returns a /proc/<pid>/status size field (VmRSS, VmHWM) in kB, or 0
// when it cannot be read.
func procKB(pid int, field string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSuffix(procStatus(pid, field), " kB"), 10, 64)
	return n
}

// mib formats kB as MiB.
func mib(kb int64) string {
	if kb <= 0 {
		return "?"
	}
	return fmt.Sprintf("%.1f MiB", float64(kb)/1024)
}

// perChunk formats kB over chunks as bytes per chunk.
func perChunk(kb, chunks int64) string {
	if kb <= 0 || chunks <= 0 {
		return "?"
	}
	return fmt.Sprintf("%d B", kb*1024/chunks)
}

// ingestLevels parses -ingest.
func (o *options) ingestLevels() []int {
	var out []int
	for _, f := range strings.Split(o.ingest, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

// benchIngest vectorizes growing numbers of chunks through
// documents:batchVectorize jobs, each level in a new site on top of what the
// earlier levels left in lore's store, and reads the jobs' history lengths
// from Temporal: the ingestion curve.
//
// The first level is the base of the curve's ratio, and as the first job of
// a fresh lore lasting about a second it measured the cold start and the
// machine's noise more than the steady rate (515.8 to 2,435 documents/s
// across runs of one build). So a warm-up job of the first level's size runs
// first and is not counted, and the first level runs -ingest-reps times,
// each in a fresh site: its rate is the median, and every repetition is
// reported. The later levels run once, as before (they hold the earlier
// runs' chunks in the store, shown in "chunks in the store before").
func (b *bench) benchIngest(ctx context.Context) error {
	o := b.o
	levels := o.ingestLevels()
	if len(levels) == 0 {
		return nil
	}
	docs, _, err := b.corpusDocs(ctx)
	if err != nil {
		return err
	}
	// Chunks per corpus document, to size each level in documents.
	var perDoc []int
	for _, d := range docs {
		perDoc = append(perDoc, len(chunk.Split(d.Content, chunk.Options{Size: chunkSize, Overlap: chunkOverlap})))
	}
	tc, err := client.Dial(client.Options{HostPort: b.taddr, Logger: tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))})
	if err != nil {
		return err
	}
	defer tc.Close()
	var stored int64
	// runLevel vectorizes target chunks in a new site; run numbers the
	// copies' titles so that no two runs share a document.
	runLevel := func(run, target int, label string) (*ingestLevel, error) {
		lv := &ingestLevel{target: target, label: label, storeBefore: stored}
		siteID, err := b.api.createSite(ctx, fmt.Sprintf("Ingest %s %s", label, time.Now().Format("150405.000")))
		if err != nil {
			return nil, err
		}
		// Corpus documents over and over, each copy made distinct by its
		// title and a first line, until the level's chunk count.
		var rows []docRow
		now := time.Now().UTC()
		for n, i := 0, 0; n < target; i++ {
			d := docs[i%len(docs)]
			copyNo := i / len(docs)
			rows = append(rows, docRow{title: fmt.Sprintf("%s (%d.%d)", d.Title, run, copyNo),
				content: fmt.Sprintf("Copy %d of level %d.\n\n%s", copyNo, run, d.Content), created: now.Add(time.Duration(i) * time.Millisecond)})
			n += perDoc[i%len(docs)]
		}
		ids, err := b.insertDocs(ctx, siteID, rows)
		if err != nil {
			return nil, err
		}
		lv.docs = len(ids)
		logf("I: level %s: %d documents inserted in site %d; vectorizing", label, len(ids), siteID)
		b.vecSteps = nil
		t0 := time.Now()
		views, err := b.vectorizeViaAPI(ctx, ids, o.vecTimeout, true)
		if err != nil {
			return nil, err
		}
		lv.elapsed = time.Since(t0)
		lv.jobs = len(views)
		if err := b.pool.QueryRow(ctx, `SELECT COALESCE(SUM(chunk_count),0), count(*) FILTER (WHERE vector_status = 'failed') FROM documents WHERE site_id = $1`,
			siteID).Scan(&lv.chunks, &lv.failed); err != nil {
			return nil, err
		}
		stored += lv.chunks
		lv.rssKB, lv.hwmKB = procKB(b.lore.Pid(), "VmRSS"), procKB(b.lore.Pid(), "VmHWM")
		for _, id := range b.lastJobs {
			d, err := tc.DescribeWorkflowExecution(ctx, id, "")
			if err != nil {
				return nil, fmt.Errorf("describe %s: %w", id, err)
			}
			lv.maxHistory = max(lv.maxHistory, d.WorkflowExecutionInfo.HistoryLength)
		}
		lv.docsPS = float64(lv.docs) / lv.elapsed.Seconds()
		lv.chkPS = float64(lv.chunks) / lv.elapsed.Seconds()
		logf("I: level %s: %d documents, %d chunks, %d failed in %s: %.0f documents/s, %.0f chunks/s; %d jobs, longest history %d events; lore VmRSS %d kB (%s per stored chunk), VmHWM %d kB; load average %s",
			label, lv.docs, lv.chunks, lv.failed, lv.elapsed.Round(time.Millisecond), lv.docsPS, lv.chkPS, lv.jobs, lv.maxHistory,
			lv.rssKB, perChunk(lv.rssKB, stored), lv.hwmKB, env.LoadAvgNow())
		return lv, nil
	}
	var warm *ingestLevel
	run := 0
	if o.ingestWarmup {
		if warm, err = runLevel(run, levels[0], fmt.Sprintf("%d (warm-up, not counted)", levels[0])); err != nil {
			return err
		}
		run++
	}
	reps := max(1, o.ingestReps)
	var base []*ingestLevel // the first level's repetitions
	for r := 0; r < reps; r++ {
		label := fmt.Sprint(levels[0])
		if reps > 1 {
			label = fmt.Sprintf("%d (run %d of %d)", levels[0], r+1, reps)
		}
		lv, err := runLevel(run, levels[0], label)
		if err != nil {
			return err
		}
		run++
		base = append(base, lv)
	}
	first := medianLevel(base)
	if reps > 1 {
		logf("I: level %d: median of %d runs %.1f documents/s (runs: %s)", levels[0], reps, first.docsPS, rates(base))
	}
	out := []*ingestLevel{first}
	for _, target := range levels[1:] {
		lv, err := runLevel(run, target, fmt.Sprint(target))
		if err != nil {
			return err
		}
		run++
		out = append(out, lv)
	}

	s := b.rep.section("B. Ingestion curve: documents:batchVectorize at growing sizes",
		"Level (chunks)", "documents", "chunks", "failed", "batch jobs", "time", "documents/s", "chunks/s", "vs first level", "longest job history (events)", "chunks in the store before",
		"lore VmRSS after", "VmRSS per stored chunk", "lore VmHWM after")
	row := func(lv *ingestLevel) {
		s.row(lv.label, fmt.Sprint(lv.docs), fmt.Sprint(lv.chunks), fmt.Sprint(lv.failed), fmt.Sprint(lv.jobs),
			lv.elapsed.Round(time.Millisecond).String(), fmt.Sprintf("%.1f", lv.docsPS), fmt.Sprintf("%.0f", lv.chkPS),
			pct(lv.docsPS, first.docsPS), fmt.Sprint(lv.maxHistory), fmt.Sprint(lv.storeBefore),
			mib(lv.rssKB), perChunk(lv.rssKB, lv.storeBefore+lv.chunks), mib(lv.hwmKB))
	}
	if warm != nil {
		row(warm)
	}
	if len(base) > 1 {
		for _, lv := range base {
			row(lv)
		}
		s.row(fmt.Sprintf("%d (median of %d runs)", levels[0], len(base)), "", "", "", "", "", fmt.Sprintf("%.1f", first.docsPS), "", "100%", "", "", "", "", "")
	} else {
		row(first)
	}
	for _, lv := range out[1:] {
		row(lv)
	}
	s.note("Each level: corpus documents repeated (title and first line made distinct) until the chunk count, COPYed as published into a new site, then documents:batchVectorize in requests of %d ids (one job each), polled to completion. Levels run one after another into the same lore, so the last one indexes into a store that already holds the earlier levels' chunks.", o.batchMax)
	if warm != nil || len(base) > 1 {
		s.note("The base of the curve: %s; \"vs first level\" and the target compare with the median (spread of the runs: %s).",
			baseNote(warm != nil, levels[0], len(base)), spread(base))
	}
	s.note("History length from DescribeWorkflowExecution of every job of the level: one job holds at most %d documents in groups of 100 per activity, so its history does not grow with the level; more documents mean more jobs.", o.batchMax)
	s.note("lore's memory: VmRSS and VmHWM of the lore serve process from /proc right after the level's jobs completed; per stored chunk is VmRSS over all chunks in its embedded vector store (this level's plus the earlier levels'), so it counts everything the process holds (store heap, GC headroom, runtime, pools), not just the store's data structures.")
	last := out[len(out)-1]
	if len(out) < 2 {
		return nil
	}
	ceiling := fmt.Sprintf("%.1f documents/s (at %d chunks)", first.docsPS, first.target)
	if len(base) > 1 {
		ceiling = fmt.Sprintf("%.1f documents/s (at %d chunks, median of %d runs: %s)", first.docsPS, first.target, len(base), rates(base))
	}
	b.rep.check(check{part: "B", target: fmt.Sprintf("documents/s at %d chunks ≥ 80%% of %d chunks", last.target, first.target),
		figure: fmt.Sprintf("%.1f documents/s", last.docsPS), ceiling: ceiling,
		ratio: pct(last.docsPS, first.docsPS), pass: last.docsPS >= 0.8*first.docsPS && last.failed == 0})
	// Jobs are capped at -batch-max documents: once a level fills a job,
	// larger levels add jobs, not events.
	var earlier int64
	for _, lv := range append(append([]*ingestLevel(nil), base...), out[1:len(out)-1]...) {
		earlier = max(earlier, lv.maxHistory)
	}
	b.rep.check(check{part: "B", target: "batch job histories bounded (largest level's longest history ≤ 1.2× the earlier levels')",
		figure: fmt.Sprintf("%d events", last.maxHistory), ceiling: fmt.Sprintf("%d events (earlier levels)", earlier),
		pass: float64(last.maxHistory) <= 1.2*float64(earlier)+20})
	return nil
}

// medianLevel returns the repetition with the median rate (of an even
// number, the lower middle one's figures with the mean of the middle two as
// its rate), with failures and the longest history over all repetitions.
func medianLevel(reps []*ingestLevel) *ingestLevel {
	sorted := append([]*ingestLevel(nil), reps...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].docsPS < sorted[j].docsPS })
	m := *sorted[(len(sorted)-1)/2]
	if len(sorted)%2 == 0 {
		hi := sorted[len(sorted)/2]
		m.docsPS = (m.docsPS + hi.docsPS) / 2
		m.chkPS = (m.chkPS + hi.chkPS) / 2
	}
	for _, r := range reps {
		m.failed = max(m.failed, r.failed)
		m.maxHistory = max(m.maxHistory, r.maxHistory)
	}
	return &m
}

// rates lists the repetitions' documents/s in run order.
func rates(reps []*ingestLevel) string {
	var f []string
	for _, r := range reps {
		f = append(f, fmt.Sprintf("%.1f", r.docsPS))
	}
	return strings.Join(f, " / ")
}

// spread is the range of the repetitions' rates, also relative to their
// median.
func spread(reps []*ingestLevel) string {
	lo, hi := reps[0].docsPS, reps[0].docsPS
	for _, r := range reps {
		lo, hi = min(lo, r.docsPS), max(hi, r.docsPS)
	}
	return fmt.Sprintf("%.1f–%.1f documents/s, %s of the median", lo, hi, pct(hi-lo, medianLevel(reps).docsPS))
}

// baseNote says how the first level was measured.
func baseNote(warm bool, target, reps int) string {
	var parts []string
	if warm {
		parts = append(parts, fmt.Sprintf("a warm-up job of %d chunks in its own site first (not counted)", target))
	}
	if reps > 1 {
		parts = append(parts, fmt.Sprintf("then the %d-chunk level %d times, each in a fresh site, its rate the median of the runs", target, reps))
	}
	return strings.Join(parts, ", ")
}
