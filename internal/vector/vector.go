// Package vector defines Lore's chunk store: dense vectors for semantic
// search and a BM25 index for keyword search, partitioned by site.
//
// Every read takes a site ID and must never return another site's chunks:
// sites are tenants, and isolation is a security property, not a ranking
// detail. Implementations live in subpackages (local for a single embedded
// worker, milvus for a server) and are held to the same behaviour by the
// conformance suite in vectortest.
package vector

import (
	"context"
	"errors"
	"fmt"
)

// Chunk is one stored piece of a document with its embedding.
type Chunk struct {
	// ID is ChunkID(DocumentID, Version, Index): deterministic, so a retried
	// upsert replaces instead of duplicating.
	ID string
	// SiteID is the tenant; searches never cross it.
	SiteID     int64
	DocumentID int64
	// Version is the document content version the chunk was cut from; a
	// re-ingest writes the new version, then drops the others with
	// DeleteStaleVersions, so searches never see a half-replaced document.
	Version int64
	Index   int    // position of the chunk in the document version
	Title   string // document title
	Heading string // heading path, e.g. "Install > Linux"
	Text    string
	// Vector is the embedding; stores compare by cosine, so its scale does
	// not matter.
	Vector []float32
}

// Hit is a search result: the chunk's identity and the text to show or
// feed to a model, without the vector, which callers never need back.
type Hit struct {
	ChunkID    string // Chunk.ID
	SiteID     int64  // always the site that was searched
	DocumentID int64
	Version    int64
	ChunkIndex int    // Chunk.Index, to order or merge neighbouring chunks
	Title      string // document title
	Heading    string // heading path
	Text       string
	// Score is the cosine similarity for Search and the BM25 score for
	// KeywordSearch; higher is better.
	Score float32
}

// Store keeps chunks and searches them. Implementations are safe for
// concurrent use.
type Store interface {
	// Upsert inserts chunks, replacing any stored chunk with the same ID.
	// Every vector must have the store's dimension (else ErrDimension).
	Upsert(ctx context.Context, chunks []Chunk) error
	// DeleteDocument removes every chunk of the document, all versions.
	DeleteDocument(ctx context.Context, documentID int64) error
	// DeleteStaleVersions removes the document's chunks whose version is not
	// keepVersion.
	DeleteStaleVersions(ctx context.Context, documentID, keepVersion int64) error
	// DeleteSite removes every chunk of the site.
	DeleteSite(ctx context.Context, siteID int64) error
	// Search returns at most k chunks of the site by descending cosine
	// similarity to vec, keeping only scores >= threshold. It never returns
	// another site's chunk.
	Search(ctx context.Context, siteID int64, vec []float32, k int, threshold float32) ([]Hit, error)
	// KeywordSearch returns at most k chunks of the site by descending BM25
	// score of query over title, heading and text.
	KeywordSearch(ctx context.Context, siteID int64, query string, k int) ([]Hit, error)
	// CountDocument returns how many chunks are stored for the document, all
	// versions together.
	CountDocument(ctx context.Context, documentID int64) (int, error)
	// Count returns how many chunks are stored in total.
	Count(ctx context.Context) (int, error)
	// Close releases the store; it is safe to call more than once.
	Close() error
}

// ChunkID returns the ID of chunk index of a document version, e.g.
// "d42-v3-c7". It is deterministic so that retried upserts overwrite.
func ChunkID(documentID, version int64, index int) string {
	return fmt.Sprintf("d%d-v%d-c%d", documentID, version, index)
}

// ErrDimension reports a vector whose length is not the store's dimension.
var ErrDimension = errors.New("vector: wrong vector dimension")

// ErrClosed reports use of a store after Close.
var ErrClosed = errors.New("vector: store is closed")

// ErrPermanent marks a store error that retrying cannot fix: the store
// refused the request itself (bad input, a collection whose schema does not
// match, failed authentication). Callers stop retrying; Temporal activities
// turn it into a non-retryable error.
var ErrPermanent = errors.New("vector: permanent store error")

// ErrUnavailable marks a store error that a later retry may fix: the store
// could not be reached, timed out, or was busy.
var ErrUnavailable = errors.New("vector: store unavailable")

type staleKey struct{}

// AllowStale returns a context under which reads may miss writes made in
// the last few seconds. A chat search reads the index built long before
// (every hit is checked against the database anyway), so it trades that
// staleness for not waiting on the store's consistency point; a store that
// is always consistent ignores it. Writes and the reads that must see
// them (ingest, tests) never use it.
func AllowStale(ctx context.Context) context.Context {
	return context.WithValue(ctx, staleKey{}, true)
}

// StaleAllowed reports whether AllowStale marked ctx.
func StaleAllowed(ctx context.Context) bool {
	v, _ := ctx.Value(staleKey{}).(bool)
	return v
}
