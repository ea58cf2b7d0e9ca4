// Package blob defines Lore's object storage abstraction: uploaded files and
// generated artefacts are kept behind one Store interface so the same code runs
// against a local directory in development and S3-compatible storage (MinIO,
// AWS S3) in production.
//
// Object names are slash-separated keys such as "sites/42/files/report.pdf".
// Every Store validates names with ValidateName before touching its backend,
// so user-controlled names can never address anything outside the store.
package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// Info describes one stored object. It is what Put returns, what Get and Stat
// report and what List enumerates, so handlers can build API responses and
// HTTP headers (Content-Type, ETag, Last-Modified) without a second lookup.
type Info struct {
	// Name is the object's full key, exactly as passed to Put.
	Name string
	// Size is the object's length in bytes.
	Size int64
	// ContentType is the MIME type recorded at upload time.
	ContentType string
	// LastModified is when the object was last written (UTC).
	LastModified time.Time
	// ETag is an opaque version identifier that changes when the content
	// changes; it is suitable for HTTP conditional requests.
	ETag string
	// Metadata holds user metadata with lower-case keys (see
	// NormalizeMetadata). Values are returned decoded, so non-ASCII values
	// such as original filenames round-trip unchanged.
	Metadata map[string]string
}

// Store is an object store. Implementations must be safe for concurrent use.
//
// All methods that take a name reject invalid names (see ValidateName) with an
// error wrapping ErrInvalidName, and methods that address a missing object
// return an error wrapping ErrNotFound, so callers can map both to HTTP status
// codes with errors.Is.
type Store interface {
	// Put stores the content read from r under name, replacing any existing
	// object. It streams: r is never read whole into memory. size is the
	// exact length when known, or -1 when unknown (for example a chunked
	// upload). An empty contentType is stored as "application/octet-stream".
	// meta is user metadata (see NormalizeMetadata).
	Put(ctx context.Context, name string, r io.Reader, size int64, contentType string, meta map[string]string) (Info, error)
	// Get opens the object for streaming; the caller must close the reader.
	// The content is never buffered whole in memory, so large files can be
	// served with constant memory.
	Get(ctx context.Context, name string) (io.ReadCloser, Info, error)
	// Stat returns the object's Info without reading its content.
	Stat(ctx context.Context, name string) (Info, error)
	// List returns the objects whose names start with prefix (a plain string
	// prefix, as in S3), sorted by name. When recursive is false only direct
	// children are returned: names with no "/" after the prefix. No
	// pseudo-directory entries are returned. Entries always carry Name, Size,
	// LastModified and ETag; ContentType and Metadata may be empty on some
	// backends, so use Stat when those are needed.
	List(ctx context.Context, prefix string, recursive bool) ([]Info, error)
	// Delete removes one object. A missing object is reported as ErrNotFound
	// so that API handlers can answer 404 rather than silently succeeding.
	Delete(ctx context.Context, name string) error
	// DeletePrefix removes every object whose name starts with prefix; it is
	// used when a whole site is deleted. Deleting a prefix that matches
	// nothing is not an error. An empty prefix is refused with
	// ErrInvalidName so that a bug can never wipe the whole store.
	DeletePrefix(ctx context.Context, prefix string) error
	// URL returns a URL from which a client can download the object without
	// further credentials: a direct URL for a public bucket, a presigned URL
	// for a private bucket, or a signed application route for the local
	// store. expires bounds the lifetime of signed URLs; a value <= 0 means
	// DefaultURLExpiry. The object's existence is not checked.
	URL(ctx context.Context, name string, expires time.Duration) (string, error)
	// Public reports whether objects are world-readable through URL without
	// a signature, so callers know whether returned URLs may be cached and
	// shared indefinitely.
	Public() bool
}

// DefaultURLExpiry is the lifetime Store.URL gives signed URLs when the caller
// passes a non-positive duration: long enough for a user to click a link,
// short enough that a leaked URL soon stops working.
const DefaultURLExpiry = 15 * time.Minute

// DefaultContentType is stored when Put is given no content type, matching
// what HTTP clients assume for unknown binary data.
const DefaultContentType = "application/octet-stream"

// MetaOriginalFilename is the metadata key under which callers store the
// filename the user uploaded, which may contain any Unicode characters and so
// cannot always be used as (part of) the object name.
const MetaOriginalFilename = "original_filename"

// ErrNotFound is returned (wrapped) when the addressed object does not exist,
// so callers can answer 404 with errors.Is regardless of backend.
var ErrNotFound = errors.New("blob: object not found")

// ErrInvalidName is returned (wrapped) when an object name or prefix fails
// ValidateName, so callers can answer 400 and never reach the backend with a
// traversal attempt.
var ErrInvalidName = errors.New("blob: invalid object name")

// ErrInvalidMetadata is returned (wrapped) by Put when user metadata cannot be
// stored portably (see NormalizeMetadata), so callers can answer 400.
var ErrInvalidMetadata = errors.New("blob: invalid metadata")

// MaxMetadataKeyLen bounds metadata key length; S3 limits the whole metadata
// header block, and keys are meant to be short identifiers.
const MaxMetadataKeyLen = 128

// NormalizeMetadata validates user metadata and returns a copy with lower-case
// keys. S3 transports metadata as HTTP headers, which are case-insensitive and
// are returned canonicalised, so keys are normalised to lower case on every
// backend to make Put/Stat round trips identical everywhere. Keys must be
// 1..MaxMetadataKeyLen characters from [A-Za-z0-9_-] and must not collide
// after lower-casing; values may be any valid UTF-8 (backends encode them as
// needed). The result is never nil.
func NormalizeMetadata(meta map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(meta))
	for k, v := range meta {
		if k == "" || len(k) > MaxMetadataKeyLen {
			return nil, fmt.Errorf("%w: key %q must be 1..%d characters", ErrInvalidMetadata, k, MaxMetadataKeyLen)
		}
		for i := 0; i < len(k); i++ {
			c := k[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
				return nil, fmt.Errorf("%w: key %q may only contain letters, digits, '_' and '-'", ErrInvalidMetadata, k)
			}
		}
		if !utf8.ValidString(v) {
			return nil, fmt.Errorf("%w: value of %q is not valid UTF-8", ErrInvalidMetadata, k)
		}
		lk := strings.ToLower(k)
		if _, dup := out[lk]; dup {
			return nil, fmt.Errorf("%w: key %q duplicates another key after lower-casing", ErrInvalidMetadata, k)
		}
		out[lk] = v
	}
	return out, nil
}
