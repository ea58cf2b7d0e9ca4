package local

import (
	"bufio"
	"encoding/binary"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
)

// The index file (ivf.bin) saves, beside each snapshot, which list every row
// of an indexed site belongs to, so that opening a large store restores the
// indexes in one pass over the rows instead of searching every centroid for
// every row again. It is a cache of derived state: it carries the snapshot's
// generation and each site's row count, and an index file that does not
// match the snapshot (a crash between the two renames, a missing or corrupt
// file) is ignored and the indexes are rebuilt from the rows. The snapshot
// lists each site's rows in row order and loading appends them in that
// order, so the row numbers it saves are the row numbers after loading.
//
// Layout: magic, then uvarints: generation, dimension, number of sites; per
// site its ID (varint), row count, list count, each list's split size, each
// row's list; then the CRC-32C of everything before it.
const (
	indexName  = "ivf.bin"
	indexTmp   = "ivf.tmp"
	indexMagic = "LOREIVF1"
)

// saveIndexes writes the index file for snapshot generation gen from the
// state frozen in v (the snapshot's own view, so the rows match). Failure
// costs only a rebuild at the next open, so callers may ignore it.
func (s *Store) saveIndexes(gen uint64, v *stateView) (err error) {
	tmp := filepath.Join(s.dir, indexTmp)
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	crc := crc32.New(castagnoli)
	bw := bufio.NewWriterSize(f, 1<<20)
	w := io.MultiWriter(bw, crc)
	var indexed []*siteView
	for i := range v.sites {
		if v.sites[i].splitAt != nil {
			indexed = append(indexed, &v.sites[i])
		}
	}
	e := &encoder{}
	e.buf = append(e.buf, indexMagic...)
	e.uvarint(gen)
	e.uvarint(uint64(s.dim))
	e.uvarint(uint64(len(indexed)))
	for _, sv := range indexed {
		e.varint(sv.id)
		e.uvarint(uint64(len(sv.rowList)))
		e.uvarint(uint64(len(sv.splitAt)))
		for _, at := range sv.splitAt {
			e.uvarint(uint64(at))
		}
		for _, l := range sv.rowList {
			e.uvarint(uint64(l))
			if len(e.buf) > 1<<20 {
				if _, err = w.Write(e.buf); err != nil {
					return err
				}
				e.buf = e.buf[:0]
			}
		}
	}
	if _, err = w.Write(e.buf); err != nil {
		return err
	}
	var trailer [4]byte
	binary.LittleEndian.PutUint32(trailer[:], crc.Sum32())
	if _, err = bw.Write(trailer[:]); err != nil {
		return err
	}
	if err = bw.Flush(); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, filepath.Join(s.dir, indexName)); err != nil {
		return err
	}
	return syncDir(s.dir)
}

// savedIndex is one site's entry of the index file.
type savedIndex struct {
	rows    int
	splitAt []int
	assign  []int32
}

// readIndexes reads the index file for generation gen; a missing, foreign,
// stale or corrupt file gives nil (the caller rebuilds).
func (s *Store) readIndexes(gen uint64) map[int64]*savedIndex {
	data, err := os.ReadFile(filepath.Join(s.dir, indexName))
	if err != nil || len(data) < len(indexMagic)+4 || string(data[:len(indexMagic)]) != indexMagic {
		return nil
	}
	body := data[:len(data)-4]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(data[len(data)-4:]) {
		return nil
	}
	d := &decoder{buf: body[len(indexMagic):]}
	if d.uvarint() != gen || d.uvarint() != uint64(s.dim) {
		return nil
	}
	n := d.uvarint()
	if d.err != nil || n > uint64(len(s.sites)) {
		return nil
	}
	out := make(map[int64]*savedIndex, n)
	for i := uint64(0); i < n; i++ {
		id := d.varint()
		rows, lists := d.uvarint(), d.uvarint()
		st := s.sites[id]
		if d.err != nil || st == nil || rows != uint64(len(st.rows)) || lists == 0 || lists > rows {
			return nil
		}
		si := &savedIndex{rows: int(rows), splitAt: make([]int, lists), assign: make([]int32, rows)}
		for l := range si.splitAt {
			v := d.uvarint()
			if v > math.MaxInt32 {
				return nil
			}
			si.splitAt[l] = int(v)
		}
		for r := range si.assign {
			l := d.uvarint()
			if l >= lists {
				return nil
			}
			si.assign[r] = int32(l)
		}
		if d.err != nil {
			return nil
		}
		out[id] = si
	}
	if len(d.buf) != 0 {
		return nil
	}
	return out
}

// restoreIndexes gives every site that needs one its index after the
// snapshot of generation gen was loaded (with indexing held off): from the
// index file where it matches, else built from the rows.
func (s *Store) restoreIndexes(gen uint64) {
	_ = os.Remove(filepath.Join(s.dir, indexTmp)) // left by a crash while saving
	saved := s.readIndexes(gen)
	for id, st := range s.sites {
		if len(st.rows) < s.ann.minRows {
			continue
		}
		if si := saved[id]; si != nil {
			x := &ivf{dim: s.dim, cfg: &s.ann, cents: make([]float32, len(si.splitAt)*s.dim)}
			x.build(&st.vecs, si.rows, si.assign, si.splitAt)
			st.ann = x
			continue
		}
		st.ann = newIVF(&st.vecs, len(st.rows), s.dim, &s.ann)
	}
}
