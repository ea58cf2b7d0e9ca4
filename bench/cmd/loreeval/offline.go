package main

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/lorekb/lore/activities"
	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/internal/llm/extractive"
	"github.com/lorekb/lore/internal/rerank/lexical"
	"github.com/lorekb/lore/internal/retrieve"
	vlocal "github.com/lorekb/lore/internal/vector/local"
)

// keptSite is what a -keep run writes to its work directory (sites.json),
// so that -offline can find each corpus's site and map documents to files;
// each corpus's files go to files-NAME.json.gz for the BM25 baseline.
type keptSite struct {
	Name    string           `json:"name"` // empty in a directory kept before the corpora had names
	Lang    string           `json:"lang"`
	SiteID  int64            `json:"site_id"`
	DocFile map[int64]string `json:"doc_file"`
}

type keptFile struct {
	Rel   string `json:"rel"`
	Title string `json:"title"`
	Text  string `json:"text"`
}

// writeKept records the loaded sites and their files in the work
// directory.
func writeKept(work string, sites []*corpusSite) error {
	ks := make([]keptSite, len(sites))
	for i, s := range sites {
		ks[i] = keptSite{Name: s.def.name, Lang: s.def.lang, SiteID: s.siteID, DocFile: s.docFile}
		fs := make([]keptFile, len(s.files))
		for j, f := range s.files {
			fs[j] = keptFile{Rel: f.rel, Title: f.title, Text: f.text}
		}
		if err := writeGzipJSON(filepath.Join(work, "files-"+s.def.name+".json.gz"), fs); err != nil {
			return err
		}
	}
	b, err := json.Marshal(ks)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(work, "sites.json"), b, 0o644)
}

func writeGzipJSON(path string, v any) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(f)
	if err := json.NewEncoder(zw).Encode(v); err != nil {
		f.Close()
		return err
	}
	if err := zw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// readKeptFiles reads the files a -keep run wrote for a corpus.
func readKeptFiles(work, name string) ([]file, error) {
	f, err := os.Open(filepath.Join(work, "files-"+name+".json.gz"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	var fs []keptFile
	if err := json.NewDecoder(zr).Decode(&fs); err != nil {
		return nil, err
	}
	out := make([]file, len(fs))
	for i, k := range fs {
		out[i] = file{rel: k.Rel, title: k.Title, text: k.Text}
	}
	return out, nil
}

// Pipeline settings of lore serve's defaults (RAG_RECALL_K,
// RAG_RECALL_THRESHOLD, RAG_RERANK_TOP_K, EMBED_DIMENSION).
const (
	offlineRecallK   = 50
	offlineThreshold = 0.3
	offlineChatTopK  = 5
	offlineDimension = 256
)

// offline measures this build's retrieval pipeline and extractive responder
// in-process over the vector store of a work directory kept by -keep (no
// servers, a few seconds): the retrieval rows and the answer figures of the
// report, with lore serve's default settings, for tuning the ranking. The
// report's figures stay those of a full run through the HTTP API. With
// misses it lists the questions whose relevant file the full pipeline does
// not rank first (see listMiss).
func offline(work string, misses bool) error {
	raw, err := os.ReadFile(filepath.Join(work, "sites.json"))
	if err != nil {
		return fmt.Errorf("%w (a work directory kept by loreeval -keep)", err)
	}
	var ks []keptSite
	if err := json.Unmarshal(raw, &ks); err != nil {
		return err
	}
	// The embedder lore serve picks by default (EMBED_MODEL may name
	// another local one, as for lore serve).
	emb, err := deps.LocalEmbedder(os.Getenv("EMBED_MODEL"), offlineDimension)
	if err != nil {
		return err
	}
	dim := emb.Dimension()
	st, err := vlocal.Open(filepath.Join(work, "data", "vectors", fmt.Sprintf("dim%d", dim)), dim)
	if err != nil {
		return err
	}
	defer st.Close()
	p := retrieve.Pipeline{Store: st, Embedder: emb, Reranker: lexical.New()}
	// RAG_DENSE_WEIGHT as lore serve reads it (0: the pipeline's default).
	denseWeight, _ := strconv.ParseFloat(os.Getenv("RAG_DENSE_WEIGHT"), 64)
	ctx := context.Background()
	var res results
	for _, k := range ks {
		def, ok := findDef(k.Name, k.Lang)
		if !ok {
			logf("offline: no corpus %q (%s) in this build; skipped", k.Name, k.Lang)
			continue
		}
		var bm *bm25
		if files, err := readKeptFiles(work, def.name); err == nil {
			bm = newBM25(files)
		} else {
			logf("offline: %s: no BM25 baseline (%v)", def.name, err)
		}
		run := func(q string, stages retrieve.Stages, topK int) ([]retrieve.Result, error) {
			return p.Run(ctx, k.SiteID, q, retrieve.Options{RecallK: offlineRecallK, Threshold: offlineThreshold, TopK: topK, Stages: stages, DenseWeight: denseWeight}, nil)
		}
		for _, set := range def.sets() {
			res.sets = append(res.sets, set)
			qs := set.questions
			if bm != nil {
				ranks := make([]int, len(qs))
				for i, q := range qs {
					ranks[i] = firstRelevant(q, bm.search(q.q, 10))
				}
				res.rows = append(res.rows, row{set: set.name, config: configs[0].name, m: rankMetrics(ranks)})
			}
			for _, c := range configs[1:] {
				stages := retrieve.Stages{Dense: c.stages["dense"], Keyword: c.stages["keyword"], Rerank: c.stages["rerank"]}
				ranks := make([]int, len(qs))
				for i, q := range qs {
					out, err := run(q.q, stages, 10)
					if err != nil {
						return err
					}
					files := make([]string, len(out))
					for j, x := range out {
						files[j] = k.DocFile[x.Hit.DocumentID]
					}
					ranks[i] = firstRelevant(q, files)
					if misses && c.name == configs[1].name && ranks[i] != 1 {
						if err := listMiss(os.Stdout, set.name, q, ranks[i], k.DocFile, func(n int) ([]retrieve.Result, error) { return run(q.q, stages, n) }); err != nil {
							return err
						}
					}
				}
				res.rows = append(res.rows, row{set: set.name, config: c.name, m: rankMetrics(ranks)})
			}
			for _, x := range res.rows {
				if x.set == set.name {
					fmt.Printf("%s / %s: hit@1 %.3f hit@5 %.3f MRR@10 %.3f\n", x.set, x.config, x.m.hit1, x.m.hit5, x.m.mrr)
				}
			}
			a := answerFigures{set: set.name}
			for _, q := range append(append([]question(nil), qs...), set.offTopic...) {
				out, err := run(q.q, retrieve.AllStages(), offlineChatTopK)
				if err != nil {
					return err
				}
				ps := activities.SearchPassages(out)
				b, _ := json.Marshal(map[string]any{"query": q.q, "passages": ps})
				files := make(map[int]string, len(ps))
				for i, ps := range ps {
					files[i+1] = k.DocFile[ps.DocumentID]
				}
				text := extractive.Answer(q.q, activities.FormatToolResult(string(b), 1))
				if misses {
					listAnswerMiss(os.Stdout, set.name, q, text, ps, files)
				}
				a.score(q, text, files)
			}
			res.answers = append(res.answers, a)
			fmt.Println(a.line())
		}
	}
	fmt.Print("\n" + res.summary())
	return nil
}

// listMiss prints a question whose relevant file is not first (rank 0: not
// in the top 10): the first three of its top 20 and the relevant file's
// chunks among them, each with its rerank, fused and final scores and its
// relevance, to see what a change to the ranking would have to overcome.
func listMiss(out io.Writer, set string, q question, rank int, docFile map[int64]string, run func(n int) ([]retrieve.Result, error)) error {
	res, err := run(20)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "  miss [%s] %q (%s): rank %d\n", set, q.q, q.file, rank)
	for r, x := range res {
		if f := docFile[x.Hit.DocumentID]; r < 3 || q.relevant(f) {
			rr := -1.0
			if x.Rerank != nil {
				rr = *x.Rerank
			}
			fmt.Fprintf(out, "    %2d %-24s rerank %6.2f fused %.4f score %.3f relevance %.2f [%s]\n", r+1, f, rr, x.Fused, x.Score, x.Relevance, x.Hit.Heading)
		}
	}
	return nil
}

// listAnswerMiss prints an answer whose first citation is not from a
// relevant file (or an off-topic question answered): its passages with
// their relevance, and the answer's start.
func listAnswerMiss(out io.Writer, set string, q question, text string, ps []activities.Passage, files map[int]string) {
	nums := citation.FindAllStringSubmatch(text, -1)
	first := ""
	if len(nums) > 0 {
		n, _ := strconv.Atoi(nums[0][1])
		first = files[n]
	}
	if q.file == "" && len(nums) == 0 || q.file != "" && first != "" && q.relevant(first) {
		return // an abstention off topic, or a right first citation
	}
	fmt.Fprintf(out, "  answer [%s] %q (%s): first citation %q\n", set, q.q, q.file, first)
	for i, p := range ps {
		mark := " "
		if q.relevant(files[i+1]) {
			mark = "*"
		}
		fmt.Fprintf(out, "    %s[%d] %-26s relevance %.2f\n", mark, i+1, files[i+1], p.Score)
	}
	if len(text) > 200 {
		text = text[:200]
	}
	fmt.Fprintf(out, "    → %q\n", text)
}
