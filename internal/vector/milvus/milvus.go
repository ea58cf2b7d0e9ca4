// Package milvus is a vector.Store on a Milvus server (2.5 or 2.6), for
// deployments that outgrow the embedded store or run several workers.
//
// One collection per vector dimension holds every site. site_id is the
// partition key, and every read filters on it ("site_id == 3"), which keeps
// sites isolated and lets Milvus search only the partition that holds the
// site. Dense vectors use a COSINE HNSW index. Keyword search uses Milvus
// full-text search: Lore analyzes title, heading and text in Go with the
// same analyzer as the embedded store and the reranker, writes the terms
// space-separated into search_text, and a BM25 function over a whitespace
// analyzer turns them into a sparse vector; queries go through the same
// analyzer, so both stores index and match the same terms.
//
// Reads are Strong, so a read after an upsert or delete sees it, as the
// vector.Store contract (and the ingest pipeline's delete-stale-versions
// step) requires; a context marked with vector.AllowStale reads with Bounded
// consistency instead, which chat searches use to skip the wait.
//
// Errors carry vector.ErrPermanent (bad request, schema, authentication) or
// vector.ErrUnavailable (unreachable, timeout, busy), so Temporal retries
// only what a retry can fix; a collection someone released is loaded again
// and the call retried once.
package milvus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/milvus-io/milvus/client/v2/milvusclient"

	"github.com/lorekb/lore/internal/vector"
)

// DefaultCollection is the collection name when Config.Collection is empty.
const DefaultCollection = "lore_chunks"

// DefaultDialTimeout bounds connecting when Config.DialTimeout is zero: an
// unreachable Milvus fails the activity quickly and Temporal retries it,
// instead of holding a worker slot for the gRPC default.
const DefaultDialTimeout = 5 * time.Second

// Config says which Milvus and collection to use.
type Config struct {
	// Address is host:port of Milvus, e.g. "localhost:19530".
	Address string
	// Username and Password authenticate when the server requires it.
	Username, Password string
	// DBName selects a database (the default database when empty).
	DBName string
	// Collection is the collection name (DefaultCollection when empty).
	Collection string
	// Dimension of the dense vectors; an existing collection must match.
	Dimension int
	// DialTimeout bounds the connection (DefaultDialTimeout when zero).
	DialTimeout time.Duration
	// Log receives warnings (fields cut to their limit); slog.Default when nil.
	Log *slog.Logger
}

// Store is the Milvus-backed store. It is safe for concurrent use.
type Store struct {
	cli        *milvusclient.Client
	collection string
	dim        int
	log        *slog.Logger

	// mu is read-held by every call and write-held by Close, so Close waits
	// for calls under way and no call starts on a closed client.
	mu     sync.RWMutex
	closed bool
	// loadMu lets one caller at a time load a released collection.
	loadMu sync.Mutex
}

var _ vector.Store = (*Store)(nil)

// Open connects (within Config.DialTimeout), creates the collection if it
// does not exist, creates any index it lacks, and loads it. An existing
// collection is checked first: one of another dimension is refused with
// vector.ErrDimension, one of another schema version with ErrSchemaVersion
// (which names the migration to run). Connection failures carry
// vector.ErrUnavailable, so the caller's retry policy decides when to try
// again.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Dimension <= 0 {
		return nil, fmt.Errorf("milvus: dimension must be positive, got %d: %w", cfg.Dimension, vector.ErrPermanent)
	}
	if cfg.Collection == "" {
		cfg.Collection = DefaultCollection
	}
	cli, err := dial(ctx, cfg)
	if err != nil {
		return nil, err
	}
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	s := &Store{cli: cli, collection: cfg.Collection, dim: cfg.Dimension, log: log.With("collection", cfg.Collection)}
	if err := s.ensureCollection(ctx); err != nil {
		_ = cli.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return s, nil
}

// dial connects to Milvus within the dial timeout.
func dial(ctx context.Context, cfg Config) (*milvusclient.Client, error) {
	timeout := cfg.DialTimeout
	if timeout <= 0 {
		timeout = DefaultDialTimeout
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cli, err := milvusclient.New(dctx, &milvusclient.ClientConfig{
		Address:  cfg.Address,
		Username: cfg.Username,
		Password: cfg.Password,
		DBName:   cfg.DBName,
	})
	if err != nil {
		return nil, fmt.Errorf("milvus: connect to %s: %w", cfg.Address, classify(err))
	}
	return cli, nil
}

// Drop deletes the collection and everything in it. It exists for tests
// and for operators changing the embedding model (and so the dimension).
func (s *Store) Drop(ctx context.Context) error {
	return s.call(ctx, "drop collection", func(cli *milvusclient.Client) error {
		return cli.DropCollection(ctx, milvusclient.NewDropCollectionOption(s.collection))
	})
}

// Close waits for calls under way, then disconnects; later calls return
// vector.ErrClosed. It is safe to call more than once.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.cli.Close(context.Background())
}

// call runs one request against the collection: it refuses a closed store,
// loads the collection again and retries once when Milvus reports it
// released, and classifies the error it returns.
func (s *Store) call(ctx context.Context, what string, fn func(cli *milvusclient.Client) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return vector.ErrClosed
	}
	err := fn(s.cli)
	if err != nil && notLoaded(err) {
		s.log.Warn("milvus collection is not loaded; loading it again", "err", err)
		if lerr := s.load(ctx); lerr != nil {
			return fmt.Errorf("milvus: %s: %w (loading it again: %w)", what, classify(err), lerr)
		}
		err = fn(s.cli)
	}
	if err != nil {
		return fmt.Errorf("milvus: %s: %w", what, classify(err))
	}
	return nil
}

// load loads the collection and waits until it is searchable. Concurrent
// callers that all saw "not loaded" wait for one load.
func (s *Store) load(ctx context.Context) error {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	task, err := s.cli.LoadCollection(ctx, milvusclient.NewLoadCollectionOption(s.collection))
	if err == nil {
		err = task.Await(ctx)
	}
	if err != nil {
		return fmt.Errorf("milvus: load collection %s: %w", s.collection, classify(err))
	}
	return nil
}

// ErrSchemaVersion reports a collection made for another schema version
// of this package (or by something else). It carries vector.ErrPermanent:
// only the migration its message names fixes it.
var ErrSchemaVersion = errors.New("milvus: collection has another schema version")
