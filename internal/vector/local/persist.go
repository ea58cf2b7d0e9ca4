package local

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/lorekb/lore/internal/vector"
)

// On-disk layout of a store directory:
//
//	LOCK                 flock'd by the owning process
//	snapshot.bin         the state at generation g (atomically replaced)
//	wal-<g>.log          operations since that snapshot, one record each
//
// A WAL record is [payload length uint32 LE][CRC-32C of payload uint32 LE]
// [payload]; the payload is an op byte and its arguments. Recovery loads the
// snapshot, replays wal-<g>.log up to the first incomplete or corrupt record
// (a write torn by a crash) and truncates the log there. Compaction
// (compact.go) first starts wal-<g+1>.log, which takes the writes from then
// on, then writes snapshot g+1 (the state when that log started) beside the
// old one, renames it into place and deletes the older logs; until the
// rename, recovery replays wal-<g>.log and then wal-<g+1>.log on snapshot g,
// so a crash at any point leaves a consistent state.
const (
	snapshotName  = "snapshot.bin"
	snapshotTmp   = "snapshot.tmp"
	lockName      = "LOCK"
	snapshotMagic = "LOREVS01"
	walHeaderSize = 8
	maxRecordSize = 1 << 30
)

// Log operations.
const (
	opUpsert      byte = 1
	opDeleteDoc   byte = 2
	opDeleteStale byte = 3
	opDeleteSite  byte = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func walName(gen uint64) string { return fmt.Sprintf("wal-%016x.log", gen) }

// encoder builds a record payload.
type encoder struct{ buf []byte }

func (e *encoder) byte1(b byte)     { e.buf = append(e.buf, b) }
func (e *encoder) uvarint(x uint64) { e.buf = binary.AppendUvarint(e.buf, x) }
func (e *encoder) varint(x int64)   { e.buf = binary.AppendVarint(e.buf, x) }
func (e *encoder) str(s string)     { e.uvarint(uint64(len(s))); e.buf = append(e.buf, s...) }
func (e *encoder) floats(v []float32) {
	e.uvarint(uint64(len(v)))
	for _, x := range v {
		e.buf = binary.LittleEndian.AppendUint32(e.buf, math.Float32bits(x))
	}
}

// chunk encodes a chunk whose Vector is already normalised.
func (e *encoder) chunk(c *vector.Chunk) {
	e.str(c.ID)
	e.varint(c.SiteID)
	e.varint(c.DocumentID)
	e.varint(c.Version)
	e.varint(int64(c.Index))
	e.str(c.Title)
	e.str(c.Heading)
	e.str(c.Text)
	e.floats(c.Vector)
}

// errCorrupt reports undecodable data that passed its checksum: a bug or a
// foreign file, never a torn write.
var errCorrupt = errors.New("local vector store: corrupt data")

// decoder reads a payload; the first error sticks.
type decoder struct {
	buf []byte
	err error
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = errCorrupt
	}
}

func (d *decoder) byte1() byte {
	if len(d.buf) < 1 {
		d.fail()
		return 0
	}
	b := d.buf[0]
	d.buf = d.buf[1:]
	return b
}

func (d *decoder) uvarint() uint64 { return readVarint(d, binary.Uvarint) }

func (d *decoder) varint() int64 { return readVarint(d, binary.Varint) }

// readVarint reads one varint with read (binary.Uvarint or binary.Varint).
func readVarint[T uint64 | int64](d *decoder, read func([]byte) (T, int)) T {
	x, n := read(d.buf)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.buf = d.buf[n:]
	return x
}

func (d *decoder) str() string {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.buf)) {
		d.fail()
		return ""
	}
	s := string(d.buf[:n])
	d.buf = d.buf[n:]
	return s
}

func (d *decoder) floats(dim int) []float32 {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n != uint64(dim) {
		if d.err == nil {
			d.err = fmt.Errorf("%w: stored vector has %d dimensions, store opened with %d", vector.ErrDimension, n, dim)
		}
		return nil
	}
	if uint64(len(d.buf)) < 4*n {
		d.fail()
		return nil
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(d.buf[4*i:]))
	}
	d.buf = d.buf[4*n:]
	return v
}

func (d *decoder) chunk(dim int) vector.Chunk {
	var c vector.Chunk
	c.ID = d.str()
	c.SiteID = d.varint()
	c.DocumentID = d.varint()
	c.Version = d.varint()
	c.Index = int(d.varint())
	c.Title = d.str()
	c.Heading = d.str()
	c.Text = d.str()
	c.Vector = d.floats(dim)
	return c
}

// newRecord starts a WAL record, leaving room for its header.
func newRecord(op byte) *encoder {
	e := &encoder{buf: make([]byte, walHeaderSize, 256)}
	e.byte1(op)
	return e
}

// wal is the append-only operation log.
type wal struct {
	f      *os.File
	path   string
	size   int64
	broken error // set when the log can no longer be trusted to append
}

// append writes and fsyncs one record built by newRecord. On failure it cuts
// the file back so no partial record is left before later ones.
func (w *wal) append(rec *encoder) error {
	if w.broken != nil {
		return w.broken
	}
	payload := rec.buf[walHeaderSize:]
	if len(payload) > maxRecordSize {
		return fmt.Errorf("local vector store: write of %d bytes exceeds the %d-byte record limit; split the batch", len(payload), maxRecordSize)
	}
	binary.LittleEndian.PutUint32(rec.buf[0:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(rec.buf[4:], crc32.Checksum(payload, castagnoli))
	_, err := w.f.Write(rec.buf)
	if err == nil {
		err = w.f.Sync()
	}
	if err != nil {
		if terr := w.f.Truncate(w.size); terr != nil {
			w.broken = fmt.Errorf("local vector store: log %s unusable after failed write (%v): %w", w.path, err, terr)
		}
		return fmt.Errorf("local vector store: append to %s: %w", w.path, err)
	}
	w.size += int64(len(rec.buf))
	return nil
}

// openWAL opens (creating if needed) the log for appending, truncated to size.
func openWAL(path string, size int64) (*wal, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && st.Size() != size {
		if err = f.Truncate(size); err == nil {
			err = f.Sync()
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return &wal{f: f, path: path, size: size}, nil
}

// replayWAL calls apply for each intact record of the log at path and
// returns the length of the intact prefix. A missing log is empty.
func replayWAL(path string, apply func(payload []byte) error) (int64, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	total := st.Size()
	br := bufio.NewReaderSize(f, 1<<20)
	var (
		off     int64
		header  [walHeaderSize]byte
		payload []byte
	)
	for {
		if _, err := io.ReadFull(br, header[:]); err != nil {
			return off, nil // clean end, or a torn header
		}
		n := int64(binary.LittleEndian.Uint32(header[0:]))
		sum := binary.LittleEndian.Uint32(header[4:])
		if n > maxRecordSize || off+walHeaderSize+n > total {
			return off, nil // torn: the record runs past the end
		}
		if int64(cap(payload)) < n {
			payload = make([]byte, n)
		}
		payload = payload[:n]
		if _, err := io.ReadFull(br, payload); err != nil {
			return off, nil
		}
		if crc32.Checksum(payload, castagnoli) != sum {
			return off, nil // torn or never completed
		}
		if err := apply(payload); err != nil {
			return off, fmt.Errorf("local vector store: replay %s at offset %d: %w", path, off, err)
		}
		off += walHeaderSize + n
	}
}

// writeSnapshot writes the state frozen in v as generation gen to a
// temporary file and renames it over the snapshot. It reads only the view,
// so it needs no lock.
func (s *Store) writeSnapshot(gen uint64, v *stateView) (size int64, err error) {
	tmp := filepath.Join(s.dir, snapshotTmp)
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	crc := crc32.New(castagnoli)
	w := io.MultiWriter(bw, crc)

	head := &encoder{}
	head.buf = append(head.buf, snapshotMagic...)
	head.uvarint(uint64(s.dim))
	head.uvarint(gen)
	head.uvarint(uint64(v.count))
	if _, err = w.Write(head.buf); err != nil {
		return 0, err
	}
	body := &encoder{}
	var frame [binary.MaxVarintLen64]byte
	for i := range v.sites {
		sv := &v.sites[i]
		for row, r := range sv.rows {
			c := vector.Chunk{
				ID: r.id, SiteID: r.site, DocumentID: r.doc, Version: r.version, Index: r.index,
				Title: r.title, Heading: r.heading, Text: r.text,
				Vector: sv.vecs.row(row),
			}
			body.buf = body.buf[:0]
			body.chunk(&c)
			n := binary.PutUvarint(frame[:], uint64(len(body.buf)))
			if _, err = w.Write(frame[:n]); err != nil {
				return 0, err
			}
			if _, err = w.Write(body.buf); err != nil {
				return 0, err
			}
		}
	}
	var trailer [4]byte
	binary.LittleEndian.PutUint32(trailer[:], crc.Sum32())
	if _, err = bw.Write(trailer[:]); err != nil {
		return 0, err
	}
	if err = bw.Flush(); err != nil {
		return 0, err
	}
	if err = f.Sync(); err != nil {
		return 0, err
	}
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if err = f.Close(); err != nil {
		return 0, err
	}
	s.at("written")
	if err = os.Rename(tmp, filepath.Join(s.dir, snapshotName)); err != nil {
		return 0, err
	}
	return st.Size(), syncDir(s.dir)
}

// readSnapshot loads the snapshot into s, returning its generation and size.
// ok is false when there is none.
func (s *Store) readSnapshot() (gen uint64, size int64, ok bool, err error) {
	path := filepath.Join(s.dir, snapshotName)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, 0, false, err
	}
	size = st.Size()
	if size < int64(len(snapshotMagic))+4 {
		return 0, 0, false, fmt.Errorf("%w: snapshot %s is truncated", errCorrupt, path)
	}
	crc := crc32.New(castagnoli)
	br := bufio.NewReaderSize(io.TeeReader(io.LimitReader(f, size-4), crc), 1<<20)
	magic := make([]byte, len(snapshotMagic))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != snapshotMagic {
		return 0, 0, false, fmt.Errorf("%w: %s is not a snapshot", errCorrupt, path)
	}
	dim, err1 := binary.ReadUvarint(br)
	gen, err2 := binary.ReadUvarint(br)
	count, err3 := binary.ReadUvarint(br)
	if err := errors.Join(err1, err2, err3); err != nil {
		return 0, 0, false, fmt.Errorf("%w: snapshot header: %v", errCorrupt, err)
	}
	if dim != uint64(s.dim) {
		return 0, 0, false, fmt.Errorf("%w: store in %s has dimension %d, opened with %d", vector.ErrDimension, s.dir, dim, s.dim)
	}
	var buf []byte
	for i := uint64(0); i < count; i++ {
		n, err := binary.ReadUvarint(br)
		if err != nil || n > maxRecordSize {
			return 0, 0, false, fmt.Errorf("%w: snapshot chunk %d", errCorrupt, i)
		}
		if uint64(cap(buf)) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(br, buf); err != nil {
			return 0, 0, false, fmt.Errorf("%w: snapshot chunk %d: %v", errCorrupt, i, err)
		}
		d := &decoder{buf: buf}
		c := d.chunk(s.dim)
		if d.err != nil {
			return 0, 0, false, fmt.Errorf("snapshot chunk %d: %w", i, d.err)
		}
		s.applyUpsert([]vector.Chunk{c}, nil)
	}
	if _, err := io.Copy(io.Discard, br); err != nil {
		return 0, 0, false, err
	}
	var trailer [4]byte
	if _, err := f.ReadAt(trailer[:], size-4); err != nil {
		return 0, 0, false, err
	}
	if binary.LittleEndian.Uint32(trailer[:]) != crc.Sum32() {
		return 0, 0, false, fmt.Errorf("%w: snapshot %s fails its checksum", errCorrupt, path)
	}
	return gen, size, true, nil
}

// syncDir makes renames and creations in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
