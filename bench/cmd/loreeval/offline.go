package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/lorekb/lore/activities"
	localembed "github.com/lorekb/lore/internal/embed/local"
	"github.com/lorekb/lore/internal/llm/extractive"
	"github.com/lorekb/lore/internal/rerank/lexical"
	"github.com/lorekb/lore/internal/retrieve"
	vlocal "github.com/lorekb/lore/internal/vector/local"
)

// keptSite is what a -keep run writes to its work directory (sites.json),
// so that -offline can find each corpus's site and map documents to files.
type keptSite struct {
	Lang    string           `json:"lang"`
	SiteID  int64            `json:"site_id"`
	DocFile map[int64]string `json:"doc_file"`
}

// writeKept records the loaded sites in the work directory.
func writeKept(work string, sites []*corpusSite) error {
	ks := make([]keptSite, len(sites))
	for i, s := range sites {
		ks[i] = keptSite{Lang: s.lang, SiteID: s.siteID, DocFile: s.docFile}
	}
	b, err := json.Marshal(ks)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(work, "sites.json"), b, 0o644)
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
	st, err := vlocal.Open(filepath.Join(work, "data", "vectors", fmt.Sprintf("dim%d", offlineDimension)), offlineDimension)
	if err != nil {
		return err
	}
	defer st.Close()
	p := retrieve.Pipeline{Store: st, Embedder: localembed.New(offlineDimension), Reranker: lexical.New()}
	ctx := context.Background()
	for _, k := range ks {
		qs, off := english, offTopic[:10]
		if k.Lang == "Chinese" {
			qs, off = chinese, offTopic[10:]
		}
		run := func(q string, stages retrieve.Stages, topK int) ([]retrieve.Result, error) {
			return p.Run(ctx, k.SiteID, q, retrieve.Options{RecallK: offlineRecallK, Threshold: offlineThreshold, TopK: topK, Stages: stages}, nil)
		}
		for _, c := range configs[1:] {
			stages := retrieve.Stages{Dense: c.stages["dense"], Keyword: c.stages["keyword"], Rerank: c.stages["rerank"]}
			ranks := make([]int, len(qs))
			for i, q := range qs {
				res, err := run(q.q, stages, 10)
				if err != nil {
					return err
				}
				for r, x := range res {
					if k.DocFile[x.Hit.DocumentID] == q.file {
						ranks[i] = r + 1
						break
					}
				}
				if misses && c.name == configs[1].name && ranks[i] != 1 {
					if err := listMiss(os.Stdout, q, ranks[i], k.DocFile, func(n int) ([]retrieve.Result, error) { return run(q.q, stages, n) }); err != nil {
						return err
					}
				}
			}
			m := rankMetrics(ranks)
			fmt.Printf("%s / %s: hit@1 %.3f hit@5 %.3f MRR@10 %.3f\n", k.Lang, c.name, m.hit1, m.hit5, m.mrr)
		}
		a := answerFigures{lang: k.Lang}
		for _, q := range append(append([]question(nil), qs...), off...) {
			res, err := run(q.q, retrieve.AllStages(), offlineChatTopK)
			if err != nil {
				return err
			}
			ps := activities.SearchPassages(res)
			b, _ := json.Marshal(map[string]any{"query": q.q, "passages": ps})
			files := make(map[int]string, len(ps))
			for i, ps := range ps {
				files[i+1] = k.DocFile[ps.DocumentID]
			}
			a.score(q, extractive.Answer(q.q, activities.FormatToolResult(string(b), 1)), files)
		}
		fmt.Printf("%s: off-topic abstention %d/%d, false abstention %d/%d, cited passages from a relevant file %d/%d; "+
			"relevant file among the passages %d/%d, first %d/%d\n", k.Lang, a.abstainedOff, a.offTopic, a.falseAbstained, a.answerable,
			a.citedRelevant, a.cited, a.seen, a.answerable, a.first, a.answerable)
	}
	return nil
}

// listMiss prints a question whose relevant file is not first (rank 0: not
// in the top 10): the first three of its top 20 and the relevant file's
// chunks among them, each with its rerank, fused and final scores and its
// relevance, to see what a change to the ranking would have to overcome.
func listMiss(out io.Writer, q question, rank int, docFile map[int64]string, run func(n int) ([]retrieve.Result, error)) error {
	res, err := run(20)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "  miss %q (%s): rank %d\n", q.q, q.file, rank)
	for r, x := range res {
		if f := docFile[x.Hit.DocumentID]; r < 3 || f == q.file {
			rr := -1.0
			if x.Rerank != nil {
				rr = *x.Rerank
			}
			fmt.Fprintf(out, "    %2d %-24s rerank %6.2f fused %.4f score %.3f relevance %.2f [%s]\n", r+1, f, rr, x.Fused, x.Score, x.Relevance, x.Hit.Heading)
		}
	}
	return nil
}
