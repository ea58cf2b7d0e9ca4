// Package local is an embedded vector.Store kept in a directory, for a
// single Lore worker that needs no vector database server.
//
// All chunks live in memory, partitioned by site: a search scans only its
// site's normalised vectors, contiguous in slabs of 16k rows (brute-force cosine, split
// over the CPU cores, with a bounded top-k heap), which is exact and fast
// enough for hundreds of thousands of chunks per site. A BM25 inverted index
// per site serves keyword search and is updated with every write.
//
// Durability: every write is appended to a checksummed log and fsynced
// before it is applied, and the log is periodically compacted into a
// snapshot. Opening the store replays the log and drops a torn last record,
// so a crash loses at most the write that was in flight (which had not been
// acknowledged).
//
// One process owns the directory: Open takes an exclusive lock on it (on
// Unix), so run exactly one worker per store directory. Within the process
// the store is safe for concurrent use; searches run in parallel with each
// other and are blocked only while a write is applied in memory.
package local

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/lorekb/lore/internal/vector"
)

// DefaultCompactBytes is the log size from which a write triggers compaction
// (the log must also have outgrown the last snapshot, so compaction work
// stays proportional to the writes).
const DefaultCompactBytes = 64 << 20

// Store is the embedded store. Create it with Open.
type Store struct {
	dir string
	dim int

	// compactMu is held by the one compaction that may run, from its
	// rotation to its end (compact.go); gen is guarded by it.
	compactMu sync.Mutex
	gen       uint64 // of the snapshot on disk
	// writeMu serialises writers, so the log order is the apply order, and
	// guards the fields below it.
	writeMu sync.Mutex
	wal     *wal
	logGen  uint64 // of the log taking writes
	oldLogs int64  // bytes of older logs the snapshot does not hold yet
	snapLen int64  // size of the last snapshot
	// compactBytes is the minimum log size that triggers compaction.
	compactBytes int64
	lock         *os.File

	// mu guards the in-memory state below.
	mu      sync.RWMutex
	closed  bool
	sites   map[int64]*site
	byID    map[string]*record
	byDoc   map[int64]map[string]*record
	workers int
	ann     annConfig // when and how large sites are indexed (ivf.go)

	hook func(stage string) // tests: called at each stage of a compaction
}

var (
	_ vector.Store       = (*Store)(nil)
	_ vector.StatsSource = (*Store)(nil)
)

// Open opens the store in dir, creating the directory and an empty store if
// needed, for vectors of dim dimensions. Opening an existing store with a
// different dimension fails with vector.ErrDimension.
func Open(dir string, dim int) (*Store, error) {
	return open(dir, dim, defaultANN)
}

// open is Open with the index settings (tests use small ones).
func open(dir string, dim int, ann annConfig) (*Store, error) {
	if dim <= 0 {
		return nil, fmt.Errorf("local vector store: dimension must be positive, got %d", dim)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("local vector store: %w", err)
	}
	lock, err := lockDir(filepath.Join(dir, lockName))
	if err != nil {
		return nil, fmt.Errorf("local vector store: %s is in use by another process: %w", dir, err)
	}
	s := &Store{
		dir:          dir,
		dim:          dim,
		compactBytes: DefaultCompactBytes,
		lock:         lock,
		sites:        make(map[int64]*site),
		byID:         make(map[string]*record),
		byDoc:        make(map[int64]map[string]*record),
		workers:      defaultWorkers(),
		ann:          ann,
	}
	if err := s.load(); err != nil {
		unlockDir(lock)
		return nil, fmt.Errorf("local vector store: open %s: %w", dir, err)
	}
	return s, nil
}

// load restores the state from the snapshot and the logs, then starts the
// log for new writes.
func (s *Store) load() error {
	// Sites get their indexes in one pass once the snapshot is in
	// (ivfpersist.go), not row by row while it loads.
	ann := s.ann
	s.ann.minRows = math.MaxInt
	gen, snapLen, ok, err := s.readSnapshot()
	s.ann = ann
	if err != nil {
		return err
	}
	s.restoreIndexes(gen)
	s.gen, s.snapLen, s.logGen = gen, snapLen, gen
	// Every log from the snapshot's generation on, oldest first: more than
	// one are left by a compaction that did not finish (compact.go).
	gens, err := logsFrom(s.dir, gen)
	if err != nil {
		return err
	}
	if len(gens) == 0 || gens[0] != gen {
		gens = append([]uint64{gen}, gens...) // a missing log is empty
	}
	var good int64
	for i, g := range gens {
		if good, err = replayWAL(filepath.Join(s.dir, walName(g)), s.applyPayload); err != nil {
			return err
		}
		if i < len(gens)-1 {
			s.oldLogs += good
		}
	}
	s.logGen = gens[len(gens)-1]
	if err := removeLogsBefore(s.dir, gen); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(s.dir, snapshotTmp)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if s.wal, err = openWAL(filepath.Join(s.dir, walName(s.logGen)), good); err != nil {
		return err
	}
	if !ok || len(gens) > 1 || s.wal.size > max(s.compactBytes, s.snapLen) {
		// A new store records its dimension in a first snapshot; several
		// logs or a long one are folded into one so the next open is fast.
		return s.compact()
	}
	return nil
}

// Close flushes nothing (every write is already durable), waits for a
// compaction that is running, closes the log and releases the directory. It
// is safe to call more than once.
func (s *Store) Close() error {
	s.compactMu.Lock()
	defer s.compactMu.Unlock()
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.wal.f.Close()
	if uerr := unlockDir(s.lock); err == nil {
		err = uerr
	}
	return err
}

// Compact writes a snapshot of the current state and starts a new, empty
// log. It runs automatically when the logs outgrow the snapshot; call it to
// make the next Open fast, e.g. before a planned shutdown. Writes go on
// while it writes the snapshot (compact.go).
func (s *Store) Compact() error {
	return s.compact()
}

func (s *Store) isClosed() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.closed
}

// write logs rec durably, then applies it in memory.
func (s *Store) write(ctx context.Context, rec *encoder, apply func()) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.isClosed() {
		return vector.ErrClosed
	}
	if err := s.wal.append(rec); err != nil {
		return err
	}
	s.mu.Lock()
	apply()
	s.mu.Unlock()
	s.maybeCompactLocked()
	return nil
}

// Upsert stores chunks, replacing chunks with the same ID. The batch is
// validated whole first: an empty ID, a vector of the wrong dimension
// (vector.ErrDimension) or a non-finite value rejects all of it.
func (s *Store) Upsert(ctx context.Context, chunks []vector.Chunk) error {
	if len(chunks) == 0 {
		return ctx.Err()
	}
	norm := make([]vector.Chunk, len(chunks))
	owned := interner{}
	rec := newRecord(opUpsert)
	rec.uvarint(uint64(len(chunks)))
	for i, c := range chunks {
		if c.ID == "" {
			return fmt.Errorf("local vector store: chunk %d has no ID", i)
		}
		if len(c.Vector) != s.dim {
			return fmt.Errorf("%w: chunk %s has %d dimensions, store has %d", vector.ErrDimension, c.ID, len(c.Vector), s.dim)
		}
		for _, x := range c.Vector {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return fmt.Errorf("local vector store: chunk %s has a non-finite vector value", c.ID)
			}
		}
		c.Vector = normalize(c.Vector)
		// The store keeps the chunk for its lifetime, so it keeps its own
		// copies of the strings: a caller's heading is often a substring of
		// the whole document (chunk.Split), which would otherwise stay in
		// memory for as long as any of its chunks. A batch's chunks share
		// one copy of each distinct title and heading.
		c.Title, c.Heading, c.Text = owned.clone(c.Title), owned.clone(c.Heading), strings.Clone(c.Text)
		norm[i] = c
		rec.chunk(&norm[i])
	}
	// The chunks' analysis and codes are computed here, in parallel with
	// other writers, not under the locks (prepare.go).
	prep := make([]*prepared, len(norm))
	for i := range norm {
		c := &norm[i]
		prep[i] = prepare(c.Title, c.Heading, c.Text, c.Vector)
	}
	// So is the search for each vector's list, which costs a dot product
	// per list and so grows with the site: a read lock lets it run beside
	// searches and other writers' preparation.
	s.mu.RLock()
	for i := range norm {
		if st := s.sites[norm[i].SiteID]; st != nil && st.ann != nil {
			prep[i].near = st.ann.lists[nearest(st.ann.cents, s.dim, norm[i].Vector)]
		}
	}
	s.mu.RUnlock()
	return s.write(ctx, rec, func() { s.applyUpsert(norm, prep) })
}

// interner copies strings once per distinct value.
type interner map[string]string

// clone returns the copy of v, making it on first sight.
func (in interner) clone(v string) string {
	c, ok := in[v]
	if !ok {
		c = strings.Clone(v)
		in[c] = c
	}
	return c
}

// DeleteDocument removes all chunks of the document.
func (s *Store) DeleteDocument(ctx context.Context, documentID int64) error {
	rec := newRecord(opDeleteDoc)
	rec.varint(documentID)
	return s.write(ctx, rec, func() { s.applyDeleteDoc(documentID) })
}

// DeleteStaleVersions removes the document's chunks of versions other than
// keepVersion.
func (s *Store) DeleteStaleVersions(ctx context.Context, documentID, keepVersion int64) error {
	// Nothing stale (the common case on a first index) costs no log write
	// and no fsync. A stale version written concurrently after this check is
	// never cited: search keeps only chunks of the document's current version.
	s.writeMu.Lock()
	s.mu.RLock()
	stale := false
	for _, r := range s.byDoc[documentID] {
		if r.version != keepVersion {
			stale = true
			break
		}
	}
	s.mu.RUnlock()
	s.writeMu.Unlock()
	if !stale {
		return ctx.Err()
	}
	rec := newRecord(opDeleteStale)
	rec.varint(documentID)
	rec.varint(keepVersion)
	return s.write(ctx, rec, func() { s.applyDeleteStale(documentID, keepVersion) })
}

// DeleteSite removes all chunks of the site.
func (s *Store) DeleteSite(ctx context.Context, siteID int64) error {
	rec := newRecord(opDeleteSite)
	rec.varint(siteID)
	return s.write(ctx, rec, func() { s.applyDeleteSite(siteID) })
}

// Search returns the k chunks of the site most similar to vec (cosine),
// best first, with scores of at least threshold.
func (s *Store) Search(ctx context.Context, siteID int64, vec []float32, k int, threshold float32) ([]vector.Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(vec) != s.dim {
		return nil, fmt.Errorf("%w: query has %d dimensions, store has %d", vector.ErrDimension, len(vec), s.dim)
	}
	if k <= 0 {
		return nil, nil
	}
	q := normalize(vec)
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, vector.ErrClosed
	}
	st := s.sites[siteID]
	if st == nil {
		return nil, nil
	}
	cands := st.scan(q, s.dim, k, threshold, s.workers)
	hits := make([]vector.Hit, len(cands))
	for i, c := range cands {
		hits[i] = st.rows[c.row].hit(c.score)
	}
	return hits, nil
}

// KeywordSearch returns the k chunks of the site with the best BM25 score
// for query over title, heading and text, best first. Chunks matching no
// query term are not returned.
func (s *Store) KeywordSearch(ctx context.Context, siteID int64, query string, k int) ([]vector.Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, vector.ErrClosed
	}
	st := s.sites[siteID]
	if st == nil || k <= 0 {
		return nil, nil
	}
	res := st.kw.search(query, k)
	hits := make([]vector.Hit, len(res))
	for i, r := range res {
		hits[i] = r.r.hit(r.score)
	}
	return hits, nil
}

// KeywordStats implements vector.StatsSource from the site's keyword index.
func (s *Store) KeywordStats(ctx context.Context, siteID int64, terms []string) (vector.KeywordStats, error) {
	if err := ctx.Err(); err != nil {
		return vector.KeywordStats{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return vector.KeywordStats{}, vector.ErrClosed
	}
	st := s.sites[siteID]
	if st == nil {
		return vector.KeywordStats{DocFreq: map[string]int{}}, nil
	}
	return st.kw.stats(terms), nil
}

// CountDocument returns the number of chunks stored for the document.
func (s *Store) CountDocument(ctx context.Context, documentID int64) (int, error) {
	return s.count(ctx, func() int { return len(s.byDoc[documentID]) })
}

// Count returns the number of chunks stored.
func (s *Store) Count(ctx context.Context) (int, error) {
	return s.count(ctx, func() int { return len(s.byID) })
}

// count is n() read under the read lock of an open store.
func (s *Store) count(ctx context.Context, n func() int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, vector.ErrClosed
	}
	return n(), nil
}

// applyPayload applies one logged operation (during recovery).
func (s *Store) applyPayload(payload []byte) error {
	d := &decoder{buf: payload}
	switch op := d.byte1(); op {
	case opUpsert:
		n := d.uvarint()
		if n > uint64(len(payload)) {
			return errCorrupt
		}
		chunks := make([]vector.Chunk, 0, n)
		for i := uint64(0); i < n && d.err == nil; i++ {
			chunks = append(chunks, d.chunk(s.dim))
		}
		if d.err != nil {
			return d.err
		}
		s.applyUpsert(chunks, nil)
	case opDeleteDoc:
		if doc := d.varint(); d.err == nil {
			s.applyDeleteDoc(doc)
		}
	case opDeleteStale:
		if doc, keep := d.varint(), d.varint(); d.err == nil {
			s.applyDeleteStale(doc, keep)
		}
	case opDeleteSite:
		if site := d.varint(); d.err == nil {
			s.applyDeleteSite(site)
		}
	default:
		return fmt.Errorf("%w: unknown operation %d", errCorrupt, op)
	}
	return d.err
}

// applyUpsert inserts chunks with normalised vectors, replacing by ID; prep
// holds each chunk's prepared work (nil: done here).
func (s *Store) applyUpsert(chunks []vector.Chunk, prep []*prepared) {
	for i := range chunks {
		c := &chunks[i]
		if old := s.byID[c.ID]; old != nil {
			s.removeRecord(old)
		}
		r := &record{
			id: c.ID, site: c.SiteID, doc: c.DocumentID, version: c.Version, index: c.Index,
			title: c.Title, heading: c.Heading, text: c.Text,
		}
		st := s.sites[c.SiteID]
		if st == nil {
			st = &site{annCfg: &s.ann}
			s.sites[c.SiteID] = st
		}
		var p *prepared
		if prep != nil {
			p = prep[i]
		}
		st.add(r, c.Vector, p)
		s.byID[r.id] = r
		docs := s.byDoc[r.doc]
		if docs == nil {
			docs = make(map[string]*record)
			s.byDoc[r.doc] = docs
		}
		docs[r.id] = r
	}
}

// removeRecord drops one chunk from every index.
func (s *Store) removeRecord(r *record) {
	st := s.sites[r.site]
	st.remove(r, s.dim)
	if len(st.rows) == 0 {
		delete(s.sites, r.site)
	}
	delete(s.byID, r.id)
	if docs := s.byDoc[r.doc]; docs != nil {
		delete(docs, r.id)
		if len(docs) == 0 {
			delete(s.byDoc, r.doc)
		}
	}
}

func (s *Store) applyDeleteDoc(doc int64) {
	for _, r := range s.byDoc[doc] {
		s.removeRecord(r)
	}
}

func (s *Store) applyDeleteStale(doc, keep int64) {
	for _, r := range s.byDoc[doc] {
		if r.version != keep {
			s.removeRecord(r)
		}
	}
}

func (s *Store) applyDeleteSite(siteID int64) {
	st := s.sites[siteID]
	if st == nil {
		return
	}
	// The whole partition goes at once: no per-chunk index maintenance.
	delete(s.sites, siteID)
	for _, r := range st.rows {
		delete(s.byID, r.id)
		if docs := s.byDoc[r.doc]; docs != nil {
			delete(docs, r.id)
			if len(docs) == 0 {
				delete(s.byDoc, r.doc)
			}
		}
	}
}
