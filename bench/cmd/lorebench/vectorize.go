package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/lorekb/lore/bench/internal/corpus"
	"github.com/lorekb/lore/bench/internal/load"
	"github.com/lorekb/lore/internal/chunk"
	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/internal/embed"
	"github.com/lorekb/lore/internal/embed/local"
	"github.com/lorekb/lore/internal/vector"
	vlocal "github.com/lorekb/lore/internal/vector/local"
)

// Chunking and embedding as lore's defaults (LORE_CHUNK_SIZE, LORE_CHUNK_OVERLAP,
// EMBED_PROVIDER=local, EMBED_DIMENSION) and its activity's batch size.
const (
	chunkSize    = 800
	chunkOverlap = 100
	embedDim     = 256
	embedBatch   = 64
)

// corpusDocs loads the corpus once (parts B and C share it).
func (b *bench) corpusDocs(ctx context.Context) ([]corpus.Doc, corpus.Source, error) {
	if b.corpus != nil {
		return b.corpus, b.corpusSrc, nil
	}
	var files []corpus.File
	var src corpus.Source
	var err error
	t0 := time.Now()
	if b.o.corpusDir != "" {
		files, src, err = corpus.Collect(b.o.corpusDir)
	} else {
		dir := filepath.Join(b.work, "corpus")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, src, err
		}
		files, src, err = corpus.Fetch(ctx, dir, logf)
	}
	if err != nil {
		return nil, src, err
	}
	all := corpus.Split(files, b.o.corpusMin)
	if len(all) < b.o.corpusMin {
		logf("B: WARNING: the corpus only splits into %d documents (-corpus-min %d)", len(all), b.o.corpusMin)
	}
	b.corpusAll = len(all)
	b.corpus = corpus.Pick(all, b.o.corpusMax)
	b.corpusSrc = src
	logf("B: corpus %s: %d %s files, %.1f MB, split into %d documents, using %d (%s)",
		src.Package, src.Files, src.Kind, float64(src.Bytes)/1e6, len(all), len(b.corpus), time.Since(t0).Round(time.Millisecond))
	return b.corpus, src, nil
}

// plainLoop is the ceiling: the same chunk + embed + upsert work in one
// goroutine into a fresh embedded store, with nothing around it.
// maxStepNotes is how many jobs' steps the report lists.
const maxStepNotes = 3

// plainRounds is how many times each plain loop runs.
const plainRounds = 3

func plainLoop(ctx context.Context, dir string, docs []corpus.Doc, emb embed.Embedder) (chunks int, elapsed time.Duration, err error) {
	store, err := vlocal.Open(dir, emb.Dimension())
	if err != nil {
		return 0, 0, err
	}
	defer store.Close()
	t0 := time.Now()
	for i, d := range docs {
		docID := int64(i + 1)
		pieces := chunk.Split(d.Content, chunk.Options{Size: chunkSize, Overlap: chunkOverlap})
		lead := chunk.Lead(d.Content)
		for j := 0; j < len(pieces); j += embedBatch {
			part := pieces[j:min(j+embedBatch, len(pieces))]
			texts := make([]string, len(part))
			for k, p := range part {
				texts[k] = chunk.EmbedText(d.Title, lead, p)
			}
			vecs, err := emb.Embed(ctx, texts)
			if err != nil {
				return 0, 0, err
			}
			cs := make([]vector.Chunk, len(part))
			for k, p := range part {
				cs[k] = vector.Chunk{ID: vector.ChunkID(docID, 1, p.Index), SiteID: 1, DocumentID: docID, Version: 1,
					Index: p.Index, Title: d.Title, Heading: p.Heading, Text: p.Text, Vector: vecs[k]}
			}
			if err := store.Upsert(ctx, cs); err != nil {
				return 0, 0, err
			}
		}
		chunks += len(pieces)
	}
	elapsed = time.Since(t0)
	n, err := store.Count(ctx)
	if err == nil && n != chunks {
		err = fmt.Errorf("plain loop: store holds %d chunks, expected %d", n, chunks)
	}
	return chunks, elapsed, err
}

type jobView struct {
	Status   string `json:"status"`
	Error    string `json:"error"`
	Progress *struct {
		Total     int `json:"total"`
		Completed int `json:"completed"`
		Failed    int `json:"failed"`
	} `json:"progress"`
	StartedAt *time.Time `json:"started_at"`
	ClosedAt  *time.Time `json:"closed_at"`
}

// vectorizeViaAPI posts documents:batchVectorize for ids (in batches of
// batchMax) and waits until every job has completed.
func (b *bench) vectorizeViaAPI(ctx context.Context, ids []int64, timeout time.Duration, progress bool) ([]jobView, error) {
	var jobs []string
	t0 := time.Now()
	for i := 0; i < len(ids); i += b.o.batchMax {
		part := ids[i:min(i+b.o.batchMax, len(ids))]
		var br struct {
			JobID        string  `json:"job_id"`
			SuccessCount int     `json:"success_count"`
			MissingIDs   []int64 `json:"missing_ids"`
		}
		if err := b.api.Call(ctx, http.MethodPost, "/admin/api/v1/documents:batchVectorize", map[string]any{"document_ids": part}, &br); err != nil {
			return nil, err
		}
		if br.JobID == "" || br.SuccessCount != len(part) {
			return nil, fmt.Errorf("batchVectorize queued %d of %d documents (missing %v)", br.SuccessCount, len(part), br.MissingIDs)
		}
		jobs = append(jobs, br.JobID)
	}
	b.vecPosted = time.Since(t0)
	b.lastJobs = jobs
	deadline := time.Now().Add(timeout)
	views := make([]jobView, len(jobs))
	lastLog := time.Now()
	for i := 0; i < len(jobs); {
		var v jobView
		if err := b.api.Call(ctx, http.MethodGet, "/admin/api/v1/jobs/"+jobs[i], nil, &v); err != nil {
			return nil, err
		}
		switch v.Status {
		case "running", "":
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("job %s still running after %s (progress %+v)", jobs[i], timeout, v.Progress)
			}
			if progress && time.Since(lastLog) > 10*time.Second && v.Progress != nil {
				logf("B: job %d/%d: %d of %d documents done", i+1, len(jobs), v.Progress.Completed+v.Progress.Failed, v.Progress.Total)
				lastLog = time.Now()
			}
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		case "completed":
			views[i] = v
			i++
			if v.StartedAt != nil && v.ClosedAt != nil {
				line := fmt.Sprintf("job %s: request → workflow started %s (POST answered after %s), workflow %s, closed → seen by the poll %s",
					jobs[i-1], v.StartedAt.Sub(t0).Round(time.Millisecond), b.vecPosted.Round(time.Millisecond),
					v.ClosedAt.Sub(*v.StartedAt).Round(time.Millisecond), time.Since(*v.ClosedAt).Round(time.Millisecond))
				logf("B: %s", line)
				b.vecSteps = append(b.vecSteps, line)
			}
		default:
			return nil, fmt.Errorf("job %s ended %s: %s", jobs[i], v.Status, v.Error)
		}
	}
	return views, nil
}

func (b *bench) benchVectorize(ctx context.Context) error {
	o := b.o
	docs, src, err := b.corpusDocs(ctx)
	if err != nil {
		return err
	}
	var bytes int
	for _, d := range docs {
		bytes += len(d.Content)
	}

	// Ceiling first, while lore is idle, with lore's default embedder,
	// alternating with the same loop with the hashing embedder alone, for
	// the learned embedder's cost: plainRounds of each, medians compared
	// (single runs on a shared machine swing by a factor of two or more).
	emb, err := deps.LocalEmbedder("", embedDim)
	if err != nil {
		return err
	}
	var plainChunks int
	var learnedTimes, hashTimes load.Latencies
	var ratios []float64
	for r := 0; r < plainRounds; r++ {
		for _, e := range []struct {
			emb   embed.Embedder
			times *load.Latencies
		}{{emb, &learnedTimes}, {local.New(embedDim), &hashTimes}} {
			n, took, err := plainLoop(ctx, filepath.Join(b.work, "plain-store"), docs, e.emb)
			if err != nil {
				return fmt.Errorf("plain loop (%s): %w", e.emb.Model(), err)
			}
			_ = os.RemoveAll(filepath.Join(b.work, "plain-store"))
			plainChunks = n
			*e.times = append(*e.times, took)
		}
		ratios = append(ratios, hashTimes[r].Seconds()/learnedTimes[r].Seconds())
	}
	plainTime, hashTime := median(learnedTimes), median(hashTimes)
	slices.Sort(ratios)
	hashDocsPS := float64(len(docs)) / hashTime.Seconds()
	plainDocsPS := float64(len(docs)) / plainTime.Seconds()
	plainChunksPS := float64(plainChunks) / plainTime.Seconds()
	logf("B: plain loop: %d documents, %d chunks in %s: %.0f documents/s, %.0f chunks/s", len(docs), plainChunks,
		plainTime.Round(time.Millisecond), plainDocsPS, plainChunksPS)

	siteID, err := b.api.createSite(ctx, "Bench corpus "+time.Now().Format("150405.000"))
	if err != nil {
		return err
	}
	rows := make([]docRow, len(docs))
	now := time.Now().UTC()
	for i, d := range docs {
		rows[i] = docRow{title: d.Title, content: d.Content, created: now.Add(time.Duration(i-len(docs)) * time.Second)}
	}
	ids, err := b.insertDocs(ctx, siteID, rows)
	if err != nil {
		return err
	}

	t0 := time.Now()
	views, err := b.vectorizeViaAPI(ctx, ids, o.vecTimeout, true)
	if err != nil {
		return err
	}
	e2e := time.Since(t0)
	var wf time.Duration
	for _, v := range views {
		if v.StartedAt != nil && v.ClosedAt != nil {
			wf += v.ClosedAt.Sub(*v.StartedAt)
		}
	}
	var chunks, completed, failed int64
	if err := b.pool.QueryRow(ctx, `SELECT COALESCE(SUM(chunk_count),0), count(*) FILTER (WHERE vector_status = 'completed'),
		count(*) FILTER (WHERE vector_status = 'failed') FROM documents WHERE site_id = $1`, siteID).Scan(&chunks, &completed, &failed); err != nil {
		return err
	}
	docsPS := float64(len(ids)) / e2e.Seconds()
	chunksPS := float64(chunks) / e2e.Seconds()
	logf("B: lore: %d documents (%d completed, %d failed), %d chunks in %s: %.0f documents/s, %.0f chunks/s",
		len(ids), completed, failed, chunks, e2e.Round(time.Millisecond), docsPS, chunksPS)
	b.vecSite = siteID

	s := b.rep.section("B. Vectorization: documents:batchVectorize of one site, end to end", "Run", "documents", "chunks", "time", "documents/s", "chunks/s", "vs plain loop")
	s.row("lore: documents:batchVectorize → jobs completed (end to end)", fmt.Sprint(len(ids)), fmt.Sprint(chunks),
		e2e.Round(time.Millisecond).String(), fmt.Sprintf("%.1f", docsPS), fmt.Sprintf("%.0f", chunksPS), pct(docsPS, plainDocsPS))
	s.row("plain loop in the bench process (ceiling)", fmt.Sprint(len(docs)), fmt.Sprint(plainChunks),
		plainTime.Round(time.Millisecond).String(), fmt.Sprintf("%.1f", plainDocsPS), fmt.Sprintf("%.0f", plainChunksPS), "100%")
	s.note("Corpus: Debian package %s, %d %s files (%.1f MB), split on headings and paragraphs into %d documents (-corpus-min %d); %d used (%.1f MB, about %d bytes each).",
		src.Package, src.Files, src.Kind, float64(src.Bytes)/1e6, b.corpusAll, o.corpusMin, len(docs), float64(bytes)/1e6, bytes/max(len(docs), 1))
	s.note("lore: documents inserted as published with SQL (no vectorization on insert), then %d documents:batchVectorize request(s); time from the first request until GET /admin/api/v1/jobs/{id} reports completed (polled every 100 ms). Workflow time as Temporal reports it: %s. %d completed, %d failed; chunks = SUM(chunk_count).",
		(len(ids)+o.batchMax-1)/o.batchMax, wf.Round(time.Millisecond), completed, failed)
	// A few jobs say where the time goes; every job's line is in the log.
	for _, l := range b.vecSteps[:min(len(b.vecSteps), maxStepNotes)] {
		s.note("Steps of %s.", l)
	}
	if n := len(b.vecSteps) - maxStepNotes; n > 0 {
		s.note("… and %d more jobs' steps (in the log).", n)
	}
	s.row("plain loop with the hashing embedder alone", fmt.Sprint(len(docs)), fmt.Sprint(plainChunks),
		hashTime.Round(time.Millisecond).String(), fmt.Sprintf("%.1f", hashDocsPS), fmt.Sprintf("%.0f", float64(plainChunks)/hashTime.Seconds()), pct(hashDocsPS, plainDocsPS))
	s.note("Plain loop: chunk.Split (size %d, overlap %d) + lore's default embedder (%s, %d dimensions; batches of %d, chunk.EmbedText as lore embeds: title, page lead and heading path before the text) + Upsert into a fresh embedded store in a temp dir, one goroutine, lore idle.",
		chunkSize, chunkOverlap, emb.Model(), emb.Dimension(), embedBatch)
	s.note("Plain loops: %d rounds, each the learned embedder's loop then the hashing embedder's; medians %s and %s; the learned loop's documents/s as a share of the hashing loop's, per round: %.0f%% to %.0f%%.",
		plainRounds, plainTime.Round(time.Millisecond), hashTime.Round(time.Millisecond), 100*ratios[0], 100*ratios[len(ratios)-1])
	b.rep.check(check{part: "B", target: "the learned embedder's plain loop ≥ 50% of the hashing embedder's documents/s", figure: fmt.Sprintf("%.1f documents/s (median)", plainDocsPS),
		ceiling: fmt.Sprintf("%.1f documents/s (hashing alone)", hashDocsPS), ratio: pct(plainDocsPS, hashDocsPS), pass: plainDocsPS >= 0.5*hashDocsPS})
	if err := b.benchQueryEmbedding(docs, emb); err != nil {
		return err
	}
	if chunks != int64(plainChunks) {
		s.note("WARNING: lore stored %d chunks, the plain loop %d for the same documents.", chunks, plainChunks)
	}
	b.rep.check(check{part: "B", target: "vectorization ≥ 60% of the plain-loop rate", figure: fmt.Sprintf("%.1f documents/s", docsPS),
		ceiling: fmt.Sprintf("%.1f documents/s (plain loop)", plainDocsPS), ratio: pct(docsPS, plainDocsPS), pass: docsPS >= 0.6*plainDocsPS && failed == 0})
	b.rep.check(check{part: "B", target: "vectorization ≥ 50 documents/s", figure: fmt.Sprintf("%.1f documents/s (%.0f chunks/s)", docsPS, chunksPS),
		ceiling: fmt.Sprintf("%.1f documents/s (plain loop)", plainDocsPS), ratio: pct(docsPS, plainDocsPS), pass: docsPS >= 50 && failed == 0})
	return nil
}
