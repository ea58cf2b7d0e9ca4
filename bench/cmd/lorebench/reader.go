package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lorekb/lore/bench/internal/gen"
	"github.com/lorekb/lore/bench/internal/load"
	"github.com/lorekb/lore/workflows"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
)

// Part R (reader): the budgets of the pages `lore serve` shows people.
//   - Reader pages (home, a site's page, a document page) at readerConns
//     concurrent readers: p50 server time under 20 ms. Server time is the
//     X-Process-Time header lore sets on every response (the handler chain,
//     the page's in-process API calls and template included; not the
//     socket), beside the client latency on loopback, which bounds it.
//   - A reader page's first load: the HTML and every script, style and image
//     it references (modules their imports, styles their url()s), as served
//     to a browser asking for gzip, under 200 KB.
//   - The console's job page follows GET /jobs/{id}:watch: a progress change
//     (seen by querying the workflow directly every watchPoll) must reach
//     the watch stream within 1 s.
const (
	readerConns = 20
	readerDocs  = 200
	readerCols  = 10
	readerSize  = 4096
	watchPoll   = 50 * time.Millisecond
)

func (b *bench) benchReader(ctx context.Context) error {
	o := b.o
	slug := fmt.Sprintf("reader-bench-%d", time.Now().UnixNano()%1e9)
	var st struct {
		ID int64 `json:"id"`
	}
	if err := b.api.Call(ctx, http.MethodPost, "/admin/api/v1/sites", map[string]any{"name": "Reader bench", "slug": slug,
		"description": "The reader benchmark's site."}, &st); err != nil {
		return err
	}
	ids, err := b.readerDocs(ctx, st.ID)
	if err != nil {
		return err
	}
	pages := []struct{ name, goal, route, path string }{
		{"home", "reader-home", "/", "/"},
		{"site page", "reader-site", "/s/{slug}", "/s/" + slug},
		{"document page", "reader-doc", "/s/{slug}/d/{id}", "/s/" + slug + "/d/" + strconv.FormatInt(ids[0], 10)},
	}
	s := b.rep.section(fmt.Sprintf("R. Reader pages (%d readers, %s each after %s warm-up) and the console's job watch", readerConns, o.duration, o.warmup),
		"Page", "readers", "req/s", "server time p50", "server time p99", "client p50", "client p99", "requests", "errors")
	row := func(name string, conns int, r load.Result, srv load.Latencies) {
		s.row(name, fmt.Sprint(conns), fmt.Sprintf("%.0f", r.RPS()), ms(srv.Percentile(50)), ms(srv.Percentile(99)),
			ms(r.Lat.Percentile(50)), ms(r.Lat.Percentile(99)), fmt.Sprint(r.Requests), fmt.Sprint(r.Errors))
	}

	// Server time under load; /health as the reference row.
	health, healthSrv, err := b.timedRun(ctx, readerConns, func(*rand.Rand) string { return b.base + "/health" })
	if err != nil {
		return err
	}
	row("GET /health (reference)", readerConns, health, healthSrv)
	for _, p := range pages {
		next := func(*rand.Rand) string { return b.base + p.path }
		if p.goal == "reader-doc" {
			next = func(rng *rand.Rand) string {
				return fmt.Sprintf("%s/s/%s/d/%d", b.base, slug, ids[rng.IntN(len(ids))])
			}
		}
		// One reader first: the page's own cost, without queueing for
		// the CPUs.
		one, oneSrv, err := b.timedRun(ctx, 1, next)
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		row("GET "+p.route+" ("+p.name+")", 1, one, oneSrv)
		r, srv, err := b.timedRun(ctx, readerConns, next)
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		logf("R: %-14s %6.0f req/s  server p50 %s p99 %s  client p50 %s p99 %s  errors %d; one reader: server p50 %s", p.name, r.RPS(),
			ms(srv.Percentile(50)), ms(srv.Percentile(99)), ms(r.Lat.Percentile(50)), ms(r.Lat.Percentile(99)), r.Errors, ms(oneSrv.Percentile(50)))
		row("GET "+p.route+" ("+p.name+")", readerConns, r, srv)
		if r.Errors > 0 {
			s.note("%s: first error: %s", p.name, r.FirstErr)
		}
		if missing := r.Requests - len(srv); missing > 0 {
			s.note("%s: %d answers without X-Process-Time", p.name, missing)
		}
		p50 := srv.Percentile(50)
		b.partTarget("R", p.goal+"-p50", ms(p50)+" server time", "< 20 ms at 20 readers", p50 < 20*time.Millisecond && len(srv) > 0 && r.Errors == 0,
			ms(oneSrv.Percentile(50))+" (one reader); "+ms(healthSrv.Percentile(50))+" (/health)")
	}
	s.note("Site: %d published ~%d-byte generated Markdown documents in %d collections (the sidebar lists them all on the site and document pages); document pages at random ids, each counting a view.",
		len(ids), readerSize, readerCols)
	s.note("Server time is lore's X-Process-Time header (from its first middleware to the handler's return: the page's in-process Client API calls and its template included, the socket not); client latency is on loopback from this process, which shares the CPUs with lore.")

	// First load.
	var worst firstLoad
	for _, p := range pages {
		fl, err := b.firstLoad(ctx, b.base+p.path)
		if err != nil {
			return fmt.Errorf("%s first load: %w", p.name, err)
		}
		fl.page = p.name
		logf("R: %s first load: %d bytes in %d files (%s)", p.name, fl.bytes, len(fl.files), strings.Join(fl.files, ", "))
		s.note("First load of the %s: %s in %d files as served (%s): %s.", p.name, kb(fl.bytes), len(fl.files), fl.encodings(), strings.Join(fl.files, ", "))
		if fl.bytes > worst.bytes {
			worst = fl
		}
	}
	b.partTarget("R", "reader-first-load", kb(worst.bytes)+" ("+worst.page+")", "< 200 KB", worst.bytes < 200_000, "")

	// The job watch.
	wd, err := b.watchDelay(ctx)
	if err != nil {
		return err
	}
	logf("R: job watch: %d progress changes over %s; the watch showed them after %s (median), %s (worst)",
		len(wd.delays), wd.span.Round(time.Millisecond), ms(wd.delays.Percentile(50)), ms(wd.delays.Percentile(100)))
	s.note("Job watch: a batch vectorization of %d documents (groups of lore's LORE_BATCH_VECTORIZE_GROUP, default 100), its progress queried from Temporal every %s (query p50 %s) while GET /admin/api/v1/jobs/{id}:watch streams it; %d changes of the completed count over %s reached the stream %s after the query saw them (median; worst %s). The console's jobs and import pages redraw on each event; the browser test TestBrowserConsoleJobsLive measures the page itself.",
		wd.docs, watchPoll, ms(wd.query), len(wd.delays), wd.span.Round(time.Millisecond), ms(wd.delays.Percentile(50)), ms(wd.delays.Percentile(100)))
	worstDelay := wd.delays.Percentile(100)
	b.partTarget("R", "console-job-watch", fmt.Sprintf("%s worst, %s median over %d changes", ms(worstDelay), ms(wd.delays.Percentile(50)), len(wd.delays)),
		"every change < 1 s", len(wd.delays) >= 5 && worstDelay < time.Second, "500 ms (the watch's own tick)")
	if len(wd.delays) < 5 {
		s.note("Job watch: only %d changes: too few to judge (MISS).", len(wd.delays))
	}
	return nil
}

// readerDocs loads the reader site: readerCols collections (API) and
// readerDocs published documents spread over them (COPY).
func (b *bench) readerDocs(ctx context.Context, siteID int64) ([]int64, error) {
	cols := make([]int64, readerCols)
	for i := range cols {
		var c struct {
			ID int64 `json:"id"`
		}
		if err := b.api.Call(ctx, http.MethodPost, "/admin/api/v1/collections", map[string]any{"title": fmt.Sprintf("Chapter %d", i+1), "site_id": siteID}, &c); err != nil {
			return nil, err
		}
		cols[i] = c.ID
	}
	g := gen.New(7)
	docs := make([]docRow, readerDocs)
	base := time.Now().UTC().Add(-30 * 24 * time.Hour)
	for i := range docs {
		title := g.Title()
		docs[i] = docRow{title: title, content: g.Document(title, readerSize, false), summary: g.Summary(), created: base.Add(time.Duration(i) * time.Minute)}
	}
	ids, err := b.insertDocs(ctx, siteID, docs)
	if err != nil {
		return nil, err
	}
	for i, col := range cols {
		if _, err := b.pool.Exec(ctx, "UPDATE documents SET collection_id = $1 WHERE site_id = $2 AND id % $3 = $4", col, siteID, len(cols), i); err != nil {
			return nil, fmt.Errorf("place documents in collection %d: %w", col, err)
		}
	}
	return ids, nil
}

// serverTimer is a transport that records each answer's X-Process-Time.
type serverTimer struct {
	rt  *http.Transport
	col atomic.Pointer[load.Collector]
}

func (t *serverTimer) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := t.rt.RoundTrip(r)
	if err == nil {
		if v, perr := strconv.ParseFloat(res.Header.Get("X-Process-Time"), 64); perr == nil {
			t.col.Load().Add(time.Duration(v * float64(time.Second)))
		}
	}
	return res, err
}

func (t *serverTimer) CloseIdleConnections() { t.rt.CloseIdleConnections() }

// timedRun loads next from conns readers for -warmup (discarded), then for
// -duration (one reader: half of it), and returns the measured requests
// with their server times.
func (b *bench) timedRun(ctx context.Context, conns int, next load.URLFunc) (load.Result, load.Latencies, error) {
	plain := load.NewClient(conns, 30*time.Second)
	st := &serverTimer{rt: plain.Transport.(*http.Transport)}
	st.col.Store(&load.Collector{})
	c := &http.Client{Transport: st, Timeout: plain.Timeout}
	defer c.CloseIdleConnections()
	if _, err := load.Run(ctx, c, conns, 0, b.o.warmup, next); err != nil {
		return load.Result{}, nil, err
	}
	measured := &load.Collector{}
	st.col.Store(measured)
	dur := b.o.duration
	if conns == 1 {
		dur /= 2
	}
	r, err := load.Run(ctx, c, conns, 0, dur, next)
	return r, measured.Sorted(), err
}

// firstLoad is what a browser fetches to show a page the first time.
type firstLoad struct {
	page  string
	bytes int64    // as served (compressed when the server compressed)
	files []string // path and size of each file
	enc   map[string]int
}

func (f firstLoad) encodings() string {
	var parts []string
	for e, n := range f.enc {
		parts = append(parts, fmt.Sprintf("%d %s", n, e))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

func kb(n int64) string { return fmt.Sprintf("%.1f KB (%d bytes)", float64(n)/1000, n) }

// firstLoad fetches page and, breadth first, every same-origin file it
// references, as a browser asking for gzip would, and sums the bytes served.
func (b *bench) firstLoad(ctx context.Context, page string) (firstLoad, error) {
	c := load.NewClient(1, 30*time.Second) // no transparent decompression: the bytes as served
	defer c.CloseIdleConnections()
	fl := firstLoad{enc: map[string]int{}}
	origin, err := url.Parse(page)
	if err != nil {
		return fl, err
	}
	seen := map[string]bool{page: true}
	queue := []string{page}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		req.Header.Set("Accept-Encoding", "gzip, deflate, br")
		res, err := c.Do(req)
		if err != nil {
			return fl, err
		}
		raw, err := io.ReadAll(io.LimitReader(res.Body, 16<<20))
		_ = res.Body.Close()
		if err != nil {
			return fl, err
		}
		if res.StatusCode != http.StatusOK {
			return fl, fmt.Errorf("GET %s: HTTP %d", u, res.StatusCode)
		}
		enc := res.Header.Get("Content-Encoding")
		body := raw
		if enc == "gzip" {
			zr, err := gzip.NewReader(bytes.NewReader(raw))
			if err != nil {
				return fl, fmt.Errorf("GET %s: %w", u, err)
			}
			if body, err = io.ReadAll(zr); err != nil {
				return fl, fmt.Errorf("GET %s: %w", u, err)
			}
		}
		if enc == "" {
			enc = "uncompressed"
		}
		fl.enc[enc]++
		fl.bytes += int64(len(raw))
		base, _ := url.Parse(u)
		fl.files = append(fl.files, fmt.Sprintf("%s %d B", base.Path, len(raw)))
		for _, ref := range references(res.Header.Get("Content-Type"), body) {
			r, err := base.Parse(ref)
			if err != nil || r.Host != origin.Host || r.Scheme != origin.Scheme {
				continue // data:, another origin: not this server's bytes
			}
			r.Fragment = ""
			if s := r.String(); !seen[s] {
				seen[s] = true
				queue = append(queue, s)
			}
		}
	}
	return fl, nil
}

var (
	htmlTag  = regexp.MustCompile(`(?is)<(script|link|img)\b[^>]*>`)
	htmlAttr = regexp.MustCompile(`(?is)\s(src|href|rel)\s*=\s*(?:"([^"]*)"|'([^']*)')`)
	jsImport = regexp.MustCompile(`(?m)(?:^|[;\s])(?:import|export)\s*(?:[\w*{}\s,$]+from\s*)?["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)`)
	cssURL   = regexp.MustCompile(`(?i)url\(\s*["']?([^"')]+)["']?\s*\)|@import\s+["']([^"']+)["']`)
)

// references lists the URLs a browser loads with a file of this type: an
// HTML page's scripts, stylesheets, icons and images; a module's imports; a
// stylesheet's url()s and @imports.
func references(contentType string, body []byte) []string {
	var out []string
	first := func(m []string) string {
		for _, s := range m[1:] {
			if s != "" {
				return s
			}
		}
		return ""
	}
	switch ct := strings.ToLower(contentType); {
	case strings.Contains(ct, "html"):
		for _, tag := range htmlTag.FindAllStringSubmatch(string(body), -1) {
			attrs := map[string]string{}
			for _, a := range htmlAttr.FindAllStringSubmatch(tag[0], -1) {
				attrs[strings.ToLower(a[1])] = html.UnescapeString(a[2] + a[3])
			}
			switch strings.ToLower(tag[1]) {
			case "script", "img":
				if attrs["src"] != "" {
					out = append(out, attrs["src"])
				}
			case "link":
				rel := " " + strings.ToLower(attrs["rel"]) + " "
				if attrs["href"] != "" && (strings.Contains(rel, " stylesheet ") || strings.Contains(rel, " icon ") || strings.Contains(rel, " modulepreload ")) {
					out = append(out, attrs["href"])
				}
			}
		}
	case strings.Contains(ct, "javascript"):
		for _, m := range jsImport.FindAllStringSubmatch(string(body), -1) {
			out = append(out, first(m))
		}
	case strings.Contains(ct, "css"):
		for _, m := range cssURL.FindAllStringSubmatch(string(body), -1) {
			out = append(out, first(m))
		}
	}
	return out
}

// watchDelays is the job watch measurement.
type watchDelays struct {
	docs   int
	delays load.Latencies // per change of the completed count: stream time − query time
	span   time.Duration  // first to last change
	query  time.Duration  // p50 of the progress queries
}

// watchDelay starts a batch vectorization of fresh documents and, while it
// runs, queries its progress from Temporal every watchPoll and reads its
// watch stream; each completed count the query sees is timed to the first
// stream event showing it (or more).
func (b *bench) watchDelay(ctx context.Context) (watchDelays, error) {
	n := 3000
	if b.o.quick {
		n = 600
	}
	wd := watchDelays{docs: n}
	siteID, err := b.api.createSite(ctx, "Reader bench watch "+time.Now().Format("150405.000"))
	if err != nil {
		return wd, err
	}
	g := gen.New(11)
	docs := make([]docRow, n)
	for i := range docs {
		title := g.Title()
		docs[i] = docRow{title: title, content: g.Document(title, 2048, false), summary: g.Summary(), created: time.Now().UTC()}
	}
	ids, err := b.insertDocs(ctx, siteID, docs)
	if err != nil {
		return wd, err
	}
	tc, err := client.Dial(client.Options{HostPort: b.taddr, Logger: tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))})
	if err != nil {
		return wd, err
	}
	defer tc.Close()
	var job struct {
		JobID string `json:"job_id"`
	}
	if err := b.api.Call(ctx, http.MethodPost, "/admin/api/v1/documents:batchVectorize", map[string]any{"document_ids": ids}, &job); err != nil {
		return wd, err
	}
	wctx, cancel := context.WithTimeout(ctx, b.o.vecTimeout)
	defer cancel()
	streamed := make(chan []progressMark, 1)
	go func() { streamed <- b.readWatch(wctx, job.JobID) }()

	var queried []progressMark
	var qlat load.Latencies
	last := -1
	for wctx.Err() == nil {
		t0 := time.Now()
		v, err := tc.QueryWorkflow(wctx, job.JobID, "", workflows.QueryProgress)
		if err == nil {
			qlat = append(qlat, time.Since(t0))
			var p workflows.Progress
			if v.Get(&p) == nil {
				if done := p.Completed + p.Failed; done != last {
					queried = append(queried, progressMark{done: done, at: time.Now()})
					last = done
				}
				if p.Done || p.Total > 0 && last == p.Total {
					break
				}
			}
		}
		time.Sleep(watchPoll)
	}
	var marks []progressMark
	select {
	case marks = <-streamed:
	case <-wctx.Done():
		return wd, fmt.Errorf("job %s: the watch did not end: %w", job.JobID, wctx.Err())
	}
	qlat.Sort()
	wd.query = qlat.Percentile(50)
	wd.delays = matchMarks(queried, marks)
	if len(queried) > 1 {
		wd.span = queried[len(queried)-1].at.Sub(queried[1].at)
	}
	return wd, nil
}

// progressMark is when a completed count was first seen.
type progressMark struct {
	done int
	at   time.Time
}

// matchMarks times each change the queries saw (the first, the job's
// starting count, is no change) to the first stream mark at or past it. A
// change the stream never showed counts as the time until the stream ended.
func matchMarks(queried, streamed []progressMark) load.Latencies {
	var out load.Latencies
	for _, q := range queried[min(1, len(queried)):] {
		var at time.Time
		for _, s := range streamed {
			if s.done >= q.done {
				at = s.at
				break
			}
		}
		if at.IsZero() && len(streamed) > 0 {
			at = streamed[len(streamed)-1].at
		}
		if !at.IsZero() {
			out = append(out, at.Sub(q.at))
		}
	}
	out.Sort()
	return out
}

// readWatch reads GET /jobs/{id}:watch to its end and returns when each
// completed count first showed in it.
func (b *bench) readWatch(ctx context.Context, jobID string) []progressMark {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.base+"/admin/api/v1/jobs/"+url.PathEscape(jobID)+":watch", nil)
	req.Header.Set("Authorization", "Bearer "+b.api.Token)
	req.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		logf("R: watch: %v", err)
		return nil
	}
	defer res.Body.Close()
	var marks []progressMark
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: ") && event == "progress":
			var v jobView
			if json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &v) == nil && v.Progress != nil {
				done := v.Progress.Completed + v.Progress.Failed
				if len(marks) == 0 || done > marks[len(marks)-1].done {
					marks = append(marks, progressMark{done: done, at: time.Now()})
				}
			}
		case line == "":
			event = ""
		}
	}
	return marks
}
