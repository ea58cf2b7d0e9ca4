package local

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/vector"
	"github.com/lorekb/lore/internal/vector/vectortest"
)

func openTest(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir, vectortest.Dim)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	vectortest.Run(t, func(t *testing.T) vector.Store {
		s := openTest(t, t.TempDir())
		t.Cleanup(func() { s.Close() })
		return s
	})
}

func TestConformanceReopen(t *testing.T) {
	vectortest.RunReopen(t, func(t *testing.T, dir string) vector.Store {
		return openTest(t, dir)
	})
}

// TestConformanceReopenCompacting runs the persistence suite with a log that
// is compacted after every write, so recovery goes through snapshots too.
// The compactions run in the background (compact.go): the suite's next
// writes, searches and deletes run while the snapshot is being written
// (Close waits for the one in flight).
func TestConformanceReopenCompacting(t *testing.T) {
	vectortest.RunReopen(t, func(t *testing.T, dir string) vector.Store {
		s := openTest(t, dir)
		s.compactBytes = 1
		return s
	})
}

func vec(xs ...float32) []float32 {
	v := make([]float32, vectortest.Dim)
	copy(v, xs)
	return v
}

func chunk(site, doc, version int64, index int, v []float32, text string) vector.Chunk {
	return vector.Chunk{
		ID: vector.ChunkID(doc, version, index), SiteID: site, DocumentID: doc, Version: version,
		Index: index, Title: "T", Text: text, Vector: v,
	}
}

// mustUpsert upserts the chunks, failing the test on error.
func mustUpsert(t testing.TB, s *Store, chunks ...vector.Chunk) {
	t.Helper()
	if err := s.Upsert(context.Background(), chunks); err != nil {
		t.Fatal(err)
	}
}

// keywordStore is a store of site 1 holding chunks, closed when the test ends.
func keywordStore(t *testing.T, chunks ...vector.Chunk) *Store {
	t.Helper()
	s := openTest(t, t.TempDir())
	t.Cleanup(func() { s.Close() })
	mustUpsert(t, s, chunks...)
	return s
}

// wantKeywordHits fails the test unless a keyword search of site 1 for
// query finds n hits, the first of document doc.
func wantKeywordHits(t *testing.T, s *Store, query string, n int, doc int64) {
	t.Helper()
	hits, err := s.KeywordSearch(context.Background(), 1, query, 10)
	if err != nil || len(hits) != n || hits[0].DocumentID != doc {
		t.Fatalf("%q: hits = %+v, %v; want %d, the first of document %d", query, hits, err, n, doc)
	}
}

func count(t *testing.T, s *Store) int {
	t.Helper()
	n, err := s.Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func walPath(s *Store) string { return s.wal.path }

// reopenWithCount opens the store in dir again (closed when the test ends)
// and fails the test unless it holds want chunks.
func reopenWithCount(t *testing.T, dir string, want int, what string) *Store {
	t.Helper()
	s := openTest(t, dir)
	t.Cleanup(func() { s.Close() })
	if n := count(t, s); n != want {
		t.Fatalf("%d chunks %s, want %d", n, what, want)
	}
	return s
}

func TestTornLastRecordIsDropped(t *testing.T) {
	ctx := context.Background()
	// Each case writes three records and a fourth, then cuts the log inside
	// the fourth as a crash during its write would.
	for _, cut := range []struct {
		name string
		keep func(good, full int64) int64
	}{
		{"inside header", func(good, full int64) int64 { return good + 3 }},
		{"inside payload", func(good, full int64) int64 { return good + walHeaderSize + 5 }},
		{"last byte missing", func(good, full int64) int64 { return full - 1 }},
	} {
		t.Run(cut.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openTest(t, dir)
			for i := 0; i < 3; i++ {
				mustUpsert(t, s, chunk(1, int64(i), 1, 0, vec(1), fmt.Sprintf("doc %d", i)))
			}
			path := walPath(s)
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			good := st.Size()
			mustUpsert(t, s, chunk(1, 99, 1, 0, vec(0, 1), "the torn one"))
			s.Close()
			full, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, full[:cut.keep(good, int64(len(full)))], 0o644); err != nil {
				t.Fatal(err)
			}

			s = openTest(t, dir)
			if n := count(t, s); n != 3 {
				t.Fatalf("%d chunks after recovery, want 3", n)
			}
			if n, _ := s.CountDocument(ctx, 99); n != 0 {
				t.Fatal("torn record applied")
			}
			// The log was cut back to its intact prefix and takes new writes
			// that survive the next reopen.
			if st, _ := os.Stat(path); st.Size() != good {
				t.Fatalf("log is %d bytes, want %d", st.Size(), good)
			}
			mustUpsert(t, s, chunk(1, 50, 1, 0, vec(1), "after recovery"))
			s.Close()
			reopenWithCount(t, dir, 4, "after writing past recovery")
		})
	}
}

func TestCorruptRecordChecksum(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	for i := 0; i < 2; i++ {
		mustUpsert(t, s, chunk(1, int64(i), 1, 0, vec(1), "x"))
	}
	path := walPath(s)
	s.Close()
	data, _ := os.ReadFile(path)
	data[len(data)-1] ^= 0xff // flip a bit in the last record's payload
	os.WriteFile(path, data, 0o644)
	reopenWithCount(t, dir, 1, "(last record fails its checksum)")
}

func TestCompactionAndCrashLeftovers(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openTest(t, dir)
	for i := 0; i < 20; i++ {
		mustUpsert(t, s, chunk(1, int64(i), 1, 0, vec(float32(i), 1), fmt.Sprintf("doc %d", i)))
	}
	oldLog := walPath(s)
	if err := s.Compact(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(oldLog); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("old log still there: %v", err)
	}
	if st, _ := os.Stat(walPath(s)); st.Size() != 0 {
		t.Fatalf("new log has %d bytes", st.Size())
	}
	if err := s.DeleteDocument(ctx, 3); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// Leftovers of a compaction that crashed: a temporary snapshot and a log
	// of an older generation. Both must be ignored and removed.
	os.WriteFile(filepath.Join(dir, snapshotTmp), []byte("partial"), 0o644)
	os.WriteFile(oldLog, []byte("stale log of an old generation"), 0o644)
	s = reopenWithCount(t, dir, 19, "after compaction+reopen")
	for _, name := range []string{snapshotTmp, filepath.Base(oldLog)} {
		if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s not cleaned up", name)
		}
	}

	// A crash in the middle of a compaction, after writes went to the new
	// log: the old snapshot, both logs and the new snapshot written but not
	// renamed into place.
	var crashDir string
	s.hook = func(stage string) {
		switch stage {
		case "rotated":
			if err := s.DeleteDocument(ctx, 4); err != nil {
				t.Error(err)
			}
			if err := s.Upsert(ctx, []vector.Chunk{chunk(1, 30, 1, 0, vec(3, 1), "written during the compaction")}); err != nil {
				t.Error(err)
			}
		case "written":
			crashDir = copyDir(t, dir)
		}
	}
	if err := s.Compact(); err != nil {
		t.Fatal(err)
	}
	s.hook = nil
	if gens, _ := logsFrom(crashDir, 0); len(gens) != 2 {
		t.Fatalf("logs %v at the crash, want the old and the new", gens)
	}
	c := openTest(t, crashDir)
	defer c.Close()
	if n := count(t, c); n != 19 {
		t.Fatalf("%d chunks after a crash inside compaction, want 19", n)
	}
	if n, _ := c.CountDocument(ctx, 4); n != 0 {
		t.Fatal("delete made during the compaction lost")
	}
	if n, _ := c.CountDocument(ctx, 30); n != 1 {
		t.Fatal("upsert made during the compaction lost")
	}
	for _, name := range []string{snapshotTmp} {
		if _, err := os.Stat(filepath.Join(crashDir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s not cleaned up", name)
		}
	}
}

func TestAutomaticCompaction(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	s.compactBytes = 4096
	gen := s.gen
	for i := 0; i < 200; i++ {
		mustUpsert(t, s, chunk(1, int64(i), 1, 0, vec(1, float32(i)), "some text to make the record bigger"))
	}
	// Compactions finish in the background: a write made after the last
	// one starts the next if the log has outgrown the snapshot again.
	s.waitCompaction()
	mustUpsert(t, s, chunk(1, 0, 1, 0, vec(1, 0), "some text to make the record bigger"))
	s.waitCompaction()
	if s.gen == gen {
		t.Fatal("log never compacted")
	}
	if s.wal.size+s.oldLogs > max(s.compactBytes, s.snapLen) {
		t.Fatalf("log of %d bytes not compacted", s.wal.size)
	}
	if gens, _ := logsFrom(dir, 0); len(gens) != 1 {
		t.Fatalf("logs %v left after compaction", gens)
	}
	s.Close()
	reopenWithCount(t, dir, 200, "after reopening")
}

func TestDimensionMismatchOnReopen(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	s.Close()
	if _, err := Open(dir, vectortest.Dim*2); !errors.Is(err, vector.ErrDimension) {
		t.Fatalf("got %v, want ErrDimension", err)
	}
}

func TestCorruptSnapshotRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openTest(t, dir)
	s.Upsert(ctx, []vector.Chunk{chunk(1, 1, 1, 0, vec(1), "x")})
	s.Compact()
	s.Close()
	path := filepath.Join(dir, snapshotName)
	data, _ := os.ReadFile(path)
	data[len(data)/2] ^= 0x55
	os.WriteFile(path, data, 0o644)
	if s, err := Open(dir, vectortest.Dim); err == nil {
		s.Close()
		t.Fatal("opened a store with a corrupt snapshot")
	}
}

func TestDirectoryLocked(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir)
	if s2, err := Open(dir, vectortest.Dim); err == nil {
		s2.Close()
		t.Fatal("second Open of the same directory succeeded")
	}
	s.Close()
	s2, err := Open(dir, vectortest.Dim)
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	s2.Close()
}

func TestClosed(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := s.Upsert(ctx, []vector.Chunk{chunk(1, 1, 1, 0, vec(1), "x")}); !errors.Is(err, vector.ErrClosed) {
		t.Errorf("Upsert after Close: %v", err)
	}
	if _, err := s.Search(ctx, 1, vec(1), 1, 0); !errors.Is(err, vector.ErrClosed) {
		t.Errorf("Search after Close: %v", err)
	}
	if _, err := s.Count(ctx); !errors.Is(err, vector.ErrClosed) {
		t.Errorf("Count after Close: %v", err)
	}
}

func TestRejectsNonFinite(t *testing.T) {
	s := openTest(t, t.TempDir())
	defer s.Close()
	if err := s.Upsert(context.Background(), []vector.Chunk{chunk(1, 1, 1, 0, vec(float32(math.NaN())), "x")}); err == nil {
		t.Fatal("NaN accepted")
	}
	if n := count(t, s); n != 0 {
		t.Fatalf("%d chunks stored", n)
	}
}

func TestDotKernelsAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 3, 8, 16, 24, 32, 40, 256, 260, 1536} {
		a, b := make([]float32, n), make([]float32, n)
		var want float64
		for i := range a {
			a[i], b[i] = r.Float32()*2-1, r.Float32()*2-1
			want += float64(a[i]) * float64(b[i])
		}
		for name, got := range map[string]float32{"dot": dot(a, b), "generic": dotGeneric(a, b)} {
			if math.Abs(float64(got)-want) > 1e-4*math.Sqrt(float64(n)) {
				t.Errorf("%s n=%d: %v, want %v", name, n, got, want)
			}
		}
	}
}

// TestParallelScanMatchesSerial checks the multi-goroutine scan against one
// worker on a site big enough to be split.
func TestParallelScanMatchesSerial(t *testing.T) {
	const dim, n = 16, 3*rowsPerWorker + 17
	r := rand.New(rand.NewPCG(3, 4))
	st := &site{}
	for i := 0; i < n; i++ {
		v := make([]float32, dim)
		for j := range v {
			v[j] = r.Float32()*2 - 1
		}
		st.add(&record{id: fmt.Sprintf("c%06d", i)}, normalize(v), nil)
	}
	q := make([]float32, dim)
	for j := range q {
		q[j] = r.Float32()*2 - 1
	}
	q = normalize(q)
	for _, k := range []int{1, 10, 100} {
		par := st.scan(q, dim, k, -1, 4)
		ser := st.scan(q, dim, k, -1, 1)
		if len(par) != k || len(ser) != k {
			t.Fatalf("k=%d: %d and %d results", k, len(par), len(ser))
		}
		// Brute-force reference.
		all := make([]float32, n)
		for i := 0; i < n; i++ {
			all[i] = dotGeneric(q, st.vecs.row(i))
		}
		sort.Slice(all, func(i, j int) bool { return all[i] > all[j] })
		for i := range par {
			if par[i] != ser[i] {
				t.Fatalf("k=%d: parallel %v differs from serial %v at %d", k, par[i], ser[i], i)
			}
			if math.Abs(float64(par[i].score-all[i])) > 1e-5 {
				t.Fatalf("k=%d: result %d score %v, reference %v", k, i, par[i].score, all[i])
			}
		}
	}
}

func TestKeywordIndexCleanup(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	defer s.Close()
	// Churn: many versions of the same document, each replacing the last.
	for v := int64(1); v <= 60; v++ {
		var chunks []vector.Chunk
		for i := 0; i < 20; i++ {
			chunks = append(chunks, chunk(1, 1, v, i, vec(1, float32(i)), fmt.Sprintf("common words version%d part%d", v, i)))
		}
		if err := s.Upsert(ctx, chunks); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteStaleVersions(ctx, 1, v); err != nil {
			t.Fatal(err)
		}
	}
	kw := &s.sites[1].kw
	if kw.dead > kw.postings/2+1024 {
		t.Fatalf("dead postings not cleaned: %d of %d", kw.dead, kw.postings)
	}
	hits, err := s.KeywordSearch(ctx, 1, "common", 100)
	if err != nil || len(hits) != 20 {
		t.Fatalf("%d hits, %v", len(hits), err)
	}
	for _, h := range hits {
		if h.Version != 60 {
			t.Fatalf("stale version %d returned", h.Version)
		}
	}
	if hits, _ := s.KeywordSearch(ctx, 1, "version59", 10); len(hits) != 0 {
		t.Fatalf("deleted version found: %v", hits)
	}
	// Live postings are exact: "common" is in 20 chunks.
	if df := kw.terms["common"].df; df != 20 {
		t.Fatalf("df(common) = %d", df)
	}
}

// TestKeywordSearchUsesAnalyzer: the index matches words as the analyzer
// does, so inflections meet, stop words decide nothing, and Chinese queries
// find Chinese chunks.
func TestKeywordSearchUsesAnalyzer(t *testing.T) {
	s := keywordStore(t,
		chunk(1, 1, 1, 0, vec(1, 0), "Restoring backups from the archive"),
		chunk(1, 2, 1, 0, vec(0, 1), "How do I do it? What is it? How is it done?"),
		chunk(1, 3, 1, 0, vec(1, 1), "显示文件系统的磁盘使用情况"))
	wantKeywordHits(t, s, "How do I restore a backup?", 1, 1)
	wantKeywordHits(t, s, "磁盘使用", 1, 3)
}

// bench100k is built once for all runs of BenchmarkSearch100k.
var bench100k struct {
	once    sync.Once
	store   *Store
	queries [][]float32
	err     error
}

func BenchmarkSearch100k(b *testing.B) {
	const n, dim, batch = 100_000, 256, 2000
	bench100k.once.Do(func() {
		dir, err := os.MkdirTemp("", "lore-vector-bench-")
		if err != nil {
			bench100k.err = err
			return
		}
		// The store serves from memory; its files are only needed to
		// measure the write path, so they are removed once it is built.
		defer os.RemoveAll(dir)
		s, err := Open(dir, dim)
		if err != nil {
			bench100k.err = err
			return
		}
		r := rand.New(rand.NewPCG(42, 42))
		randVec := func() []float32 {
			v := make([]float32, dim)
			for i := range v {
				v[i] = float32(r.NormFloat64())
			}
			return v
		}
		ctx := context.Background()
		for start := 0; start < n; start += batch {
			chunks := make([]vector.Chunk, 0, batch)
			for i := start; i < start+batch; i++ {
				doc := int64(i / 10)
				chunks = append(chunks, vector.Chunk{
					ID: vector.ChunkID(doc, 1, i%10), SiteID: 1, DocumentID: doc, Version: 1, Index: i % 10,
					Title: fmt.Sprintf("Document %d", doc), Text: fmt.Sprintf("chunk %d of document %d", i%10, doc),
					Vector: randVec(),
				})
			}
			if err := s.Upsert(ctx, chunks); err != nil {
				bench100k.err = err
				return
			}
		}
		for i := 0; i < 64; i++ {
			bench100k.queries = append(bench100k.queries, randVec())
		}
		bench100k.store = s
	})
	if bench100k.err != nil {
		b.Fatal(bench100k.err)
	}
	s := bench100k.store
	ctx := context.Background()
	durations := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	i := 0
	for b.Loop() {
		start := time.Now()
		hits, err := s.Search(ctx, 1, bench100k.queries[i%len(bench100k.queries)], 10, -1)
		durations = append(durations, time.Since(start))
		if err != nil || len(hits) != 10 {
			b.Fatalf("%d hits, %v", len(hits), err)
		}
		i++
	}
	sort.Slice(durations, func(i, j int) bool { return durations[i] < durations[j] })
	pct := func(p float64) float64 {
		return float64(durations[int(p*float64(len(durations)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// TestKeywordSearchTitleWeight: a document whose title names the query's
// subject outranks one that only mentions it in passing, even twice (the
// title counts vector.TitleWeight times).
func TestKeywordSearchTitleWeight(t *testing.T) {
	titled := chunk(1, 1, 1, 0, vec(1, 0), "Copies the archive back into the data directory.")
	titled.Title = "Restoring backups"
	mention := chunk(1, 2, 1, 0, vec(0, 1), "Before an upgrade, take a backup; the backup is kept for a week.")
	mention.Title = "Upgrading"
	filler := chunk(1, 3, 1, 0, vec(1, 1), "Nothing related here at all.")
	wantKeywordHits(t, keywordStore(t, titled, mention, filler), "backup", 2, 1)
}

// TestKeywordSearchChineseCharacters: a Chinese question matches a page
// that shares a character of its words but not the words (几行 and 10行).
func TestKeywordSearchChineseCharacters(t *testing.T) {
	s := keywordStore(t,
		chunk(1, 1, 1, 0, vec(1, 0), "将文件的倒数10行输出至标准输出"),
		chunk(1, 2, 1, 0, vec(0, 1), "显示磁盘使用情况"))
	wantKeywordHits(t, s, "几行", 1, 1)
}
