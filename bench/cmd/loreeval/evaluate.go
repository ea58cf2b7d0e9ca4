package main

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// corpusDef is one corpus: the package it comes from and its question
// sets.
type corpusDef struct {
	name, lang string // "sqlite3-doc", "English"
	fetch      func(ctx context.Context, dir string) ([]file, string, error)
	questions  []question
	paraphrase []question // nil: none
	offTopic   []question
}

// corpusDefs are the corpora every run loads, in the report's order.
var corpusDefs = []corpusDef{
	{name: "nodejs-doc", lang: "English", fetch: englishCorpus, questions: english, paraphrase: nodejsParaphrase, offTopic: offTopicEnglish},
	{name: "sqlite3-doc", lang: "English", fetch: sqliteCorpus, questions: sqlite, paraphrase: sqliteParaphrase, offTopic: offTopicSQLite},
	{name: "manpages-zh", lang: "Chinese", fetch: func(ctx context.Context, dir string) ([]file, string, error) {
		return chineseCorpus(ctx, dir, logf)
	}, questions: chinese, offTopic: offTopicChinese},
	apacheDef(),
}

// findDef is the corpus of a name; a work directory kept before the corpora
// had names gives its language ("English" was nodejs-doc).
func findDef(name, lang string) (corpusDef, bool) {
	if name == "" {
		name = map[string]string{"English": "nodejs-doc", "Chinese": "manpages-zh"}[lang]
	}
	for _, d := range corpusDefs {
		if d.name == name {
			return d, true
		}
	}
	return corpusDef{}, false
}

// evalSet is one question set, a row group of the report: a corpus's
// questions (with its off-topic ones) or its paraphrase subset.
type evalSet struct {
	name, corpus, lang string
	paraphrase         bool
	questions          []question
	offTopic           []question
}

// sets are the question sets of a corpus.
func (d corpusDef) sets() []evalSet {
	out := []evalSet{{name: d.name, corpus: d.name, lang: d.lang, questions: d.questions, offTopic: d.offTopic}}
	if len(d.paraphrase) > 0 {
		out = append(out, evalSet{name: d.name + " paraphrase", corpus: d.name, lang: d.lang, paraphrase: true, questions: d.paraphrase})
	}
	return out
}

// corpusSite is one loaded corpus.
type corpusSite struct {
	def     corpusDef
	pkg     string
	files   []file
	siteID  int64
	docFile map[int64]string // document id → file
	bm25    *bm25
}

// config is one row of the retrieval table.
type config struct {
	name   string
	stages map[string]bool // nil: the baseline, computed here
}

var configs = []config{
	{name: "BM25 over sections (baseline)"},
	{name: "Lore pipeline (dense + keyword + rerank)", stages: map[string]bool{"dense": true, "keyword": true, "rerank": true}},
	{name: "without dense", stages: map[string]bool{"dense": false, "keyword": true, "rerank": true}},
	{name: "without keyword", stages: map[string]bool{"dense": true, "keyword": false, "rerank": true}},
	{name: "without rerank", stages: map[string]bool{"dense": true, "keyword": true, "rerank": false}},
}

func (e *evaluation) evaluate(ctx context.Context) error {
	var sites []*corpusSite
	for _, d := range corpusDefs {
		files, pkg, err := d.fetch(ctx, e.work)
		if err != nil {
			return fmt.Errorf("%s: %w", d.name, err)
		}
		s := &corpusSite{def: d, pkg: pkg, files: files}
		e.rep.checks = append(e.rep.checks, checkQuestions(s)...)
		sites = append(sites, s)
	}
	for _, c := range e.rep.checks {
		logf("check: %s", c)
	}
	for _, s := range sites {
		if err := e.load(ctx, s); err != nil {
			return fmt.Errorf("%s corpus: %w", s.def.name, err)
		}
		s.bm25 = newBM25(s.files)
		e.rep.corpora = append(e.rep.corpora, fmt.Sprintf("%s (%s): `%s`, %d files, %d questions, %d paraphrase questions, %d off-topic",
			s.def.name, s.def.lang, s.pkg, len(s.files), len(s.def.questions), len(s.def.paraphrase), len(s.def.offTopic)))
	}
	if e.o.keep {
		if err := writeKept(e.work, sites); err != nil {
			return err
		}
	}
	for _, s := range sites {
		if e.o.debug {
			_, _ = e.retrieval(ctx, s, evalSet{name: s.def.name + " off-topic", questions: s.def.offTopic}, configs[1])
		}
		for _, set := range s.def.sets() {
			e.rep.sets = append(e.rep.sets, set)
			for _, c := range configs {
				t0 := time.Now()
				m, err := e.retrieval(ctx, s, set, c)
				if err != nil {
					return fmt.Errorf("%s, %s: %w", set.name, c.name, err)
				}
				logf("%s / %s: hit@1 %.3f hit@5 %.3f MRR@10 %.3f (%s)", set.name, c.name, m.hit1, m.hit5, m.mrr, time.Since(t0).Round(time.Millisecond))
				e.rep.rows = append(e.rep.rows, row{set: set.name, config: c.name, m: m})
			}
			t0 := time.Now()
			a, err := e.answers(ctx, s, set)
			if err != nil {
				return fmt.Errorf("%s answers: %w", set.name, err)
			}
			logf("answers %s (%s)", a.line(), time.Since(t0).Round(time.Millisecond))
			e.rep.answers = append(e.rep.answers, a)
		}
	}
	return nil
}

// checkQuestions checks a corpus's question sets against its files: a
// relevant file the corpus lacks, a section heading its file lacks, or a
// paraphrase page whose title differs from pageTitles (which the
// paraphrase rule is checked against) is reported.
func checkQuestions(s *corpusSite) []string {
	byRel := map[string]file{}
	for _, f := range s.files {
		byRel[f.rel] = f
	}
	var out []string
	for _, set := range s.def.sets() {
		for _, q := range set.questions {
			for i, rel := range strings.Fields(q.file) {
				f, ok := byRel[rel]
				switch {
				case !ok:
					out = append(out, fmt.Sprintf("%s: %q: %s is not in the corpus", set.name, q.q, rel))
				case i == 0 && q.section != "" && !strings.Contains(strings.ReplaceAll(f.text, "`", ""), q.section):
					out = append(out, fmt.Sprintf("%s: %q: %s has no section %q", set.name, q.q, rel, q.section))
				}
				if t, want := f.title, pageTitles[rel]; ok && set.paraphrase && want != "" && t != want {
					out = append(out, fmt.Sprintf("%s: %s is titled %q, pageTitles says %q", set.name, rel, t, want))
				}
			}
		}
	}
	return out
}

// load creates the site and its published documents, one per file, and
// waits until every document is vectorized.
func (e *evaluation) load(ctx context.Context, s *corpusSite) error {
	var site struct {
		ID int64 `json:"id"`
	}
	if err := e.api.Call(ctx, http.MethodPost, "/admin/api/v1/sites", map[string]any{"name": "Eval " + s.def.name}, &site); err != nil {
		return err
	}
	s.siteID = site.ID
	s.docFile = map[int64]string{}
	t0 := time.Now()
	var ids []int64
	for _, f := range s.files {
		var d struct {
			ID int64 `json:"id"`
		}
		title := f.title
		if len([]rune(title)) > 200 {
			title = string([]rune(title)[:200])
		}
		if err := e.api.Call(ctx, http.MethodPost, "/admin/api/v1/documents", map[string]any{"site_id": s.siteID,
			"title": title, "content": f.text, "status": "published"}, &d); err != nil {
			return err
		}
		s.docFile[d.ID] = f.rel
		ids = append(ids, d.ID)
	}
	for _, id := range ids {
		for {
			var d struct {
				VectorStatus string `json:"vector_status"`
				VectorError  string `json:"vector_error"`
			}
			if err := e.api.Call(ctx, http.MethodGet, "/admin/api/v1/documents/"+strconv.FormatInt(id, 10), nil, &d); err != nil {
				return err
			}
			if d.VectorStatus == "completed" {
				break
			}
			if d.VectorStatus == "failed" {
				return fmt.Errorf("document %d (%s) failed to vectorize: %s", id, s.docFile[id], d.VectorError)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	logf("%s: %d documents loaded and vectorized in %s", s.def.name, len(ids), time.Since(t0).Round(time.Millisecond))
	e.rep.loadTimes = append(e.rep.loadTimes, fmt.Sprintf("%s: %d documents published and vectorized in %s", s.def.name, len(ids), time.Since(t0).Round(time.Second)))
	return nil
}

// metrics are file-level figures over one question set.
type metrics struct {
	hit1, hit5, mrr float64
	n               int
}

// retrieval ranks files for every question with one configuration: the
// file of each retrieved chunk in order; a hit is a chunk of the relevant
// file.
func (e *evaluation) retrieval(ctx context.Context, s *corpusSite, set evalSet, c config) (metrics, error) {
	ranks := make([]int, len(set.questions)) // 1-based rank of the first relevant chunk, 0: none in top k
	err := parallel(ctx, len(set.questions), 2, func(ctx context.Context, i int) error {
		q := set.questions[i]
		var files []string
		if c.stages == nil {
			files = s.bm25.search(q.q, e.o.k)
		} else {
			var out struct {
				Chunks []struct {
					DocumentID int64   `json:"document_id"`
					Heading    string  `json:"heading_path"`
					Relevance  float64 `json:"relevance"`
				} `json:"chunks"`
			}
			if err := retry503(ctx, func() error {
				return e.api.Call(ctx, http.MethodPost, "/admin/api/v1/documents:retrieve", map[string]any{
					"site_id": s.siteID, "query": q.q, "top_k": e.o.k, "stages": c.stages}, &out)
			}); err != nil {
				return err
			}
			for _, ch := range out.Chunks {
				files = append(files, s.docFile[ch.DocumentID])
			}
			if e.o.debug && c.name == configs[1].name {
				var top []string
				for j, ch := range out.Chunks {
					if j < 3 {
						top = append(top, fmt.Sprintf("%s §%.40s (%.2f)", s.docFile[ch.DocumentID], ch.Heading, ch.Relevance))
					}
				}
				logf("debug %q want %s: %v", q.q, q.file, top)
			}
		}
		ranks[i] = firstRelevant(q, files)
		return nil
	})
	if err != nil {
		return metrics{}, err
	}
	return rankMetrics(ranks), nil
}

// firstRelevant is the 1-based rank of the first of files that is
// relevant to q (0: none).
func firstRelevant(q question, files []string) int {
	for r, f := range files {
		if q.relevant(f) {
			return r + 1
		}
	}
	return 0
}

// rankMetrics are the figures of the 1-based ranks of the first relevant
// chunk of each question (0: none in the top k).
func rankMetrics(ranks []int) metrics {
	var m metrics
	for _, r := range ranks {
		m.n++
		if r == 1 {
			m.hit1++
		}
		if r >= 1 && r <= 5 {
			m.hit5++
		}
		if r >= 1 {
			m.mrr += 1 / float64(r)
		}
	}
	n := float64(max(1, m.n))
	m.hit1, m.hit5, m.mrr = m.hit1/n, m.hit5/n, m.mrr/n
	return m
}

// answerFigures are the chat figures of one question set.
type answerFigures struct {
	set                        string
	offTopic, abstainedOff     int
	answerable, falseAbstained int
	// firstRelevant counts answerable questions whose answer's first
	// citation (the first [n] of its text) is a source from a relevant
	// file; an abstention counts as a miss.
	firstRelevant int
	// cited and citedRelevant count every distinct source an answer cites.
	cited, citedRelevant int
	// seen counts answerable questions whose relevant file is among the
	// answer's sources (the passages the chat's search gave the
	// responder): what any choice of passage to cite is bounded by.
	seen     int
	examples []string
}

var citation = regexp.MustCompile(`\[(\d+)\]`)

// answers asks every question of a set (and its off-topic ones) through
// the chat.
func (e *evaluation) answers(ctx context.Context, s *corpusSite, set evalSet) (answerFigures, error) {
	a := answerFigures{set: set.name}
	all := append(append([]question(nil), set.questions...), set.offTopic...)
	var mu sync.Mutex
	err := parallel(ctx, len(all), 2, func(ctx context.Context, i int) error {
		q := all[i]
		var r chatReply
		err := retry503(ctx, func() error {
			var err error
			r, err = e.api.chat(ctx, s.siteID, q.q)
			return err
		})
		if err != nil {
			return err
		}
		if err := e.dump.record(ctx, e.api, s, set, q, r); err != nil {
			return err
		}
		files := make(map[int]string, len(r.sources))
		for n, id := range r.sources {
			files[n] = s.docFile[id]
		}
		mu.Lock()
		defer mu.Unlock()
		a.score(q, r.text, files)
		return nil
	})
	return a, err
}

// score counts one answer: one without any [n] citation is an abstention;
// files maps the answer's source numbers to their files.
func (a *answerFigures) score(q question, text string, files map[int]string) {
	nums := citation.FindAllStringSubmatch(text, -1)
	if q.file == "" {
		a.offTopic++
		if len(nums) == 0 {
			a.abstainedOff++
		} else if len(a.examples) < 4 {
			a.examples = append(a.examples, fmt.Sprintf("off-topic answered: %q → %.160q", q.q, text))
		}
		return
	}
	a.answerable++
	for _, f := range files {
		if q.relevant(f) {
			a.seen++
			break
		}
	}
	if len(nums) == 0 {
		a.falseAbstained++
		if len(a.examples) < 4 {
			a.examples = append(a.examples, fmt.Sprintf("abstained on answerable: %q (%s)", q.q, q.file))
		}
		return
	}
	seen := map[int]bool{}
	for i, m := range nums {
		n, _ := strconv.Atoi(m[1])
		if i == 0 && q.relevant(files[n]) {
			a.firstRelevant++
		}
		if seen[n] {
			continue
		}
		seen[n] = true
		a.cited++
		if q.relevant(files[n]) {
			a.citedRelevant++
		}
	}
}

// parallel runs fn for 0..n-1 on conc goroutines; the first error wins.
func parallel(ctx context.Context, n, conc int, fn func(context.Context, int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	errs := make(chan error, conc)
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(ctx, i); err != nil {
					errs <- err
					cancel()
					return
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return ctx.Err()
	}
}
