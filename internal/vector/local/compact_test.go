package local

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/vector"
)

// fullState is every chunk of the store, each with all its fields and the
// bits of its stored vector, by ID.
func fullState(s *Store) map[string]string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	m := make(map[string]string, len(s.byID))
	for id, st := range s.sites {
		for _, r := range st.rows {
			var b strings.Builder
			fmt.Fprintf(&b, "%d|%d|%d|%d|%q|%q|%q|", id, r.doc, r.version, r.index, r.title, r.heading, r.text)
			for _, f := range st.vecs.row(r.row) {
				binary.Write(&b, binary.LittleEndian, math.Float32bits(f))
			}
			m[r.id] = b.String()
		}
	}
	return m
}

// diffState describes how two full states differ ("" when equal).
func diffState(got, want map[string]string) string {
	var out []string
	for id, w := range want {
		if g, ok := got[id]; !ok {
			out = append(out, "missing "+id)
		} else if g != w {
			out = append(out, "differs "+id)
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			out = append(out, "extra "+id)
		}
	}
	if len(out) == 0 {
		return ""
	}
	sort.Strings(out)
	return fmt.Sprintf("%d chunks, want %d; %s", len(got), len(want), strings.Join(out[:min(len(out), 8)], ", "))
}

// copyDir copies the store's files (not its lock) into a new directory, as
// a crash would leave them on disk: every acknowledged write is fsynced.
func copyDir(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == lockName {
			continue
		}
		src, err := os.Open(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		dst, err := os.Create(filepath.Join(to, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(dst, src); err != nil {
			t.Fatal(err)
		}
		src.Close()
		dst.Close()
	}
	return to
}

// snapshotOnly loads just the snapshot in dir (no log) and reports whether
// the index file matches it for every site that needs an index.
func snapshotOnly(t *testing.T, dir string, cfg annConfig) (map[string]string, bool) {
	t.Helper()
	s := &Store{dir: dir, dim: ivfDim, sites: map[int64]*site{}, byID: map[string]*record{}, byDoc: map[int64]map[string]*record{}, ann: cfg}
	s.ann.minRows = math.MaxInt
	gen, _, ok, err := s.readSnapshot()
	if err != nil || !ok {
		t.Fatalf("snapshot of %s: ok %v, %v", dir, ok, err)
	}
	s.ann = cfg
	saved := s.readIndexes(gen)
	indexed := true
	for id, st := range s.sites {
		if len(st.rows) >= cfg.minRows && saved[id] == nil {
			indexed = false
		}
	}
	return fullState(s), indexed
}

// compactionWriter is one of the writers that run through compactions: it
// owns its site, so the writers' interleaving does not change the end state.
// Its writes cover every record type: upserts of new chunks, replacements,
// new versions followed by the deletion of the stale ones, document
// deletions and, now and then, the deletion of its whole site.
func compactionWriter(ctx context.Context, s *Store, site int64, rng *rand.Rand, gen *clustered, i int) error {
	doc := func(n int) int64 { return site*1000 + int64(n) }
	switch op := rng.IntN(20); {
	case op < 10:
		var cs []vector.Chunk
		d := doc(rng.IntN(200))
		for j := 0; j < 8; j++ {
			c := chunk(site, d, 1, j, gen.next(), fmt.Sprintf("write %d chunk %d", i, j))
			cs = append(cs, c)
		}
		return s.Upsert(ctx, cs)
	case op < 14:
		d := doc(rng.IntN(200))
		v := int64(2 + rng.IntN(3))
		if err := s.Upsert(ctx, []vector.Chunk{chunk(site, d, v, 0, gen.next(), fmt.Sprintf("version %d", v))}); err != nil {
			return err
		}
		return s.DeleteStaleVersions(ctx, d, v)
	case op < 19:
		return s.DeleteDocument(ctx, doc(rng.IntN(200)))
	default:
		if rng.IntN(4) == 0 {
			return s.DeleteSite(ctx, site)
		}
		return s.DeleteDocument(ctx, doc(rng.IntN(200)))
	}
}

// TestCompactionWithWriters compacts while writers run and copies the store
// directory at every stage of each compaction, as a crash there would leave
// it (writers held for the copy, so it holds exactly the acknowledged
// writes). Every copy must open to exactly the state of that moment, the
// snapshot must be exactly the state when its log started (not one write
// more or less, although writers ran while it was written), and its index
// file must match it. The large site is indexed and loses rows (deletes
// move rows inside its shared slabs) during the compactions.
func TestCompactionWithWriters(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openANN(t, dir, fullANN)
	s.compactBytes = 1 << 40 // only the compactions the test starts
	big := newClustered(5, ivfDim, 20)
	fillGen(t, s, 1, 3000, 300, big)

	ws := startWriters(4, -1, func(w, i int, rng *rand.Rand, gen *clustered) error {
		if w > 0 {
			return compactionWriter(ctx, s, int64(10+w), rng, gen, i)
		}
		// Deletes and replacements in the indexed site.
		n := rng.IntN(3000)
		if rng.IntN(2) == 0 {
			return s.DeleteDocument(ctx, 1_000_000+int64(n/8+1))
		}
		return s.Upsert(ctx, []vector.Chunk{genChunk(1, n, big.next())})
	})
	// waitWrites lets the writers go on for a few writes.
	waitWrites := func() {
		from := ws.writes.Load()
		for ws.writes.Load() < from+5 {
			select {
			case err := <-ws.errs:
				t.Fatal(err)
			default:
			}
			time.Sleep(time.Millisecond)
		}
	}

	type crash struct {
		stage, dir string
		want       map[string]string
	}
	var crashes []crash
	var atRotation map[string]string
	s.hook = func(stage string) {
		if stage == "rotate" {
			atRotation = fullState(s) // writeMu is held
			return
		}
		waitWrites()
		s.writeMu.Lock()
		crashes = append(crashes, crash{stage, copyDir(t, dir), fullState(s)})
		s.writeMu.Unlock()
		if stage == "renamed" || stage == "indexed" {
			snap, indexed := snapshotOnly(t, crashes[len(crashes)-1].dir, fullANN)
			if d := diffState(snap, atRotation); d != "" {
				t.Errorf("snapshot at %s is not the state when its log started: %s", stage, d)
			}
			if stage == "indexed" && !indexed {
				t.Errorf("index file does not match its snapshot")
			}
		}
	}
	for c := 0; c < 3; c++ {
		waitWrites()
		if err := s.Compact(); err != nil {
			t.Fatal(err)
		}
	}
	s.hook = nil
	ws.finish(t)
	checkIndex(t, s)
	final := fullState(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openANN(t, dir, fullANN)
	if d := diffState(fullState(s), final); d != "" {
		t.Fatalf("after reopen: %s", d)
	}
	checkIndex(t, s)
	s.Close()

	if len(crashes) != 12 {
		t.Fatalf("%d crash points, want 4 per compaction", len(crashes))
	}
	for _, c := range crashes {
		s := openANN(t, c.dir, fullANN)
		if d := diffState(fullState(s), c.want); d != "" {
			t.Fatalf("crash at %s: %s", c.stage, d)
		}
		checkIndex(t, s)
		// Opening folded every log into one snapshot.
		gens, err := logsFrom(c.dir, 0)
		if err != nil || len(gens) != 1 {
			t.Fatalf("crash at %s: logs %v after open, %v", c.stage, gens, err)
		}
		s.Close()
		s = openANN(t, c.dir, fullANN)
		if d := diffState(fullState(s), c.want); d != "" {
			t.Fatalf("crash at %s, second open: %s", c.stage, d)
		}
		s.Close()
	}
}

// TestAutomaticCompactionWithWriters: compactions started by writes run
// beside other writers; the store reopens to exactly what was written.
func TestAutomaticCompactionWithWriters(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openANN(t, dir, fullANN)
	s.compactBytes = 16 << 10
	gen0 := s.gen
	startWriters(4, 150, func(w, i int, rng *rand.Rand, gen *clustered) error {
		return compactionWriter(ctx, s, int64(20+w), rng, gen, i)
	}).wait(t)
	s.waitCompaction()
	if s.gen == gen0 {
		t.Fatal("never compacted")
	}
	want := fullState(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openANN(t, dir, fullANN)
	defer s.Close()
	if d := diffState(fullState(s), want); d != "" {
		t.Fatalf("after reopen: %s", d)
	}
}

// writers are goroutines writing to a store until stopped or done.
type writers struct {
	wg     sync.WaitGroup
	stop   chan struct{}
	errs   chan error
	writes atomic.Int64 // writes done
}

// startWriters runs n writers, each calling write with its number, the
// write's number, and its own random source and vectors, limit times (or
// until finish when limit is negative); a writer stops at its first error.
func startWriters(n, limit int, write func(w, i int, rng *rand.Rand, gen *clustered) error) *writers {
	ws := &writers{stop: make(chan struct{}), errs: make(chan error, n)}
	for w := 0; w < n; w++ {
		ws.wg.Add(1)
		go func() {
			defer ws.wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 77))
			gen := newClustered(uint64(w)+20, ivfDim, 5)
			for i := 0; limit < 0 || i < limit; i++ {
				select {
				case <-ws.stop:
					return
				default:
				}
				if err := write(w, i, rng, gen); err != nil {
					ws.errs <- err
					return
				}
				ws.writes.Add(1)
			}
		}()
	}
	return ws
}

// finish stops the writers, waits for them and fails on their first error.
func (ws *writers) finish(t *testing.T) {
	t.Helper()
	close(ws.stop)
	ws.wait(t)
}

// wait waits for the writers to end and fails on their first error.
func (ws *writers) wait(t *testing.T) {
	t.Helper()
	ws.wg.Wait()
	select {
	case err := <-ws.errs:
		t.Fatal(err)
	default:
	}
}

// fillGen upserts chunks 0..n-1 of site (genChunk) in batches.
func fillGen(t *testing.T, s *Store, site int64, n, batch int, gen *clustered) {
	t.Helper()
	for i := 0; i < n; i += batch {
		var cs []vector.Chunk
		for j := i; j < min(i+batch, n); j++ {
			cs = append(cs, genChunk(site, j, gen.next()))
		}
		if err := s.Upsert(context.Background(), cs); err != nil {
			t.Fatal(err)
		}
	}
}
