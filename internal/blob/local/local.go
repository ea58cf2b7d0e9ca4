// Package local implements blob.Store on a local directory, for development,
// tests and single-node deployments without S3. Objects are plain files under
// the directory (so operators can inspect and back them up with ordinary
// tools); their content type, ETag and metadata live in JSON sidecars in a
// hidden parallel tree, and downloads go through HMAC-signed application URLs
// because the directory itself is not served.
package local

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"mime"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lorekb/lore/internal/blob"
)

// Reserved top-level entries inside the store directory. Names whose first
// segment matches one of them (case-insensitively, for case-insensitive file
// systems) are refused, and List never shows them.
const (
	metaDir    = ".lore-meta"
	tmpDir     = ".lore-tmp"
	metaSuffix = ".meta.json"
)

// File modes: private to the service's user and group by default, since
// uploads may be confidential and are served only through signed URLs.
const (
	dirMode  = 0o750
	fileMode = 0o640
)

// Store is a blob.Store backed by a directory. It is safe for concurrent use
// within one process: each write lands atomically (temporary file + rename),
// and the data file and its sidecar are swapped and read together under a
// per-name lock so readers never see one object's content with another
// write's metadata. Several processes sharing one directory still get atomic
// content, but may briefly see mismatched sidecars during concurrent writes of
// the same name. Unlike S3, a file system cannot hold both "a" and "a/b":
// such a Put fails with an ordinary error.
type Store struct {
	dir    string   // absolute, symlink-resolved store directory
	root   *os.Root // all file access goes through it: no escape via symlinks
	signer Signer
	locks  [64]sync.Mutex
}

var _ blob.Store = (*Store)(nil)

// sidecar is the JSON document kept beside each object.
type sidecar struct {
	ContentType string            `json:"content_type"`
	ETag        string            `json:"etag"`
	Metadata    map[string]string `json:"metadata,omitempty"`
}

// New opens (creating if needed) a directory store rooted at dir. signer is
// used by URL and VerifySigned; it may be zero if signed URLs are not needed,
// in which case those methods return ErrNoSigner.
func New(dir string, signer Signer) (*Store, error) {
	if dir == "" {
		return nil, errors.New("local blob: empty directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("local blob: %w", err)
	}
	if err := os.MkdirAll(abs, dirMode); err != nil {
		return nil, fmt.Errorf("local blob: create %s: %w", abs, err)
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("local blob: resolve %s: %w", abs, err)
	}
	root, err := os.OpenRoot(resolved)
	if err != nil {
		return nil, fmt.Errorf("local blob: open %s: %w", resolved, err)
	}
	for _, d := range []string{metaDir, tmpDir} {
		if err := root.MkdirAll(d, dirMode); err != nil {
			root.Close()
			return nil, fmt.Errorf("local blob: create %s: %w", d, err)
		}
	}
	removeStaleTemps(root, time.Now().Add(-staleTempAge))
	s := &Store{
		dir:  resolved,
		root: root,
		signer: Signer{
			BaseURL: strings.TrimRight(signer.BaseURL, "/"),
			Secret:  append([]byte(nil), signer.Secret...),
		},
	}
	return s, nil
}

// staleTempAge is how old a temporary upload file must be before New treats
// it as debris of a crashed process; younger ones may belong to a live upload
// of another process sharing the directory.
const staleTempAge = 24 * time.Hour

// removeStaleTemps deletes temporary files older than cutoff. Errors are
// ignored: leftover debris is harmless, only wasted space.
func removeStaleTemps(root *os.Root, cutoff time.Time) {
	entries, err := fs.ReadDir(root.FS(), tmpDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() && fi.ModTime().Before(cutoff) {
			_ = root.Remove(filepath.Join(tmpDir, e.Name()))
		}
	}
}

// Close releases the directory handle. The Store must not be used afterwards.
func (s *Store) Close() error { return s.root.Close() }

// Dir returns the absolute store directory, for logging and diagnostics.
func (s *Store) Dir() string { return s.dir }

// Public reports false: local objects are only reachable through signed URLs.
func (s *Store) Public() bool { return false }

// resolve validates name and returns its path relative to the store root in
// OS form. Besides ValidateName it refuses the reserved top-level entries and
// checks lexically that the joined path stays strictly under the store
// directory (defence in depth; os.Root additionally blocks symlink escapes).
func (s *Store) resolve(name string) (string, error) {
	if err := blob.ValidateName(name); err != nil {
		return "", err
	}
	if isReserved(name) {
		return "", fmt.Errorf("%w %q: reserved by the local store", blob.ErrInvalidName, name)
	}
	rel := filepath.FromSlash(name)
	full := filepath.Join(s.dir, rel)
	if !within(s.dir, full) || filepath.Clean(rel) != rel || filepath.IsAbs(rel) || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("%w %q: resolves outside the store", blob.ErrInvalidName, name)
	}
	return rel, nil
}

func isReserved(name string) bool {
	first := name
	if i := strings.IndexAny(name, `/\`); i >= 0 {
		first = name[:i]
	}
	return strings.EqualFold(first, metaDir) || strings.EqualFold(first, tmpDir)
}

// within reports whether p is strictly below dir.
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return false
	}
	return true
}

func metaPath(rel string) string { return filepath.Join(metaDir, rel+metaSuffix) }

func (s *Store) lock(name string) *sync.Mutex {
	h := fnv.New32a()
	h.Write([]byte(name))
	return &s.locks[h.Sum32()%uint32(len(s.locks))]
}

// Put streams r into a temporary file, then renames it (and its sidecar) into
// place, so readers see either the old or the new object, never a partial one.
// If r fails, ctx is cancelled or fewer/more than size bytes arrive, nothing is
// replaced and the temporary files are removed.
func (s *Store) Put(ctx context.Context, name string, r io.Reader, size int64, contentType string, meta map[string]string) (blob.Info, error) {
	rel, err := s.resolve(name)
	if err != nil {
		return blob.Info{}, err
	}
	md, err := blob.NormalizeMetadata(meta)
	if err != nil {
		return blob.Info{}, err
	}
	if contentType == "" {
		contentType = blob.DefaultContentType
	}
	if err := ctx.Err(); err != nil {
		return blob.Info{}, err
	}

	h := md5.New()
	src := io.Reader(ctxReader{ctx: ctx, r: r})
	if size >= 0 {
		// One byte beyond the declared size is enough to detect a lie;
		// never drain an oversized stream to disk.
		src = io.LimitReader(src, size+1)
	}
	tmpData, err := s.writeTemp(func(w io.Writer) error {
		n, err := io.Copy(io.MultiWriter(w, h), src)
		if err != nil {
			return err
		}
		if size >= 0 && n != size {
			return fmt.Errorf("got %d bytes, expected %d", n, size)
		}
		return nil
	})
	if err != nil {
		return blob.Info{}, fmt.Errorf("local blob: put %q: %w", name, err)
	}
	defer s.root.Remove(tmpData) // no-op once renamed

	sc, err := json.Marshal(sidecar{ContentType: contentType, ETag: hex.EncodeToString(h.Sum(nil)), Metadata: md})
	if err != nil {
		return blob.Info{}, fmt.Errorf("local blob: put %q: %w", name, err)
	}
	tmpMeta, err := s.writeTemp(func(w io.Writer) error { _, err := w.Write(sc); return err })
	if err != nil {
		return blob.Info{}, fmt.Errorf("local blob: put %q: %w", name, err)
	}
	defer s.root.Remove(tmpMeta)

	mu := s.lock(name)
	mu.Lock()
	defer mu.Unlock()
	if err := s.renameInto(tmpData, rel); err != nil {
		return blob.Info{}, fmt.Errorf("local blob: put %q: %w", name, err)
	}
	if err := s.renameInto(tmpMeta, metaPath(rel)); err != nil {
		// Never leave the new content paired with the old metadata.
		_ = s.root.Remove(metaPath(rel))
		return blob.Info{}, fmt.Errorf("local blob: put %q: metadata: %w", name, err)
	}
	return s.statLocked(name, rel)
}

// writeTemp creates a uniquely named file in the temporary area, lets fill
// write it, syncs and closes it, and returns its root-relative path. On error
// the file is removed.
func (s *Store) writeTemp(fill func(io.Writer) error) (string, error) {
	var rnd [16]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", err
	}
	name := filepath.Join(tmpDir, hex.EncodeToString(rnd[:])+".tmp")
	f, err := s.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode)
	if err != nil {
		return "", err
	}
	err = fill(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = s.root.Remove(name)
		return "", err
	}
	return name, nil
}

// renameInto moves src to dst, creating dst's parent directories. It retries
// when a concurrent Delete pruned a freshly created parent directory.
func (s *Store) renameInto(src, dst string) error {
	var err error
	for range 5 {
		if dir := filepath.Dir(dst); dir != "." {
			if err = s.root.MkdirAll(dir, dirMode); err != nil {
				return err
			}
		}
		err = s.root.Rename(src, dst)
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return err
}

// ctxReader stops a streaming copy as soon as ctx is cancelled, so an aborted
// upload does not keep writing to disk.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

// Read fails with the context's error once it is done.
func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// Get opens the object's file for streaming; the returned reader is the file
// itself, so nothing is buffered beyond the caller's reads.
func (s *Store) Get(ctx context.Context, name string) (io.ReadCloser, blob.Info, error) {
	rel, err := s.resolve(name)
	if err != nil {
		return nil, blob.Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return nil, blob.Info{}, err
	}
	mu := s.lock(name)
	mu.Lock()
	defer mu.Unlock()
	info, err := s.statLocked(name, rel)
	if err != nil {
		return nil, blob.Info{}, err
	}
	f, err := s.root.Open(rel)
	if err != nil {
		return nil, blob.Info{}, s.mapErr(name, err)
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, blob.Info{}, fmt.Errorf("local blob: get %q: %w", name, blob.ErrNotFound)
	}
	info.Size = fi.Size()
	info.LastModified = fi.ModTime().UTC()
	return f, info, nil
}

// Stat reports the object's Info from the file and its sidecar.
func (s *Store) Stat(ctx context.Context, name string) (blob.Info, error) {
	rel, err := s.resolve(name)
	if err != nil {
		return blob.Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return blob.Info{}, err
	}
	mu := s.lock(name)
	mu.Lock()
	defer mu.Unlock()
	return s.statLocked(name, rel)
}

// statLocked builds Info for an object; the caller holds its lock.
func (s *Store) statLocked(name, rel string) (blob.Info, error) {
	fi, err := s.root.Lstat(rel)
	if err != nil {
		return blob.Info{}, s.mapErr(name, err)
	}
	if !fi.Mode().IsRegular() {
		// Directories, symlinks and devices are not objects.
		return blob.Info{}, fmt.Errorf("local blob: %q: %w", name, blob.ErrNotFound)
	}
	return s.infoFor(name, rel, fi), nil
}

// infoFor combines file facts with the sidecar. Files placed in the directory
// by other means (no sidecar) still get a sensible content type and an ETag
// derived from size and modification time.
func (s *Store) infoFor(name, rel string, fi fs.FileInfo) blob.Info {
	info := blob.Info{
		Name:         name,
		Size:         fi.Size(),
		LastModified: fi.ModTime().UTC(),
		Metadata:     map[string]string{},
	}
	var sc sidecar
	if b, err := s.root.ReadFile(metaPath(rel)); err == nil && json.Unmarshal(b, &sc) == nil {
		info.ContentType = sc.ContentType
		info.ETag = sc.ETag
		for k, v := range sc.Metadata {
			info.Metadata[k] = v
		}
	}
	if info.ContentType == "" {
		info.ContentType = mime.TypeByExtension(path.Ext(name))
		if info.ContentType == "" {
			info.ContentType = blob.DefaultContentType
		}
	}
	if info.ETag == "" {
		info.ETag = fmt.Sprintf("%x-%x", fi.Size(), fi.ModTime().UnixNano())
	}
	return info
}

func (s *Store) mapErr(name string, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("local blob: %q: %w", name, blob.ErrNotFound)
	}
	return fmt.Errorf("local blob: %q: %w", name, err)
}

// List walks only the directory that can contain matches (the part of prefix
// up to its last "/"), so listing one site does not scan the whole store.
func (s *Store) List(ctx context.Context, prefix string, recursive bool) ([]blob.Info, error) {
	if err := blob.ValidatePrefix(prefix); err != nil {
		return nil, err
	}
	if prefix != "" && isReserved(prefix) {
		return []blob.Info{}, nil
	}
	dir := "."
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		dir = prefix[:i]
	}
	fsys := s.root.FS()
	out := []blob.Info{}
	add := func(name string, d fs.DirEntry) error {
		if !d.Type().IsRegular() || !strings.HasPrefix(name, prefix) || isReserved(name) || blob.ValidateName(name) != nil {
			return nil
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // deleted while listing
		}
		if err != nil {
			return err
		}
		mu := s.lock(name)
		mu.Lock()
		out = append(out, s.infoFor(name, filepath.FromSlash(name), fi))
		mu.Unlock()
		return nil
	}
	var err error
	if !recursive {
		var entries []fs.DirEntry
		entries, err = fs.ReadDir(fsys, dir)
		for _, e := range entries {
			if cerr := ctx.Err(); cerr != nil {
				return nil, cerr
			}
			name := e.Name()
			if dir != "." {
				name = dir + "/" + name
			}
			if aerr := add(name, e); aerr != nil {
				return nil, fmt.Errorf("local blob: list %q: %w", prefix, aerr)
			}
		}
	} else {
		err = fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, werr error) error {
			if werr != nil {
				if p != dir && errors.Is(werr, fs.ErrNotExist) {
					return nil // removed while walking
				}
				return werr
			}
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			if d.IsDir() {
				if p == dir {
					return nil
				}
				if isReserved(p) || !(strings.HasPrefix(p+"/", prefix) || strings.HasPrefix(prefix, p+"/")) {
					return fs.SkipDir
				}
				return nil
			}
			return add(p, d)
		})
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
		return nil, fmt.Errorf("local blob: list %q: %w", prefix, err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Delete removes the object and its sidecar, then prunes directories left
// empty so deleted sites do not leave skeleton trees behind.
func (s *Store) Delete(ctx context.Context, name string) error {
	rel, err := s.resolve(name)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	mu := s.lock(name)
	mu.Lock()
	fi, err := s.root.Lstat(rel)
	if err == nil && !fi.Mode().IsRegular() {
		err = fs.ErrNotExist
	}
	if err == nil {
		err = s.root.Remove(rel)
	}
	if err == nil {
		if merr := s.root.Remove(metaPath(rel)); merr != nil && !errors.Is(merr, fs.ErrNotExist) {
			err = merr
		}
	}
	mu.Unlock()
	if err != nil {
		return s.mapErr(name, err)
	}
	s.prune(filepath.Dir(rel))
	s.prune(filepath.Dir(metaPath(rel)))
	return nil
}

// prune removes dir and its parents while they are empty, stopping at the
// store root and the reserved top-level directories.
func (s *Store) prune(dir string) {
	for dir != "." && dir != metaDir && dir != string(filepath.Separator) {
		if err := s.root.Remove(dir); err != nil {
			return // not empty (or already gone): stop
		}
		dir = filepath.Dir(dir)
	}
}

// DeletePrefix deletes every object listed under prefix. Objects that vanish
// concurrently are ignored; other failures are reported after trying the rest.
func (s *Store) DeletePrefix(ctx context.Context, prefix string) error {
	if prefix == "" {
		return fmt.Errorf("%w: empty prefix for DeletePrefix", blob.ErrInvalidName)
	}
	items, err := s.List(ctx, prefix, true)
	if err != nil {
		return err
	}
	var errs []error
	for _, it := range items {
		if err := s.Delete(ctx, it.Name); err != nil && !errors.Is(err, blob.ErrNotFound) {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
		}
	}
	return errors.Join(errs...)
}
