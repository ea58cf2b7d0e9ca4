package main

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"time"
)

// corpusSite is one loaded corpus.
type corpusSite struct {
	lang      string
	pkg       string
	files     []file
	siteID    int64
	docFile   map[int64]string // document id → file
	questions []question
	offTopic  []question
	bm25      *bm25
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
	en, enPkg, err := englishCorpus(ctx, e.work)
	if err != nil {
		return err
	}
	zh, zhPkg, err := chineseCorpus(ctx, e.work, logf)
	if err != nil {
		return err
	}
	sites := []*corpusSite{
		{lang: "English", pkg: enPkg, files: en, questions: english, offTopic: offTopic[:10]},
		{lang: "Chinese", pkg: zhPkg, files: zh, questions: chinese, offTopic: offTopic[10:]},
	}
	for _, s := range sites {
		if err := e.load(ctx, s); err != nil {
			return fmt.Errorf("%s corpus: %w", s.lang, err)
		}
		s.bm25 = newBM25(s.files)
	}
	if e.o.keep {
		if err := writeKept(e.work, sites); err != nil {
			return err
		}
	}
	if e.o.debug {
		for _, s := range sites {
			qs := s.questions
			s.questions = s.offTopic
			_, _ = e.retrieval(ctx, s, configs[1])
			s.questions = qs
		}
	}
	for _, s := range sites {
		for _, c := range configs {
			t0 := time.Now()
			m, err := e.retrieval(ctx, s, c)
			if err != nil {
				return fmt.Errorf("%s, %s: %w", s.lang, c.name, err)
			}
			logf("%s / %s: hit@1 %.3f hit@5 %.3f MRR@10 %.3f (%s)", s.lang, c.name, m.hit1, m.hit5, m.mrr, time.Since(t0).Round(time.Millisecond))
			e.rep.rows = append(e.rep.rows, row{lang: s.lang, config: c.name, m: m})
		}
		a, err := e.answers(ctx, s)
		if err != nil {
			return fmt.Errorf("%s answers: %w", s.lang, err)
		}
		e.rep.answers = append(e.rep.answers, a)
		e.rep.corpora = append(e.rep.corpora, fmt.Sprintf("%s: `%s`, %d files, %d questions, %d off-topic", s.lang, s.pkg, len(s.files), len(s.questions), len(s.offTopic)))
	}
	return nil
}

// load creates the site and its published documents, one per file, and
// waits until every document is vectorized.
func (e *evaluation) load(ctx context.Context, s *corpusSite) error {
	var site struct {
		ID int64 `json:"id"`
	}
	if err := e.api.Call(ctx, http.MethodPost, "/admin/api/v1/sites", map[string]any{"name": "Eval " + s.lang}, &site); err != nil {
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
	logf("%s: %d documents loaded and vectorized in %s", s.lang, len(ids), time.Since(t0).Round(time.Millisecond))
	e.rep.loadTimes = append(e.rep.loadTimes, fmt.Sprintf("%s: %d documents published and vectorized in %s", s.lang, len(ids), time.Since(t0).Round(time.Second)))
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
func (e *evaluation) retrieval(ctx context.Context, s *corpusSite, c config) (metrics, error) {
	ranks := make([]int, len(s.questions)) // 1-based rank of the first relevant chunk, 0: none in top k
	err := parallel(ctx, len(s.questions), 2, func(ctx context.Context, i int) error {
		q := s.questions[i]
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
			if err := e.api.Call(ctx, http.MethodPost, "/admin/api/v1/documents:retrieve", map[string]any{
				"site_id": s.siteID, "query": q.q, "top_k": e.o.k, "stages": c.stages}, &out); err != nil {
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
		for r, f := range files {
			if f == q.file {
				ranks[i] = r + 1
				break
			}
		}
		return nil
	})
	if err != nil {
		return metrics{}, err
	}
	return rankMetrics(ranks), nil
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

// answerFigures are the chat figures of one corpus.
type answerFigures struct {
	lang                       string
	offTopic, abstainedOff     int
	answerable, falseAbstained int
	cited, citedRelevant       int
	// seen and first count answerable questions whose relevant file is
	// among the passages the chat's search gave the responder, and is the
	// first of them: what any choice of passage to cite is bounded by.
	seen, first int
	examples    []string
}

var citation = regexp.MustCompile(`\[(\d+)\]`)

// answers asks every question through the chat: an answer without any
// [n] citation is an abstention.
func (e *evaluation) answers(ctx context.Context, s *corpusSite) (answerFigures, error) {
	a := answerFigures{lang: s.lang}
	all := append(append([]question(nil), s.questions...), s.offTopic...)
	var mu sync.Mutex
	err := parallel(ctx, len(all), 2, func(ctx context.Context, i int) error {
		q := all[i]
		r, err := e.api.chat(ctx, s.siteID, q.q)
		if err != nil {
			return err
		}
		if err := e.dump.record(ctx, e.api, s, q, r); err != nil {
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
		} else if len(a.examples) < 6 {
			a.examples = append(a.examples, fmt.Sprintf("off-topic answered: %q → %.160q", q.q, text))
		}
		return
	}
	a.answerable++
	firstNum := 0
	for _, f := range files {
		if f == q.file {
			a.seen++
			break
		}
	}
	for n := range files {
		if firstNum == 0 || n < firstNum {
			firstNum = n
		}
	}
	if firstNum > 0 && files[firstNum] == q.file {
		a.first++
	}
	if len(nums) == 0 {
		a.falseAbstained++
		if len(a.examples) < 6 {
			a.examples = append(a.examples, fmt.Sprintf("abstained on answerable: %q (%s)", q.q, q.file))
		}
		return
	}
	seen := map[int]bool{}
	for _, m := range nums {
		n, _ := strconv.Atoi(m[1])
		if seen[n] {
			continue
		}
		seen[n] = true
		a.cited++
		if files[n] == q.file {
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
