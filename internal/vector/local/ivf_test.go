package local

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/lorekb/lore/internal/vector"
)

const ivfDim = 32

// smallANN indexes sites from 2,000 rows in lists of about 64, so the tests
// exercise builds, splits, list drops and the drop below 1,000 rows quickly.
var smallANN = annConfig{minRows: 2000, listRows: 64, probeDiv: 8, probeMin: 256, probeMax: 4096, probePerK: 16}

// fullANN is smallANN with a budget that covers every row: its results must
// equal the exact scan's, which proves every row sits in exactly one list.
var fullANN = annConfig{minRows: 2000, listRows: 64, probeDiv: 1, probeMin: 1 << 30, probeMax: 1 << 30, probePerK: 1}

// clustered draws embedding-like vectors: a topic centre plus a low-rank
// within-topic variation plus isotropic noise.
type clustered struct {
	rng    *rand.Rand
	dim    int
	topics [][]float32
	basis  [][][]float32
}

func newClustered(seed uint64, dim, topics int) *clustered {
	c := &clustered{rng: rand.New(rand.NewPCG(seed, seed^0x5bd1e995)), dim: dim}
	for t := 0; t < topics; t++ {
		c.topics = append(c.topics, c.gauss(1))
		var b [][]float32
		for j := 0; j < 4; j++ {
			b = append(b, c.gauss(1))
		}
		c.basis = append(c.basis, b)
	}
	return c
}

func (c *clustered) gauss(scale float64) []float32 {
	v := make([]float32, c.dim)
	for i := range v {
		v[i] = float32(c.rng.NormFloat64() * scale / math.Sqrt(float64(c.dim)))
	}
	return v
}

func (c *clustered) next() []float32 {
	t := c.rng.IntN(len(c.topics))
	v := c.gauss(0.3)
	for i, x := range c.topics[t] {
		v[i] += x
	}
	for _, b := range c.basis[t] {
		z := float32(c.rng.NormFloat64() * 0.35)
		for i, x := range b {
			v[i] += z * x
		}
	}
	return v
}

func openANN(t *testing.T, dir string, cfg annConfig) *Store {
	t.Helper()
	s, err := open(dir, ivfDim, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkIndex verifies the index of every site against its rows: each row in
// exactly one list at its recorded position, no empty list, sums and
// centroids matching the rows.
func checkIndex(t *testing.T, s *Store) {
	t.Helper()
	s.mu.RLock()
	defer s.mu.RUnlock()
	for id, st := range s.sites {
		x := st.ann
		if x == nil {
			if len(st.rows) >= s.ann.minRows {
				t.Fatalf("site %d has %d rows and no index", id, len(st.rows))
			}
			continue
		}
		if len(st.rows) < s.ann.minRows/2 {
			t.Fatalf("site %d has %d rows and still an index", id, len(st.rows))
		}
		if len(x.rowList) != len(st.rows) || len(x.rowPos) != len(st.rows) {
			t.Fatalf("site %d: %d rows, index locates %d/%d", id, len(st.rows), len(x.rowList), len(x.rowPos))
		}
		seen := 0
		for l, li := range x.lists {
			if len(li.rows) == 0 {
				t.Fatalf("site %d: list %d is empty", id, l)
			}
			sum := make([]float64, s.dim)
			for p, r := range li.rows {
				if int(x.rowList[r]) != l || int(x.rowPos[r]) != p {
					t.Fatalf("site %d: row %d is in list %d at %d but located at %d/%d", id, r, l, p, x.rowList[r], x.rowPos[r])
				}
				for i, f := range st.vecs.row(int(r)) {
					sum[i] += float64(f)
				}
				// The row's code (prepared by Upsert, moved by splits
				// and deletes) is its vector's.
				code, scale := quantize(nil, st.vecs.row(int(r)))
				if !slices.Equal(code, li.codes[p*s.dim:(p+1)*s.dim]) || scale != li.scales[p] {
					t.Fatalf("site %d: row %d in list %d at %d has another vector's code", id, r, l, p)
				}
				seen++
			}
			for i := range sum {
				if math.Abs(sum[i]-float64(li.sum[i])) > 1e-2 {
					t.Fatalf("site %d list %d: sum[%d] %v, rows add up to %v", id, l, i, li.sum[i], sum[i])
				}
			}
			c := normalize(li.sum)
			if d := dot(c, x.cents[l*s.dim:(l+1)*s.dim]); d < 0.9999 {
				t.Fatalf("site %d list %d: centroid off its sum (cos %v)", id, l, d)
			}
		}
		if seen != len(st.rows) {
			t.Fatalf("site %d: lists hold %d rows, site has %d", id, seen, len(st.rows))
		}
	}
}

// exact returns the exact scan's result for a site, bypassing the index.
func exact(s *Store, siteID int64, q []float32, k int, threshold float32) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := s.sites[siteID]
	if st == nil {
		return nil
	}
	ann := st.ann
	st.ann = nil
	defer func() { st.ann = ann }()
	var ids []string
	for _, c := range st.scan(normalize(q), s.dim, k, threshold, 1) {
		ids = append(ids, st.rows[c.row].id)
	}
	return ids
}

func searchIDs(t *testing.T, s *Store, siteID int64, q []float32, k int, threshold float32) []string {
	t.Helper()
	hits, err := s.Search(context.Background(), siteID, q, k, threshold)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, h := range hits {
		if h.SiteID != siteID {
			t.Fatalf("search of site %d returned chunk %s of site %d", siteID, h.ChunkID, h.SiteID)
		}
		ids = append(ids, h.ChunkID)
	}
	return ids
}

func recallAt(got, want []string, n int) float64 {
	if len(want) == 0 {
		return 1
	}
	want = want[:min(n, len(want))]
	in := map[string]bool{}
	for _, id := range got[:min(n, len(got))] {
		in[id] = true
	}
	hit := 0
	for _, id := range want {
		if in[id] {
			hit++
		}
	}
	return float64(hit) / float64(len(want))
}

func sameIDs(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func genChunk(site int64, n int, v []float32) vector.Chunk {
	doc := site*1_000_000 + int64(n/8+1)
	return vector.Chunk{ID: vector.ChunkID(doc, 1, n%8), SiteID: site, DocumentID: doc, Version: 1, Index: n % 8,
		Title: "t", Text: fmt.Sprintf("chunk %d", n), Vector: v}
}

// TestIVFFollowsWrites applies random inserts, replacements and deletions
// around the indexing threshold and checks after each step that the index
// matches the rows and that a search over every list equals the exact scan.
func TestIVFFollowsWrites(t *testing.T) {
	ctx := context.Background()
	s := openANN(t, t.TempDir(), fullANN)
	defer s.Close()
	gen := newClustered(1, ivfDim, 20)
	rng := rand.New(rand.NewPCG(3, 4))
	next := 0
	steps := []struct{ insert, deleteDocs int }{{1500, 0}, {1000, 10}, {3000, 50}, {0, 300}, {500, 100}, {2000, 0}, {0, 250}, {300, 0}, {0, 3000}, {2500, 0}}
	for i, step := range steps {
		for done := 0; done < step.insert; done += 100 {
			var cs []vector.Chunk
			for j := 0; j < 100; j++ {
				// One in five writes replaces an existing chunk.
				n := next
				if next > 0 && rng.IntN(5) == 0 {
					n = rng.IntN(next)
				} else {
					next++
				}
				cs = append(cs, genChunk(1, n, gen.next()))
			}
			if err := s.Upsert(ctx, cs); err != nil {
				t.Fatal(err)
			}
		}
		for j := 0; j < step.deleteDocs; j++ {
			if err := s.DeleteDocument(ctx, 1_000_000+int64(rng.IntN(next/8+1)+1)); err != nil {
				t.Fatal(err)
			}
		}
		checkIndex(t, s)
		s.mu.RLock()
		indexed := s.sites[1] != nil && s.sites[1].ann != nil
		s.mu.RUnlock()
		n := count(t, s)
		t.Logf("step %d: %d rows, indexed %v", i, n, indexed)
		for q := 0; q < 20; q++ {
			v := gen.next()
			want := exact(s, 1, v, 10, -1)
			if got := searchIDs(t, s, 1, v, 10, -1); !sameIDs(got, want) {
				t.Fatalf("step %d: search over every list %v, exact %v", i, got, want)
			}
		}
	}
}

// TestIVFRecallAndBudget checks recall@10 against the exact scan on
// clustered data, and that the index scans less than the whole site.
func TestIVFRecallAndBudget(t *testing.T) {
	ctx := context.Background()
	s := openANN(t, t.TempDir(), smallANN)
	defer s.Close()
	gen := newClustered(2, ivfDim, 40)
	const n = 20_000
	for i := 0; i < n; i += 1000 {
		var cs []vector.Chunk
		for j := i; j < i+1000; j++ {
			cs = append(cs, genChunk(1, j, gen.next()))
		}
		if err := s.Upsert(ctx, cs); err != nil {
			t.Fatal(err)
		}
	}
	checkIndex(t, s)
	s.mu.RLock()
	lists := len(s.sites[1].ann.lists)
	s.mu.RUnlock()
	if lists < n/(2*smallANN.listRows) {
		t.Fatalf("%d lists for %d rows of target %d", lists, n, smallANN.listRows)
	}
	if b := smallANN.budget(n, 10); b >= n/2 {
		t.Fatalf("budget %d rows: the index would scan half the site", b)
	}
	var sum float64
	const queries = 200
	for q := 0; q < queries; q++ {
		v := gen.next()
		sum += recallAt(searchIDs(t, s, 1, v, 10, -1), exact(s, 1, v, 10, -1), 10)
	}
	if r := sum / queries; r < 0.95 {
		t.Fatalf("recall@10 %.3f < 0.95 (%d lists)", r, lists)
	} else {
		t.Logf("recall@10 %.3f over %d queries, %d lists, budget %d of %d rows", r, queries, lists, smallANN.budget(n, 10), n)
	}
}

// TestIVFSiteFilterExact: a site holding 1% of the store is searched
// exactly, and no search of either site returns the other's chunks, even for
// queries that are the other site's own vectors.
func TestIVFSiteFilterExact(t *testing.T) {
	ctx := context.Background()
	s := openANN(t, t.TempDir(), smallANN)
	defer s.Close()
	gen := newClustered(5, ivfDim, 20)
	var small [][]float32
	for i := 0; i < 10_000; i += 500 {
		var cs []vector.Chunk
		for j := i; j < i+500; j++ {
			v := gen.next()
			if j%100 == 0 { // 1% of the store, from the same topics
				small = append(small, v)
				cs = append(cs, genChunk(2, 1_000_000+j, v))
				continue
			}
			cs = append(cs, genChunk(1, j, v))
		}
		if err := s.Upsert(ctx, cs); err != nil {
			t.Fatal(err)
		}
	}
	s.mu.RLock()
	bigIndexed, smallIndexed := s.sites[1].ann != nil, s.sites[2].ann != nil
	s.mu.RUnlock()
	if !bigIndexed || smallIndexed {
		t.Fatalf("indexed: big site %v, 1%% site %v; want true, false", bigIndexed, smallIndexed)
	}
	for i, v := range small {
		got := searchIDs(t, s, 2, v, 10, -1)
		if want := exact(s, 2, v, 10, -1); !sameIDs(got, want) {
			t.Fatalf("1%% site: %v, exact %v", got, want)
		}
		if i < 20 {
			searchIDs(t, s, 1, v, 50, -1) // fails on any chunk of site 2
		}
	}
	for q := 0; q < 50; q++ {
		searchIDs(t, s, 2, gen.next(), 100, -1)
	}
	// A threshold is exact on the index too: nothing below it.
	hits, err := s.Search(ctx, 1, small[0], 50, 0.8)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hits {
		if h.Score < 0.8 {
			t.Fatalf("hit %s scored %v under the 0.8 threshold", h.ChunkID, h.Score)
		}
	}
}

// TestIVFReopen: the index is rebuilt from the snapshot and the log when the
// store opens, and matches the rows again.
func TestIVFReopen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openANN(t, dir, fullANN)
	s.compactBytes = 256 << 10 // some state in the snapshot, some in the log
	gen := newClustered(7, ivfDim, 20)
	fillGen(t, s, 1, 6000, 200, gen)
	for d := int64(1); d < 300; d += 3 {
		if err := s.DeleteDocument(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	queries := make([][]float32, 20)
	before := make([][]string, len(queries))
	for i := range queries {
		queries[i] = gen.next()
		before[i] = exact(s, 1, queries[i], 10, -1)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openANN(t, dir, fullANN)
	defer s.Close()
	checkIndex(t, s)
	for i, q := range queries {
		if got := searchIDs(t, s, 1, q, 10, -1); !sameIDs(got, before[i]) {
			t.Fatalf("after reopen: %v, before %v", got, before[i])
		}
	}
}

// crashOp is the i-th write of the crash test's deterministic sequence
// for a site: upserts of 50 chunks (some replacing earlier ones) and every
// tenth write a document deletion.
func crashOp(ctx context.Context, s *Store, site int64, gen *clustered, rng *rand.Rand, i int) error {
	if i%10 == 9 {
		return s.DeleteDocument(ctx, site*1_000_000+int64(rng.IntN(i*50/8+1)+1))
	}
	var cs []vector.Chunk
	for j := 0; j < 50; j++ {
		n := i*50 + j
		if rng.IntN(6) == 0 {
			n = rng.IntN(n + 1)
		}
		cs = append(cs, genChunk(site, n, gen.next()))
	}
	return s.Upsert(ctx, cs)
}

func crashSeq(site int64) (*clustered, *rand.Rand) {
	return newClustered(uint64(site)*11, ivfDim, 20), rand.New(rand.NewPCG(uint64(site), 13))
}

// TestIVFCrashChild is the writer the crash test kills; it runs only as that
// test's child process.
func TestIVFCrashChild(t *testing.T) {
	dir := os.Getenv("LORE_IVF_CRASH_DIR")
	if dir == "" {
		t.Skip("child process of TestIVFCrash")
	}
	site, _ := strconv.ParseInt(os.Getenv("LORE_IVF_CRASH_SITE"), 10, 64)
	s := openANN(t, dir, fullANN)
	s.compactBytes = 512 << 10 // compactions happen between the writes too
	gen, rng := crashSeq(site)
	out := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		if err := crashOp(context.Background(), s, site, gen, rng, i); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(out, "ack %d\n", i)
		out.Flush()
	}
}

// siteState copies a site's chunks (ID to vector).
func siteState(s *Store, site int64) map[string][]float32 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	m := map[string][]float32{}
	st := s.sites[site]
	if st == nil {
		return m
	}
	for _, r := range st.rows {
		m[r.id] = append([]float32(nil), st.vecs.row(r.row)...)
	}
	return m
}

func sameState(a, b map[string][]float32) bool {
	if len(a) != len(b) {
		return false
	}
	for id, v := range a {
		w, ok := b[id]
		if !ok || dot(v, w) < 0.99999 {
			return false
		}
	}
	return true
}

// modelState is a site's state after the writes 0..last of its sequence.
func modelState(t *testing.T, site int64, last int) map[string][]float32 {
	m := openANN(t, t.TempDir(), fullANN)
	defer m.Close()
	gen, rng := crashSeq(site)
	for i := 0; i <= last; i++ {
		if err := crashOp(context.Background(), m, site, gen, rng, i); err != nil {
			t.Fatal(err)
		}
	}
	return siteState(m, site)
}

// TestIVFCrash kills a writing process (SIGKILL: no Close, a write in
// flight) three times over the same directory, each time on a new site, and
// checks after each that the reopened store holds exactly the acknowledged
// writes, or those plus the one in flight, that the earlier sites are as
// they were, and that the rebuilt index matches the rows.
func TestIVFCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns writer processes")
	}
	dir := t.TempDir()
	found := map[int64]map[string][]float32{}
	for site := int64(1); site <= 3; site++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestIVFCrashChild$")
		cmd.Env = append(os.Environ(), "LORE_IVF_CRASH_DIR="+dir, fmt.Sprintf("LORE_IVF_CRASH_SITE=%d", site))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		acked, killAt := -1, 60+int(site)*23
		sc := bufio.NewScanner(stdout)
		readAcks := func(until int) { // the last ack read, until one ≥ until or the pipe ends
			for acked < until && sc.Scan() {
				var n int
				if _, err := fmt.Sscanf(sc.Text(), "ack %d", &n); err == nil {
					acked = n
				}
			}
		}
		readAcks(killAt)
		_ = cmd.Process.Kill()
		// The writer may have acknowledged more writes between the ack read
		// above and the kill: they are in the pipe still, and the store must
		// hold them too.
		readAcks(math.MaxInt)
		_ = cmd.Wait()
		if acked < killAt {
			t.Fatalf("site %d: the writer acknowledged %d writes and stopped", site, acked+1)
		}
		s := openANN(t, dir, fullANN)
		checkIndex(t, s)
		got := siteState(s, site)
		switch {
		case sameState(got, modelState(t, site, acked)):
			t.Logf("site %d: killed after %d acknowledged writes; store holds exactly them (%d chunks)", site, acked+1, len(got))
		case sameState(got, modelState(t, site, acked+1)):
			t.Logf("site %d: killed after %d acknowledged writes; store holds them and the write in flight (%d chunks)", site, acked+1, len(got))
		default:
			t.Fatalf("site %d: after %d acknowledged writes the store holds %d chunks matching neither them nor them plus the write in flight", site, acked+1, len(got))
		}
		found[site] = got
		for earlier := int64(1); earlier < site; earlier++ {
			if !sameState(siteState(s, earlier), found[earlier]) {
				t.Fatalf("site %d changed after a later crash", earlier)
			}
		}
		for q := 0; q < 10; q++ {
			v := newClustered(99, ivfDim, 20).next()
			if a, e := searchIDs(t, s, site, v, 10, -1), exact(s, site, v, 10, -1); !sameIDs(a, e) {
				t.Fatalf("site %d: search over every list %v, exact %v", site, a, e)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDotI8KernelsAgree checks the AVX2 int8 kernel (where present) against
// the portable loop, and that the codes approximate the floats.
func TestDotI8KernelsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for _, dim := range []int{8, 64, 256, 384, 1000} {
		a := make([]float32, dim)
		b := make([]float32, dim)
		for i := range a {
			a[i], b[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
		}
		a, b = normalize(a), normalize(b)
		ca, sa := quantize(nil, a)
		qb, sb := quantizeQuery(b)
		got, want := dotI8(ca, qb), dotI8Generic(ca, qb)
		if got != want {
			t.Fatalf("dim %d: kernel %d, portable %d", dim, got, want)
		}
		if approx, exact := float32(got)*sa*sb, dot(a, b); math.Abs(float64(approx-exact)) > 0.02 {
			t.Fatalf("dim %d: code score %v, exact %v", dim, approx, exact)
		}
	}
}

// TestIVFIndexFile: the index file saved with a snapshot restores the same
// lists on open; a corrupt or stale one is ignored and the index rebuilt.
func TestIVFIndexFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openANN(t, dir, fullANN)
	gen := newClustered(21, ivfDim, 20)
	for i := 0; i < 5000; i += 250 {
		var cs []vector.Chunk
		for j := i; j < i+250; j++ {
			cs = append(cs, genChunk(1, j, gen.next()))
		}
		if err := s.Upsert(ctx, cs); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Compact(); err != nil {
		t.Fatal(err)
	}
	assignment := func(s *Store) []int32 {
		s.mu.RLock()
		defer s.mu.RUnlock()
		return append([]int32(nil), s.sites[1].ann.rowList...)
	}
	saved := assignment(s)
	q := gen.next()
	want := exact(s, 1, q, 10, -1)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, indexName)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	reopen := func(what string) []int32 {
		t.Helper()
		s := openANN(t, dir, fullANN)
		defer s.Close()
		checkIndex(t, s)
		if got := searchIDs(t, s, 1, q, 10, -1); !sameIDs(got, want) {
			t.Fatalf("%s: search %v, exact before %v", what, got, want)
		}
		return assignment(s)
	}
	if got := reopen("index file"); !slices.Equal(got, saved) {
		t.Fatalf("the index file did not restore the saved lists")
	}
	bad := append([]byte(nil), good...)
	bad[len(bad)/2] ^= 0xff
	if err := os.WriteFile(path, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	reopen("corrupt index file")
	// A file of an older snapshot generation is stale.
	s = openANN(t, dir, fullANN)
	if err := s.Compact(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := os.WriteFile(path, good, 0o644); err != nil {
		t.Fatal(err)
	}
	s = openANN(t, dir, fullANN)
	if s.readIndexes(s.gen) != nil {
		t.Fatal("an index file of an older generation was accepted")
	}
	s.Close()
	reopen("stale index file")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	reopen("no index file")
}
