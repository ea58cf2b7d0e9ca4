package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lorekb/lore/bench/internal/corpus"
	"github.com/lorekb/lore/bench/internal/load"
	"github.com/lorekb/lore/internal/convert"
	"github.com/lorekb/lore/internal/convert/builtin"
	"github.com/lorekb/lore/internal/convert/converttest"
)

// importFile is one file the import part sends.
type importFile struct {
	name string
	data []byte
}

// importSet is one kind of files: real documentation, or generated DOCX or
// PDF.
type importSet struct {
	name  string
	files []importFile
	bytes int
}

// importRun is one import through the API.
type importRun struct {
	elapsed    time.Duration // POST until the job completed (and, e2e, a search found a document)
	completed  int
	failed     int
	vectorized int
	reasons    []string
	phases     *importPhases // where the time went (nil: the history could not be read)
}

// genDocChars bounds the text of one generated DOCX or PDF file: a long
// manual chapter, not a whole manual (the PDF writer's time is not the
// point).
const genDocChars = 30000

// importSets reads nodejs-doc's api folder: its Markdown (*.md.gz) and HTML
// files as they ship (all.html, the concatenation of the others, left
// out), and DOCX and PDF files generated from the same Markdown.
func (b *bench) importSets(ctx context.Context) ([]importSet, string, error) {
	dir := b.o.corpusDir
	version := dir
	if dir == "" {
		root, v, err := corpus.Unpack(ctx, filepath.Join(b.work, "import-corpus"), "nodejs-doc")
		if err != nil {
			return nil, "", err
		}
		dir, version = filepath.Join(root, "usr/share/doc/nodejs/api"), v
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "*"))
	sort.Strings(paths)
	docs := importSet{name: "Markdown + HTML (nodejs-doc)"}
	var mdTexts []importFile
	for _, p := range paths {
		base := filepath.Base(p)
		var data []byte
		var err error
		switch {
		case strings.HasSuffix(base, ".md.gz"):
			data, err = gunzipFile(p)
			base = strings.TrimSuffix(base, ".gz")
		case strings.HasSuffix(base, ".md"):
			data, err = os.ReadFile(p)
		case strings.HasSuffix(base, ".html") && base != "all.html":
			data, err = os.ReadFile(p)
		default:
			continue
		}
		if err != nil {
			return nil, "", err
		}
		docs.files = append(docs.files, importFile{base, data})
		docs.bytes += len(data)
		if strings.HasSuffix(base, ".md") {
			mdTexts = append(mdTexts, importFile{base, data})
		}
	}
	if len(mdTexts) == 0 {
		return nil, "", fmt.Errorf("no Markdown files in %s", dir)
	}
	docx := importSet{name: fmt.Sprintf("DOCX (generated from the Markdown, ×%d)", genRepeat)}
	pdf := importSet{name: fmt.Sprintf("PDF (generated from the Markdown, ×%d)", genRepeat)}
	var gen []importFile // one DOCX and one PDF per Markdown file, then repeated
	for _, f := range mdTexts {
		blocks := markdownBlocks(string(f.data), genDocChars)
		stem := strings.TrimSuffix(f.name, ".md")
		p, err := converttest.PDFDocument(blocks)
		if err != nil {
			return nil, "", fmt.Errorf("generate %s.pdf: %w", stem, err)
		}
		gen = append(gen, importFile{stem + ".docx", converttest.WordDocument(blocks)}, importFile{stem + ".pdf", p})
	}
	for r := 1; r <= genRepeat; r++ {
		for _, f := range gen {
			name := f.name
			if r > 1 {
				name = fmt.Sprintf("%s-%d%s", strings.TrimSuffix(name, filepath.Ext(name)), r, filepath.Ext(name))
			}
			set := &pdf
			if strings.HasSuffix(name, ".docx") {
				set = &docx
			}
			set.files = append(set.files, importFile{name, f.data})
			set.bytes += len(f.data)
		}
	}
	return []importSet{docs, docx, pdf}, version, nil
}

// genRepeat is how often the generated DOCX and PDF files are sent (under
// other names): 64 of them convert in about 0.1 s (DOCX), so the one
// request, workflow start and final read of an import would be measured
// rather than its throughput.
const genRepeat = 4

func gunzipFile(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

var (
	mdHeadingRe = regexp.MustCompile(`^(#{1,6})\s+(.+)$`)
	mdInlineRe  = regexp.MustCompile("[`*_]|\\[([^\\]]*)\\]\\([^)]*\\)|<!--.*?-->")
)

// markdownBlocks turns Markdown into headings and paragraphs (code kept as
// paragraphs), up to max characters of text.
func markdownBlocks(md string, max int) []converttest.Block {
	var out []converttest.Block
	var para []string
	total := 0
	flush := func() {
		if len(para) > 0 {
			t := strings.Join(para, " ")
			out = append(out, converttest.Block{Text: t})
			total += len(t)
			para = nil
		}
	}
	for _, line := range strings.Split(md, "\n") {
		if total > max {
			break
		}
		t := strings.TrimSpace(mdInlineRe.ReplaceAllString(line, "$1"))
		switch m := mdHeadingRe.FindStringSubmatch(t); {
		case m != nil:
			flush()
			out = append(out, converttest.Block{Level: len(m[1]), Text: m[2]})
			total += len(m[2])
		case t == "" || strings.HasPrefix(t, "```"):
			flush()
		default:
			para = append(para, t)
		}
	}
	flush()
	return out
}

// convertLoop converts every file with the built-in converters in this
// process, with conc goroutines (1: a plain loop).
func convertLoop(ctx context.Context, files []importFile, conc int) (time.Duration, int, error) {
	reg := builtin.Registry()
	var mu sync.Mutex
	var firstErr error
	failed := 0
	next := make(chan importFile)
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := 0; i < conc; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range next {
				_, err := reg.Convert(ctx, convert.Input{Name: f.name, Data: f.data, Limits: convert.DefaultLimits})
				if err != nil {
					mu.Lock()
					failed++
					if !convert.Permanent(err) && firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for _, f := range files {
		next <- f
	}
	close(next)
	wg.Wait()
	return time.Since(t0), failed, firstErr
}

// importJobView is the part of an import job the bench reads.
type importJobView struct {
	Status   string `json:"status"`
	Error    string `json:"error"`
	Progress *struct {
		Completed int `json:"completed"`
		Failed    int `json:"failed"`
		Items     []struct {
			Status       string `json:"status"`
			Title        string `json:"title"`
			Reason       string `json:"reason"`
			VectorStatus string `json:"vector_status"`
		} `json:"items"`
	} `json:"progress"`
}

// importViaAPI uploads the files in one documents:import request and waits
// for the job; e2e publishes and vectorizes them and then waits until a
// retrieval for one document's title finds it.
func (b *bench) importViaAPI(ctx context.Context, set importSet, e2e bool) (*importRun, error) {
	siteID, err := b.api.createSite(ctx, fmt.Sprintf("Import %s %s", set.name, time.Now().Format("150405.000")))
	if err != nil {
		return nil, err
	}
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	_ = w.WriteField("site_id", strconv.FormatInt(siteID, 10))
	_ = w.WriteField("publish", strconv.FormatBool(e2e))
	_ = w.WriteField("auto_vectorize", strconv.FormatBool(e2e))
	for _, f := range set.files {
		fw, err := w.CreateFormFile("files", f.name)
		if err != nil {
			return nil, err
		}
		_, _ = fw.Write(f.data)
	}
	_ = w.Close()
	cpu0 := b.readImportCPU(ctx)
	t0 := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.base+"/admin/api/v1/documents:import", &body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+b.api.Token)
	res, err := b.api.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var env struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if res.StatusCode != http.StatusCreated || json.Unmarshal(raw, &env) != nil || env.Data.ID == "" {
		return nil, fmt.Errorf("documents:import: HTTP %d: %.300s", res.StatusCode, raw)
	}
	answered := time.Now()
	// The bench waits for the workflow with Temporal's long poll (it ends the
	// moment the import closes; polling GET /jobs/{id} every 50 ms added up to
	// 50 ms plus a workflow query per poll), then reads the job through the
	// API once: that answer must say completed.
	if err := b.waitWorkflow(ctx, env.Data.ID); err != nil {
		return nil, err
	}
	var v importJobView
	if err := b.api.Call(ctx, http.MethodGet, "/admin/api/v1/jobs/"+env.Data.ID, nil, &v); err != nil {
		return nil, err
	}
	seen := time.Now()
	cpu1 := b.readImportCPU(ctx)
	run := &importRun{}
	if ph, err := b.readImportPhases(ctx, env.Data.ID, t0, answered, seen); err != nil {
		logf("I: history of %s: %v", env.Data.ID, err)
	} else {
		ph.setCPU(cpu0, cpu1)
		run.phases = ph
	}
	if v.Status != "completed" || v.Progress == nil {
		return nil, fmt.Errorf("import job %s ended %s: %s", env.Data.ID, v.Status, v.Error)
	}
	run.completed, run.failed = v.Progress.Completed, v.Progress.Failed
	probe := ""
	for _, it := range v.Progress.Items {
		if it.Reason != "" && len(run.reasons) < 3 {
			run.reasons = append(run.reasons, it.Reason)
		}
		if it.VectorStatus == "completed" {
			run.vectorized++
			if probe == "" && len(it.Title) > 8 {
				probe = it.Title
			}
		}
	}
	if e2e {
		if probe == "" {
			return nil, fmt.Errorf("import job %s: no document was vectorized", env.Data.ID)
		}
		if err := b.waitSearchable(ctx, siteID, probe); err != nil {
			return nil, err
		}
	}
	run.elapsed = time.Since(t0)
	return run, nil
}

// waitSearchable retries a retrieval of the title until it finds chunks.
func (b *bench) waitSearchable(ctx context.Context, siteID int64, query string) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var out struct {
			Chunks []json.RawMessage `json:"chunks"`
		}
		if err := b.api.Call(ctx, http.MethodPost, "/admin/api/v1/documents:retrieve", map[string]any{"site_id": siteID, "query": query, "top_k": 1}, &out); err != nil {
			return err
		}
		if len(out.Chunks) > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("a retrieval of %q in site %d found nothing 2 minutes after the import", query, siteID)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// benchImport is part import: import throughput of real and
// generated files against converting the same files in this process. Each
// set runs -import-rounds rounds of the plain loop, the parallel loop and an
// import (drafts) one after another, so all three see the same machine; the
// figures are the rounds' medians, and the ratios' spread over the rounds is
// reported beside them. The end-to-end import (until searchable) runs once.
func (b *bench) benchImport(ctx context.Context) error {
	sets, version, err := b.importSets(ctx)
	if err != nil {
		return err
	}
	conc := b.importConcurrency()
	rounds := max(b.o.importRounds, 1)
	parName := fmt.Sprintf("loop×%d", conc)
	s := b.rep.section("I. Import: files converted and stored per second, against converting them in this process", "Files", "files", "MB", "run", "time", "files/s", "MB/s", "vs plain loop", "vs "+parName)
	for _, set := range sets {
		if !b.o.wantsImportSet(set.name) {
			continue
		}
		n, mb := float64(len(set.files)), float64(set.bytes)/1e6
		var plains, pars, imps load.Latencies
		var plainRatios, parRatios []float64
		var loopCPU time.Duration
		var runs []*importRun
		plainFailed := 0
		for r := 0; r < rounds; r++ {
			if waited, quiet := settle(ctx, 10*time.Second); !quiet {
				logf("I: %s: round %d: the machine was still busy after %s; measuring anyway", set.name, r+1, waited.Round(time.Millisecond))
			} else if waited > time.Second {
				logf("I: %s: round %d: waited %s for the machine to be quiet", set.name, r+1, waited.Round(time.Millisecond))
			}
			cpu0 := selfCPU()
			plain, failed, err := convertLoop(ctx, set.files, 1)
			loopCPU += selfCPU() - cpu0
			if err != nil {
				return fmt.Errorf("%s: plain loop: %w", set.name, err)
			}
			plainFailed = failed
			par, _, err := convertLoop(ctx, set.files, conc)
			if err != nil {
				return fmt.Errorf("%s: loop of %d: %w", set.name, conc, err)
			}
			run, err := b.importViaAPI(ctx, set, false)
			if err != nil {
				return fmt.Errorf("%s: %w", set.name, err)
			}
			logf("I: %s: round %d: loop %s, %s %s, import %s (%s of the plain loop, %s of the parallel one); phases: %s", set.name, r+1,
				plain.Round(time.Millisecond), parName, par.Round(time.Millisecond), run.elapsed.Round(time.Millisecond),
				pct(plain.Seconds(), run.elapsed.Seconds()), pct(par.Seconds(), run.elapsed.Seconds()), run.phases)
			plains, pars, imps = append(plains, plain), append(pars, par), append(imps, run.elapsed)
			plainRatios = append(plainRatios, plain.Seconds()/run.elapsed.Seconds())
			parRatios = append(parRatios, par.Seconds()/run.elapsed.Seconds())
			runs = append(runs, run)
		}
		e2e, err := b.importViaAPI(ctx, set, true)
		if err != nil {
			return fmt.Errorf("%s (end to end): %w", set.name, err)
		}
		plain, par, impT := median(plains), median(pars), median(imps)
		imp := runs[slices.Index(imps, impT)] // the round of the median import
		spread := func(r []float64) string { return fmt.Sprintf("%.0f–%.0f%%", 100*slices.Min(r), 100*slices.Max(r)) }
		logf("I: %s: %d files, %.1f MB, medians of %d rounds: loop %s, %s %s, import %s, until searchable %s", set.name, len(set.files), mb, rounds,
			plain.Round(time.Millisecond), parName, par.Round(time.Millisecond), impT.Round(time.Millisecond), e2e.elapsed.Round(time.Millisecond))
		// Where the median import's time went goes to the log: the report
		// keeps the figures.
		logf("I: %s: where the median round's import went (its workflow history and /proc): %s", set.name, imp.phases)
		s.note("%s, %d rounds: the import's ratio to the plain loop %s over the rounds (median of the ratios %.0f%%), to the %s %s; the 1-goroutine loop used %s of CPU per round (mean).",
			set.name, rounds, spread(plainRatios), 100*slices.Sorted(slices.Values(plainRatios))[(len(plainRatios)-1)/2], parName, spread(parRatios), ms(loopCPU/time.Duration(rounds)))
		row := func(run string, d time.Duration) {
			s.row(set.name, fmt.Sprint(len(set.files)), fmt.Sprintf("%.2f", mb), run, d.Round(time.Millisecond).String(),
				fmt.Sprintf("%.1f", n/d.Seconds()), fmt.Sprintf("%.2f", mb/d.Seconds()), pct(plain.Seconds(), d.Seconds()), pct(par.Seconds(), d.Seconds()))
		}
		row("plain loop, 1 goroutine", plain)
		row(fmt.Sprintf("loop, %d goroutines", conc), par)
		row("lore: documents:import → job completed", impT)
		row("lore: import + vectorize → searchable (one run)", e2e.elapsed)
		if imp.failed > 0 || plainFailed > 0 {
			s.note("%s: %d files failed in lore, %d in the loop (e.g. %s).", set.name, imp.failed, plainFailed, strings.Join(imp.reasons, "; "))
		}
		b.rep.check(check{part: "I", target: "import ≥ 60% of the plain conversion loop: " + set.name,
			figure:  fmt.Sprintf("%.1f files/s (%.2f MB/s; %s of the %s)", n/impT.Seconds(), mb/impT.Seconds(), pct(par.Seconds(), impT.Seconds()), parName),
			ceiling: fmt.Sprintf("%.1f files/s (plain loop)", n/plain.Seconds()), ratio: pct(plain.Seconds(), impT.Seconds()),
			pass: plain.Seconds() >= 0.6*impT.Seconds() && imp.failed == plainFailed})
	}
	s.note("Files: Debian package %s, usr/share/doc/nodejs/api: every *.md.gz (gunzipped) and *.html as shipped except all.html (the concatenation of the others); DOCX and PDF generated in the bench from each Markdown file (headings as Heading 1–3 styles / 20, 16, 13 pt bold, paragraphs; first %d characters of text each), each sent %d times under other names.", version, genDocChars, genRepeat)
	s.note("Loops: the built-in registry's Convert on the bytes in memory, lore idle, with 1 goroutine (the issue's plain loop, the target's reference) and with %d (LORE_IMPORT_CONCURRENCY, the files lore converts at once; on 2 cores it is the faster loop). Times are medians of %d rounds; each round starts once the machine is quiet (its cores idle ≥ 90%% over 500 ms, waiting at most 10 s: an earlier part's background work, such as PostgreSQL's autovacuum after the previous set's vectorization, would otherwise fall on the measurement) and runs both loops and then one import.", conc, rounds)
	s.note("lore: one multipart POST /admin/api/v1/documents:import with every file of the row (upload, store, files converted in batches per activity, at least two per slot and up to 32 files each; documents created as drafts, not vectorized); time from the request until the job completed (the bench waits on the import workflow with Temporal's long poll, then GET /jobs/{id} must report it completed). Searchable: the same with publish=true, auto_vectorize=true, until the job completed (every document vectorized by the import workflow) and POST documents:retrieve for a document's title returned a chunk.")
	return nil
}

// wantsImportSet reports whether -import-sets selects the set called name.
func (o *options) wantsImportSet(name string) bool {
	if o.importSets == "" {
		return true
	}
	for _, w := range strings.Split(o.importSets, ",") {
		if w = strings.TrimSpace(w); w != "" && strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// median is the median of a list of durations (nearest rank: the lower one
// of an even count); the list is left as it was.
func median(ds load.Latencies) time.Duration {
	l := slices.Clone(ds)
	l.Sort()
	return l.Percentile(50)
}

// importConcurrency is the lore process's LORE_IMPORT_CONCURRENCY (its
// default, 4, unless -lore-env sets it).
func (b *bench) importConcurrency() int {
	for _, kv := range b.o.loreEnv {
		if v, ok := strings.CutPrefix(kv, "LORE_IMPORT_CONCURRENCY="); ok {
			if n, err := strconv.Atoi(v); err == nil && n > 0 {
				return n
			}
		}
	}
	return 4
}
