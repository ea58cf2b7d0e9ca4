//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/models"
	"github.com/uptrace/bun"
)

// (a) The worker process is killed with SIGKILL while a batch runs; a new
// worker process takes over. Nothing is lost and nothing is indexed twice.
func TestChaosWorkerKill(t *testing.T) {
	sc := newScenario(t, "(a) kill -9 worker during batch")
	s, job, ids := startBatch(sc, "a", "Chaos A")
	n := len(ids)

	killWorkerMidway(sc, s, job, n, "batch")
	verifyBatch(sc, s, job, ids, nil)
}

// startBatch brings up a stack named name, inserts docsCount() documents
// into a new site and starts one batch vectorization of them.
func startBatch(sc *scenario, name, site string) (s *stack, job string, ids []int64) {
	n := docsCount()
	s = newStack(sc, name, stackOpts{})
	ids = s.InsertDocs(s.CreateSite(site), n)
	job = s.StartBatch(ids)
	sc.logf("batch %s of %d documents started", job, n)
	return s, job, ids
}

// killWorkerMidway waits until 20% of the job's n items completed, kills
// the worker with SIGKILL, checks that the job was not done yet, and starts
// a new worker.
func killWorkerMidway(sc *scenario, s *stack, job string, n int, what string) {
	at := waitProgress(sc, s, job, n)
	s.KillWorker()
	sc.logf("worker pid %d killed at %d/%d completed", s.worker.Pid(), at, n)
	sc.check("worker SIGKILLed mid-"+what+" (progress.completed >= 20%)", at < n,
		"killed at %d/%d completed", at, n)
	time.Sleep(time.Second)
	s.StartWorker()
	sc.logf("new worker pid %d polling", s.worker.Pid())
}

// (c) The Temporal dev server is stopped (SIGTERM) during a batch and started
// again 3 s later on the same database file and port; API and worker
// reconnect by themselves.
func TestChaosTemporalRestart(t *testing.T) {
	sc := newScenario(t, "(c) Temporal stop/start during batch")
	s, job, ids := startBatch(sc, "c", "Chaos C")
	n := len(ids)

	at := waitProgress(sc, s, job, n)
	t0 := time.Now()
	exited := temporal.Stop()
	sc.check("Temporal dev server stopped by SIGTERM mid-batch", exited && at < n,
		"stopped at %d/%d completed, exited in %s", at, n, time.Since(t0).Round(time.Millisecond))
	// A job read during the outage must never be a 500: it answers 503 (the
	// API gives up on Temporal after its own deadline, possibly after the
	// restart below, then 200 is fine too).
	jobRead := make(chan string, 1)
	go func() {
		r, err := s.do("GET", "/admin/api/v1/jobs/"+job, nil, s.token)
		switch {
		case err != nil:
			jobRead <- "FAIL transport error: " + err.Error()
		case r.Status == 503 && r.Envelope && r.Code == 503, r.Status == 200 && r.Envelope && r.Code == 0:
			jobRead <- fmt.Sprintf("status %d: %s", r.Status, clip(string(r.Raw), 160))
		default:
			jobRead <- fmt.Sprintf("FAIL status %d: %s", r.Status, clip(string(r.Raw), 300))
		}
	}()
	time.Sleep(3 * time.Second)
	t1 := time.Now()
	if err := temporal.Start(); err != nil {
		sc.fatalf("restart Temporal with the same --db-filename and port", "%v", err)
	}
	sc.logf("Temporal back after %s (start took %s)", time.Since(t0).Round(time.Millisecond), time.Since(t1).Round(time.Millisecond))
	res := <-jobRead
	sc.check("GET /admin/api/v1/jobs/{id} sent during the outage: 503 envelope (or 200 once back), never 500",
		!strings.HasPrefix(res, "FAIL"), "%s", strings.TrimPrefix(res, "FAIL "))

	verifyBatch(sc, s, job, ids, func() {
		sc.check("API and worker reconnected by themselves (same processes, no restart)",
			!s.api.Exited() && !s.worker.Exited() && s.apiN == 1 && s.workerN == 1,
			"api pid %d alive=%v, worker pid %d alive=%v", s.api.Pid(), !s.api.Exited(), s.worker.Pid(), !s.worker.Exited())
	})
}

// waitProgress polls the job until at least 20% of n documents completed and
// returns the completed count it saw.
func waitProgress(sc *scenario, s *stack, job string, n int) int {
	threshold := (n*20 + 99) / 100
	at := 0
	err := waitFor(5*time.Minute, 25*time.Millisecond, func() (bool, error) {
		if s.worker.Exited() {
			return false, fmt.Errorf("worker exited: %v", s.worker.err)
		}
		j, err := s.Job(job)
		if err != nil {
			return false, err
		}
		if j.Progress != nil {
			at = j.Progress.Completed
		}
		if j.Status != "running" {
			return false, fmt.Errorf("job is %s before the fault (%d completed)", j.Status, at)
		}
		return at >= threshold, nil
	})
	if err != nil {
		sc.fatalf("batch reaches 20% before the fault", "%v", err)
	}
	return at
}

// verifyBatch waits for the job to complete, then checks every document's
// status and, with the worker stopped, the vector store against chunk_count.
// beforeStop runs after the job completed, before the worker is stopped.
func verifyBatch(sc *scenario, s *stack, job string, ids []int64, beforeStop func()) {
	n := len(ids)
	var j *jobView
	var lastErr error
	start := time.Now()
	err := waitFor(8*time.Minute, 250*time.Millisecond, func() (bool, error) {
		if s.worker.Exited() {
			return false, fmt.Errorf("worker process exited: %v", s.worker.err)
		}
		v, err := s.Job(job)
		if err != nil {
			lastErr = err
			return false, nil // e.g. 503 while a dependency is back on its feet
		}
		j = v
		return v.Status != "running", nil
	})
	if err != nil {
		sc.fatalf("job completed", "%v (last job read error: %v; last view %+v)", err, lastErr, j)
	}
	sc.logf("job %s %s after %s", job, j.Status, time.Since(start).Round(time.Millisecond))
	completed, failed := -1, -1
	if j.Progress != nil {
		completed, failed = j.Progress.Completed, j.Progress.Failed
	}
	sc.check("job status completed, progress completed=N, failed=0",
		j.Status == "completed" && completed == n && failed == 0,
		"status %s, completed %d/%d, failed %d%s", j.Status, completed, n, failed, errSuffix(j.Error))

	ctx := context.Background()
	var rows []struct {
		ID           int64  `bun:"id"`
		VectorStatus string `bun:"vector_status"`
		VectorError  string `bun:"vector_error"`
		ChunkCount   int    `bun:"chunk_count"`
	}
	if err := s.DB.NewSelect().Model((*models.Document)(nil)).Column("id", "vector_status", "vector_error", "chunk_count").
		Where("id IN (?)", bun.List(ids)).Scan(ctx, &rows); err != nil {
		sc.fatalf("read documents", "%v", err)
	}
	notDone, sum := 0, 0
	var example string
	chunks := make(map[int64]int, len(rows))
	for _, r := range rows {
		chunks[r.ID] = r.ChunkCount
		sum += r.ChunkCount
		if r.VectorStatus != models.VecCompleted {
			notDone++
			if example == "" {
				example = fmt.Sprintf("; e.g. document %d is %s %s", r.ID, r.VectorStatus, r.VectorError)
			}
		}
	}
	sc.check("every document vector_status=completed", len(rows) == n && notDone == 0,
		"%d/%d completed%s", len(rows)-notDone, n, example)

	if beforeStop != nil {
		beforeStop()
	}
	s.StopWorker()
	stored, total, err := s.StoreCounts(ids)
	if err != nil {
		sc.fatalf("open the vector store after stopping the worker", "%v", err)
	}
	dup, lost := 0, 0
	example = ""
	storedSum := 0
	for _, id := range ids {
		storedSum += stored[id]
		if stored[id] != chunks[id] {
			if stored[id] > chunks[id] {
				dup++
			} else {
				lost++
			}
			if example == "" {
				example = fmt.Sprintf("; e.g. document %d: store %d, chunk_count %d", id, stored[id], chunks[id])
			}
		}
	}
	sc.check("vector store holds exactly sum(chunk_count): CountDocument == chunk_count per document",
		sum > 0 && dup == 0 && lost == 0 && storedSum == sum && total == sum,
		"sum(chunk_count) %d, store %d (Count %d); %d documents with extra chunks, %d with missing%s",
		sum, storedSum, total, dup, lost, example)
}

func errSuffix(e string) string {
	if e == "" {
		return ""
	}
	return ", error " + e
}
