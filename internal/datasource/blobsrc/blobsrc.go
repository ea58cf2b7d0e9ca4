// Package blobsrc is the internal data source: a folder (root prefix) of
// Lore's own object store, local directory or MinIO alike.
package blobsrc

import (
	"context"
	"fmt"
	"io"

	"github.com/lorekb/lore/internal/blob"
	"github.com/lorekb/lore/internal/datasource"
)

// Source serves the files under Root of Store.
type Source struct {
	Store blob.Store
	// Root is the folder of this data source, ending in "/"
	// ("sites/3/datasources/7/").
	Root string
}

var _ datasource.Source = (*Source)(nil)

// Browse implements datasource.Source.
func (s *Source) Browse(ctx context.Context, prefix string) ([]datasource.Entry, error) {
	if err := datasource.CheckPrefix(prefix); err != nil {
		return nil, err
	}
	infos, err := s.Store.List(ctx, s.Root+prefix, true)
	if err != nil {
		return nil, err
	}
	if len(infos) > datasource.MaxListing*10 {
		return nil, fmt.Errorf("%w: more than %d objects under %q; browse a deeper folder", datasource.ErrInvalidKey, datasource.MaxListing*10, prefix)
	}
	return datasource.Fold(prefix, infos, s.Root), nil
}

// Get implements datasource.Source.
func (s *Source) Get(ctx context.Context, key string) (io.ReadCloser, int64, error) {
	if err := datasource.CheckKey(key); err != nil {
		return nil, 0, err
	}
	rc, info, err := s.Store.Get(ctx, s.Root+key)
	if err != nil {
		return nil, 0, err
	}
	return rc, info.Size, nil
}

// Put implements datasource.Source.
func (s *Source) Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) (datasource.Entry, error) {
	if err := datasource.CheckKey(key); err != nil {
		return datasource.Entry{}, err
	}
	info, err := s.Store.Put(ctx, s.Root+key, r, size, contentType, nil)
	if err != nil {
		return datasource.Entry{}, err
	}
	mod := info.LastModified.UTC()
	return datasource.Entry{Name: lastSegment(key), Path: key, Type: datasource.TypeFile, Size: &info.Size, LastModified: &mod}, nil
}

// Delete implements datasource.Source.
func (s *Source) Delete(ctx context.Context, key string) error {
	if err := datasource.CheckKey(key); err != nil {
		return err
	}
	return s.Store.Delete(ctx, s.Root+key)
}

// Check implements datasource.Source: listing the root proves the store is
// reachable.
func (s *Source) Check(ctx context.Context) error {
	_, err := s.Store.List(ctx, s.Root, false)
	return err
}

func lastSegment(key string) string {
	for i := len(key) - 1; i >= 0; i-- {
		if key[i] == '/' {
			return key[i+1:]
		}
	}
	return key
}
