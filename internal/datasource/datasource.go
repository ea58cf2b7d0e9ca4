// Package datasource gives the import one view of the places files come
// from: a folder of Lore's own object store, or an external S3-compatible
// bucket. Keys are relative to the data source's root (its prefix) and are
// validated like object names, so a key can never reach outside the root.
package datasource

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/lorekb/lore/internal/blob"
)

// Entry types.
const (
	TypeFile = "file"
	TypeDir  = "dir"
)

// Entry is one file or folder of a listing (the reference's S3FileItem).
type Entry struct {
	Name         string     `json:"name"`
	Path         string     `json:"path"`
	Type         string     `json:"type" enum:"file,dir"`
	Size         *int64     `json:"size"`
	LastModified *time.Time `json:"last_modified"`
}

// MaxListing bounds one folder listing.
const MaxListing = 10000

// Source is a data source's files.
type Source interface {
	// Browse lists the folders and files directly under prefix (a folder
	// key ending in "/", or "" for the root), folders first, by name.
	Browse(ctx context.Context, prefix string) ([]Entry, error)
	// Get opens a file; the caller closes it. A missing key wraps
	// blob.ErrNotFound.
	Get(ctx context.Context, key string) (io.ReadCloser, int64, error)
	// Put stores a file under key.
	Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) (Entry, error)
	// Delete removes a file; a missing key wraps blob.ErrNotFound.
	Delete(ctx context.Context, key string) error
	// Check reaches the storage (the bucket exists and the keys work).
	Check(ctx context.Context) error
}

// ErrInvalidKey wraps every refused key or prefix.
var ErrInvalidKey = errors.New("invalid key")

// CheckKey validates a file key (no traversal, absolute or hidden names).
func CheckKey(key string) error {
	if err := blob.ValidateName(key); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidKey, err)
	}
	return nil
}

// CheckPrefix validates a folder prefix ("" or ending in "/").
func CheckPrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	if !strings.HasSuffix(prefix, "/") {
		return fmt.Errorf("%w: a folder prefix ends with '/'", ErrInvalidKey)
	}
	if err := blob.ValidatePrefix(prefix); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidKey, err)
	}
	return CheckKey(strings.TrimSuffix(prefix, "/"))
}

// Sort orders a listing: folders first, then by name.
func Sort(es []Entry) {
	sort.Slice(es, func(i, j int) bool {
		if es[i].Type != es[j].Type {
			return es[i].Type == TypeDir
		}
		return es[i].Name < es[j].Name
	})
}

// Fold turns a recursive listing of keys under prefix into the entries
// directly under it: deeper keys become their first folder, once.
func Fold(prefix string, infos []blob.Info, strip string) []Entry {
	out := []Entry{}
	seen := map[string]bool{}
	for _, in := range infos {
		key := strings.TrimPrefix(in.Name, strip)
		rest := strings.TrimPrefix(key, prefix)
		if dir, _, deeper := strings.Cut(rest, "/"); deeper {
			if !seen[dir] {
				seen[dir] = true
				out = append(out, Entry{Name: dir, Path: prefix + dir + "/", Type: TypeDir})
			}
			continue
		}
		size, mod := in.Size, in.LastModified.UTC()
		out = append(out, Entry{Name: rest, Path: key, Type: TypeFile, Size: &size, LastModified: &mod})
	}
	Sort(out)
	return out
}
