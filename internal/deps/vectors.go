package deps

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/lorekb/lore/internal/embed"
	localembed "github.com/lorekb/lore/internal/embed/local"
	"github.com/lorekb/lore/internal/vector"
	localvec "github.com/lorekb/lore/internal/vector/local"
	"github.com/lorekb/lore/internal/vector/milvus"
)

// vectorStores opens each dimension's store once. It has its own lock, not
// the model cache's, and holds it only to find or register an opening:
// connecting to Milvus (seconds when it is down) never stalls embedder,
// chat-model or reranker lookups, and callers of one dimension share one
// attempt. A failed attempt is forgotten, so the next call (a Temporal
// retry) tries again.
type vectorStores struct {
	mu sync.Mutex
	m  map[int]*storeOpening
}

type storeOpening struct {
	done chan struct{} // closed when s and err are set
	s    vector.Store
	err  error
}

func (v *vectorStores) get(ctx context.Context, dim int, open func(context.Context) (vector.Store, error)) (vector.Store, error) {
	v.mu.Lock()
	if v.m == nil {
		v.m = map[int]*storeOpening{}
	}
	o, ok := v.m[dim]
	if !ok {
		o = &storeOpening{done: make(chan struct{})}
		v.m[dim] = o
	}
	v.mu.Unlock()
	if !ok {
		o.s, o.err = open(ctx)
		if o.err != nil {
			v.mu.Lock()
			delete(v.m, dim)
			v.mu.Unlock()
		}
		close(o.done)
		return o.s, o.err
	}
	select {
	case <-o.done:
		return o.s, o.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Vectors returns the vector store for embeddings of dimension dim. Each
// dimension has its own store (a directory, or a Milvus collection), so
// switching the embedding model never mixes vector spaces; documents are then
// re-vectorized into the new store. Stores are closed by Close, after the
// worker has stopped.
func (d *Deps) Vectors(ctx context.Context, dim int) (vector.Store, error) {
	return d.vectors.get(ctx, dim, func(ctx context.Context) (vector.Store, error) {
		var s vector.Store
		var err error
		if d.Cfg.MilvusAddress != "" {
			s, err = milvus.Open(ctx, d.milvusConfig(dim))
		} else {
			s, err = localvec.Open(d.localVectorDir(dim), dim)
		}
		if err != nil {
			return nil, err
		}
		d.OnClose(func() { _ = s.Close() })
		return s, nil
	})
}

func (d *Deps) milvusConfig(dim int) milvus.Config {
	return milvus.Config{Address: d.Cfg.MilvusAddress, Username: d.Cfg.MilvusUser, Password: d.Cfg.MilvusPassword,
		DBName: d.Cfg.MilvusDB, Collection: milvus.CollectionName(d.Cfg.MilvusCollection, dim, localembed.DefaultDimension),
		Dimension: dim, Log: d.Log}
}

func (d *Deps) localVectorDir(dim int) string {
	return filepath.Join(d.Cfg.DataDir, "vectors", fmt.Sprintf("dim%d", dim))
}

// IndexFormat is the format chunks are written in with this configuration
// (vector.IndexFormat of the analyzer and LORE_CHUNK_SIZE/OVERLAP).
func (d *Deps) IndexFormat() string { return vector.IndexFormat(d.Cfg.ChunkSize, d.Cfg.ChunkOverlap) }

// TenantVectors returns the tenant's embedder and the matching vector store.
func (d *Deps) TenantVectors(ctx context.Context, tenantID int64) (embed.Embedder, vector.Store, error) {
	e, err := d.Embedder(ctx, tenantID)
	if err != nil {
		return nil, nil, err
	}
	dim := e.Dimension()
	if dim <= 0 {
		return nil, nil, errors.New("embedding dimension unknown: set dimension in ai-config")
	}
	s, err := d.Vectors(ctx, dim)
	return e, s, err
}

// EachVectorStore calls fn with every vector store that exists, one per
// dimension any embedding model has written. Deletes go through it: a site
// or document deleted after its tenant changed embedding models must leave
// nothing in the old dimension's store, where a later switch back would
// find it again. A Milvus collection this version refuses (another schema
// version, awaiting its migration) is skipped with a warning: it is
// re-vectorized from the database, not read.
func (d *Deps) EachVectorStore(ctx context.Context, fn func(vector.Store) error) error {
	dims, err := d.vectorDimensions(ctx)
	if err != nil {
		return err
	}
	for _, dim := range dims {
		s, err := d.Vectors(ctx, dim)
		if errors.Is(err, milvus.ErrSchemaVersion) || errors.Is(err, vector.ErrDimension) {
			d.Log.Warn("vector store skipped", "dimension", dim, "err", err)
			continue
		}
		if err != nil {
			return err
		}
		if err := fn(s); err != nil {
			return err
		}
	}
	return nil
}

// vectorDimensions lists the dimensions that have a store: Milvus
// collections named after MILVUS_COLLECTION, or dim<N> directories.
func (d *Deps) vectorDimensions(ctx context.Context) ([]int, error) {
	if d.Cfg.MilvusAddress != "" {
		return milvus.Dimensions(ctx, d.milvusConfig(0), d.Cfg.MilvusCollection, localembed.DefaultDimension)
	}
	entries, err := os.ReadDir(filepath.Join(d.Cfg.DataDir, "vectors"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var dims []int
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "dim")
		if n, err := strconv.Atoi(rest); ok && err == nil && n > 0 && e.IsDir() && e.Name() == fmt.Sprintf("dim%d", n) {
			dims = append(dims, n)
		}
	}
	slices.Sort(dims)
	return dims, nil
}

// UseVectorStore makes s the store of dimension dim, in place of the one
// the configuration would open: for tests that need a store to behave in a
// particular way, and for programs embedding Lore with their own store.
// Close closes it like any other.
func (d *Deps) UseVectorStore(dim int, s vector.Store) {
	o := &storeOpening{done: make(chan struct{}), s: s}
	close(o.done)
	d.vectors.mu.Lock()
	if d.vectors.m == nil {
		d.vectors.m = map[int]*storeOpening{}
	}
	d.vectors.m[dim] = o
	d.vectors.mu.Unlock()
	d.OnClose(func() { _ = s.Close() })
}
