package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/lorekb/lore/bench/internal/gen"
	"github.com/lorekb/lore/bench/internal/load"
)

// scaleSite is one site of the scale part: its documents loaded and
// vectorized, then re-indexed as one job.
type scaleSite struct {
	id        int64
	docs      int
	chunks    int64
	load      time.Duration // COPY of the documents
	vectorize time.Duration // documents:batchVectorize → every job completed
	reindex   time.Duration // documents:reindex → the job completed
	reindexID string
	failed    int64
	docsPS    float64 // re-index rate
}

// benchScale is the 100,000-document part: a reference
// site of -scale-base documents and a site of -scale-docs documents are
// loaded and vectorized, each re-indexed as one job (the rates compared),
// the keyword list and the admin document list timed on the large site,
// and the large site deleted, with peak RSS of lore and of the Temporal
// server and the longest workflow history of every job.
func (b *bench) benchScale(ctx context.Context) error {
	o := b.o
	tc, err := client.Dial(client.Options{HostPort: b.taddr, Logger: tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))})
	if err != nil {
		return err
	}
	defer tc.Close()
	hist := map[string]int64{} // job → longest history of its runs
	var rss []string
	peak := func(when string) {
		line := fmt.Sprintf("%s: lore %s, Temporal dev server %s", when, procStatus(b.lore.Pid(), "VmHWM"), procStatus(b.temporal.Pid(), "VmHWM"))
		logf("S: peak RSS %s", line)
		rss = append(rss, line)
	}
	g := gen.New(7)
	var sites []*scaleSite
	for _, n := range []int{o.scaleBase, o.scaleDocs} {
		st, err := b.scaleSite(ctx, tc, g, n, hist)
		if err != nil {
			return err
		}
		sites = append(sites, st)
		peak(fmt.Sprintf("after the %d-document site's re-index", n))
	}
	small, large := sites[0], sites[1]

	// Lists on the large site: the client keyword list and the admin list
	// (first page and a deep one), one request at a time.
	kw := fmt.Sprintf("/v1/documents?site_id=%d&keyword=%s&size=10", large.id, url.QueryEscape(gen.Keyword))
	first := fmt.Sprintf("/admin/api/v1/documents?site_id=%d&page=1&size=20", large.id)
	deep := fmt.Sprintf("/admin/api/v1/documents?site_id=%d&page=%d&size=20", large.id, max(large.docs/20-1, 1))
	type timed struct {
		name, path string
		lat        load.Latencies
		total      int64
	}
	lists := []*timed{{name: "GET /v1/documents?keyword (client keyword list)", path: kw},
		{name: "GET /admin/api/v1/documents page 1, size 20", path: first},
		{name: fmt.Sprintf("GET /admin/api/v1/documents page %d, size 20 (deep)", max(large.docs/20-1, 1)), path: deep}}
	for _, l := range lists {
		for t0 := time.Now(); len(l.lat) < 20 && (len(l.lat) < 5 || time.Since(t0) < 15*time.Second); {
			var page struct {
				Pagination struct {
					Total int64 `json:"total"`
				} `json:"pagination"`
			}
			t := time.Now()
			if err := b.api.Call(ctx, http.MethodGet, l.path, nil, &page); err != nil {
				return fmt.Errorf("%s: %w", l.name, err)
			}
			l.lat = append(l.lat, time.Since(t))
			l.total = page.Pagination.Total
		}
		l.lat.Sort()
		logf("S: %s: p50 %s p99 %s over %d requests (total %d)", l.name, ms(l.lat.Percentile(50)), ms(l.lat.Percentile(99)), len(l.lat), l.total)
	}

	// Delete the large site: one job, polled to completion.
	var del struct {
		JobID string `json:"job_id"`
	}
	t0 := time.Now()
	if err := b.api.Call(ctx, http.MethodDelete, fmt.Sprintf("/admin/api/v1/sites/%d", large.id), nil, &del); err != nil {
		return err
	}
	if del.JobID == "" {
		return fmt.Errorf("site delete answered no job id")
	}
	if err := b.waitJob(ctx, del.JobID, 30*time.Minute); err != nil {
		return err
	}
	delTime := time.Since(t0)
	var left int64
	if err := b.pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM documents WHERE site_id = $1) + (SELECT count(*) FROM chunks WHERE site_id = $1)",
		large.id).Scan(&left); err != nil {
		return err
	}
	if err := b.histories(ctx, tc, del.JobID, hist); err != nil {
		return err
	}
	logf("S: site delete of %d documents, %d chunks: %s (rows left %d), history %d events", large.docs, large.chunks, delTime.Round(time.Millisecond), left, hist[del.JobID])
	peak("at the end")

	var longest int64
	var longestJob string
	for id, n := range hist {
		if n > longest {
			longest, longestJob = n, id
		}
	}

	s := b.rep.section(fmt.Sprintf("S. Scale: %d documents", large.docs),
		"Site", "documents", "chunks", "load (COPY)", "vectorize (batch jobs)", "re-index (one job)", "re-index documents/s", "vs the small site", "re-index history (longest run)")
	for _, st := range sites {
		s.row(fmt.Sprintf("%d documents", st.docs), fmt.Sprint(st.docs), fmt.Sprint(st.chunks), st.load.Round(time.Millisecond).String(),
			st.vectorize.Round(time.Millisecond).String(), st.reindex.Round(time.Millisecond).String(), fmt.Sprintf("%.1f", st.docsPS),
			pct(st.docsPS, small.docsPS), fmt.Sprint(hist[st.reindexID]))
	}
	s.note("Documents: generated Markdown of about %d bytes each (1%% carry the keyword %q), COPYed as published, vectorized with documents:batchVectorize (requests of %d ids), then re-indexed with POST /admin/api/v1/documents:reindex {site_id} (one job that pages through the site and continues as new), polled every 100 ms until completed. %d documents failed to re-index.",
		o.scaleDocSize, gen.Keyword, o.batchMax, small.failed+large.failed)
	for _, l := range lists {
		s.note("%s on the %d-document site: p50 %s, p99 %s over %d requests one at a time (total %d).", l.name, large.docs, ms(l.lat.Percentile(50)), ms(l.lat.Percentile(99)), len(l.lat), l.total)
	}
	s.note("Site delete (DELETE /admin/api/v1/sites/{id} → the job completed): %s for %d documents and %d chunks; rows left afterwards (documents + chunks): %d; its history %d events.",
		delTime.Round(time.Millisecond), large.docs, large.chunks, left, hist[del.JobID])
	s.note("Peak RSS (VmHWM, since the process started: it includes the earlier steps) — %s.", strings.Join(rss, "; "))
	s.note("Workflow histories: the longest run of every job of this part (batch vectorize, re-index runs across continue-as-new, site delete): %d events (%s), over %d jobs.", longest, longestJob, len(hist))

	b.rep.check(check{part: "S", target: fmt.Sprintf("re-index rate at %d documents within 20%% of the %d-document rate", large.docs, small.docs),
		figure: fmt.Sprintf("%.1f documents/s", large.docsPS), ceiling: fmt.Sprintf("%.1f documents/s (%d documents)", small.docsPS, small.docs),
		ratio: pct(large.docsPS, small.docsPS), pass: large.docsPS >= 0.8*small.docsPS && large.failed == 0})
	b.rep.check(check{part: "S", target: fmt.Sprintf("site delete of %d documents < 60 s", large.docs), figure: delTime.Round(time.Millisecond).String(),
		pass: delTime < 60*time.Second && left == 0})
	b.rep.check(check{part: "S", target: "no workflow history over 10,000 events", figure: fmt.Sprintf("%d events (%s)", longest, longestJob),
		pass: longest <= 10000})
	return nil
}

// scaleSite creates a site of n generated documents, loads and vectorizes
// them, and re-indexes the site as one job.
func (b *bench) scaleSite(ctx context.Context, tc client.Client, g *gen.Generator, n int, hist map[string]int64) (*scaleSite, error) {
	o := b.o
	st := &scaleSite{docs: n}
	var err error
	if st.id, err = b.api.createSite(ctx, fmt.Sprintf("Scale %d %s", n, time.Now().Format("150405.000"))); err != nil {
		return nil, err
	}
	rows := make([]docRow, n)
	base := time.Now().UTC().Add(-365 * 24 * time.Hour)
	for i := range rows {
		title := fmt.Sprintf("%s %d", g.Title(), i)
		rows[i] = docRow{title: title, content: g.Document(title, o.scaleDocSize, i%100 == 7), summary: g.Summary(),
			created: base.Add(time.Duration(i) * time.Second)}
	}
	t0 := time.Now()
	ids, err := b.insertDocs(ctx, st.id, rows)
	if err != nil {
		return nil, err
	}
	st.load = time.Since(t0)
	logf("S: %d documents loaded into site %d in %s; vectorizing", n, st.id, st.load.Round(time.Millisecond))
	t0 = time.Now()
	if _, err := b.vectorizeViaAPI(ctx, ids, o.vecTimeout, true); err != nil {
		return nil, err
	}
	st.vectorize = time.Since(t0)
	for _, id := range b.lastJobs {
		if err := b.histories(ctx, tc, id, hist); err != nil {
			return nil, err
		}
	}
	logf("S: %d documents vectorized in %s; re-indexing the site", n, st.vectorize.Round(time.Millisecond))

	var ref struct {
		JobID string `json:"job_id"`
	}
	t0 = time.Now()
	if err := b.api.Call(ctx, http.MethodPost, "/admin/api/v1/documents:reindex", map[string]any{"site_id": st.id}, &ref); err != nil {
		return nil, err
	}
	if err := b.waitJob(ctx, ref.JobID, o.vecTimeout); err != nil {
		return nil, err
	}
	st.reindex = time.Since(t0)
	st.reindexID = ref.JobID
	if err := b.histories(ctx, tc, ref.JobID, hist); err != nil {
		return nil, err
	}
	if err := b.pool.QueryRow(ctx, `SELECT COALESCE(SUM(chunk_count),0), count(*) FILTER (WHERE vector_status = 'failed') FROM documents WHERE site_id = $1`,
		st.id).Scan(&st.chunks, &st.failed); err != nil {
		return nil, err
	}
	st.docsPS = float64(n) / st.reindex.Seconds()
	logf("S: %d documents (%d chunks, %d failed) re-indexed in %s: %.1f documents/s; history %d events",
		n, st.chunks, st.failed, st.reindex.Round(time.Millisecond), st.docsPS, hist[ref.JobID])
	return st, nil
}

// waitJob polls GET /jobs/{id} until the job completed (an error when it
// ended otherwise or timeout passed).
func (b *bench) waitJob(ctx context.Context, id string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	last := time.Now()
	for {
		var v jobView
		if err := b.api.Call(ctx, http.MethodGet, "/admin/api/v1/jobs/"+id, nil, &v); err != nil {
			return err
		}
		switch v.Status {
		case "completed":
			return nil
		case "running", "":
		default:
			return fmt.Errorf("job %s ended %s: %s", id, v.Status, v.Error)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("job %s still running after %s", id, timeout)
		}
		if time.Since(last) > 15*time.Second && v.Progress != nil {
			logf("S: job %s: %d of %d documents done", id, v.Progress.Completed+v.Progress.Failed, v.Progress.Total)
			last = time.Now()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// histories records the longest history among the runs of workflow id
// (every run of a job that continued as new).
func (b *bench) histories(ctx context.Context, tc client.Client, id string, into map[string]int64) error {
	res, err := tc.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: fmt.Sprintf("WorkflowId = '%s'", id)})
	if err != nil {
		return fmt.Errorf("list runs of %s: %w", id, err)
	}
	for _, e := range res.Executions {
		into[id] = max(into[id], e.HistoryLength)
	}
	if len(res.Executions) == 0 {
		d, err := tc.DescribeWorkflowExecution(ctx, id, "")
		if err != nil {
			return fmt.Errorf("describe %s: %w", id, err)
		}
		into[id] = d.WorkflowExecutionInfo.HistoryLength
	}
	return nil
}
