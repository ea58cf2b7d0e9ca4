package local

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/lorekb/lore/internal/vector"
)

// Compaction folds the log into a new snapshot without holding the writers
// for the time it takes to write one (seconds at a million chunks):
//
//  1. Rotation, under writeMu (writers wait, for milliseconds): the log of
//     generation next = logGen+1 is created and made durable (file and
//     directory synced), and a frozen view of the state is taken (stateView:
//     each site's record pointers copied, its vector slabs shared
//     copy-on-write, its index's list per row copied). From here writers
//     append to the new log; the old one takes no more writes.
//  2. The snapshot of generation next is written from the view, with no
//     lock held: records are immutable once stored (a replace stores a new
//     one) and a writer copies a shared slab before writing into it
//     (vecTable.own), so the view is exactly the state at the rotation,
//     whatever the writers do meanwhile. It is fsynced, renamed over
//     snapshot.bin and the directory synced. The index cache (ivf.bin) is
//     written from the same view, so it matches the snapshot's rows.
//  3. Only then are the logs of older generations deleted.
//
// The snapshot is not "fuzzy": it is the state after exactly the records of
// the logs before next, and the log of next holds exactly the writes after
// it, so recovery needs no idempotence of any record type (upsert, delete of
// a document, of stale versions, of a site). A crash leaves one of:
//
//   - before the new log is durable: the old snapshot and log, as before;
//   - after it, before the rename: snapshot g and logs g and next (or more,
//     after failed compactions): opening replays every log from g on, in
//     order, which is the full history since snapshot g;
//   - after the rename: snapshot next, a stale log g that opening deletes,
//     and the log of next replayed on top.
//
// A torn record can end only the log that was being appended to when the
// process died; an older log's records were all acknowledged (or, for the
// one write whose append failed, never applied and cut off or left torn at
// its end), so replay moves on to the next log at the first bad record of
// an older one. An open that replayed more than one log compacts at once, so
// a running store has at most two logs: the current one and, while a
// compaction runs, the one before.
//
// One compaction runs at a time (compactMu, held from the rotation to the
// end). A write that finds the logs grown past the threshold rotates them
// under the writeMu it already holds and leaves steps 2–3 to a goroutine;
// Close waits for it.

// stateView is the state frozen at a rotation, for writing a snapshot and
// the index cache.
type stateView struct {
	count int        // chunks
	sites []siteView // by site ID
}

// siteView is one site in a stateView.
type siteView struct {
	id   int64
	st   *site // whose slabs are shared until the compaction ends
	rows []*record
	vecs vecTable
	// rowList and splitAt are the site's index (ivf.bin), nil when it has
	// none.
	rowList []int32
	splitAt []int
}

// freezeLocked takes the view; the caller holds writeMu (no write runs) and
// at least mu.RLock.
func (s *Store) freezeLocked() *stateView {
	v := &stateView{count: len(s.byID), sites: make([]siteView, 0, len(s.sites))}
	for id, st := range s.sites {
		sv := siteView{id: id, st: st, rows: append([]*record(nil), st.rows...), vecs: st.vecs.freeze()}
		if st.ann != nil {
			sv.rowList = append([]int32(nil), st.ann.rowList...)
			sv.splitAt = make([]int, len(st.ann.lists))
			for l, li := range st.ann.lists {
				sv.splitAt[l] = li.splitAt
			}
		}
		v.sites = append(v.sites, sv)
	}
	sort.Slice(v.sites, func(i, j int) bool { return v.sites[i].id < v.sites[j].id })
	return v
}

// thawLocked ends the view's sharing of slabs; the caller holds writeMu.
func (v *stateView) thawLocked() {
	for _, sv := range v.sites {
		sv.st.vecs.thaw()
	}
}

// compaction is one compaction between its rotation and its end.
type compaction struct {
	gen  uint64 // of the new snapshot and of the log that took over
	view *stateView
}

// rotateLocked starts the log of the next generation and freezes the state
// it follows. The caller holds compactMu and writeMu.
func (s *Store) rotateLocked() (*compaction, error) {
	next := s.logGen + 1
	path := filepath.Join(s.dir, walName(next))
	w, err := openWAL(path, 0)
	if err == nil {
		if err = syncDir(s.dir); err != nil {
			w.f.Close()
			os.Remove(path)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("local vector store: start log: %w", err)
	}
	s.mu.RLock()
	view := s.freezeLocked()
	s.mu.RUnlock()
	old := s.wal
	if old != nil {
		s.oldLogs += old.size
		old.f.Close()
	}
	s.wal, s.logGen = w, next
	s.at("rotate")
	return &compaction{gen: next, view: view}, nil
}

// finish writes the snapshot and index cache of c and deletes the logs it
// replaces. It takes no lock while writing; the caller holds compactMu.
func (s *Store) finish(c *compaction) error {
	s.at("rotated")
	size, err := s.writeSnapshot(c.gen, c.view)
	if err == nil {
		s.at("renamed")
		// A cache for the next open; without it the indexes are rebuilt.
		_ = s.saveIndexes(c.gen, c.view)
	}
	s.writeMu.Lock()
	c.view.thawLocked()
	if err == nil {
		s.gen, s.snapLen, s.oldLogs = c.gen, size, 0
	}
	s.writeMu.Unlock()
	if err != nil {
		return fmt.Errorf("local vector store: write snapshot: %w", err)
	}
	s.at("indexed")
	if err := removeLogsBefore(s.dir, c.gen); err != nil {
		return fmt.Errorf("local vector store: remove old log: %w", err)
	}
	return nil
}

// compact runs a whole compaction in the caller's goroutine.
func (s *Store) compact() error {
	s.compactMu.Lock()
	defer s.compactMu.Unlock()
	s.writeMu.Lock()
	if s.isClosed() {
		s.writeMu.Unlock()
		return vector.ErrClosed
	}
	c, err := s.rotateLocked()
	s.writeMu.Unlock()
	if err != nil {
		return err
	}
	return s.finish(c)
}

// maybeCompactLocked starts a compaction when the logs since the snapshot
// have outgrown their threshold and none runs: the rotation now (the caller
// holds writeMu), the snapshot in a goroutine. The write that triggered it
// has succeeded, so a failure is not reported to that writer; compaction is
// tried again by a later write.
func (s *Store) maybeCompactLocked() {
	if s.wal.size+s.oldLogs <= max(s.compactBytes, s.snapLen) || !s.compactMu.TryLock() {
		return
	}
	c, err := s.rotateLocked()
	if err != nil {
		s.compactMu.Unlock()
		return
	}
	go func() {
		defer s.compactMu.Unlock()
		_ = s.finish(c)
	}()
}

// at calls the test hook at a stage of a compaction: "rotate" (under
// writeMu, the new log started and the view taken), "rotated" (no lock
// held, the snapshot not yet written), "written" (snapshot.tmp synced, not
// renamed), "renamed" (the new snapshot in place, the index cache not yet
// written), "indexed" (both written, the old logs not yet deleted).
func (s *Store) at(stage string) {
	if s.hook != nil {
		s.hook(stage)
	}
}

// waitCompaction returns once no compaction runs.
func (s *Store) waitCompaction() {
	s.compactMu.Lock()
	//lint:ignore SA2001 an empty critical section: waiting is the point
	s.compactMu.Unlock()
}

// logGeneration parses a log file name; ok is false for other files.
func logGeneration(name string) (gen uint64, ok bool) {
	if !strings.HasPrefix(name, "wal-") || !strings.HasSuffix(name, ".log") {
		return 0, false
	}
	g, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(name, "wal-"), ".log"), 16, 64)
	return g, err == nil
}

// logsFrom returns the generations of the logs in dir from gen on, oldest
// first.
func logsFrom(dir string, gen uint64) ([]uint64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var gens []uint64
	for _, e := range entries {
		if g, ok := logGeneration(e.Name()); ok && g >= gen {
			gens = append(gens, g)
		}
	}
	sort.Slice(gens, func(i, j int) bool { return gens[i] < gens[j] })
	return gens, nil
}

// removeLogsBefore deletes the logs older than generation gen (and any
// wal-*.log whose name does not parse), which the snapshot of gen replaces.
func removeLogsBefore(dir string, gen uint64) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, "wal-") || !strings.HasSuffix(name, ".log") {
			continue
		}
		if g, ok := logGeneration(name); ok && g >= gen {
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}
