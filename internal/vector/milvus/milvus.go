// Package milvus is a vector.Store on a Milvus 2.5+ server, for deployments
// that outgrow the embedded store or run several workers.
//
// One collection holds every site. site_id is the partition key, and every
// read filters on it ("site_id == 3"), which keeps sites isolated and lets
// Milvus prune partitions. Dense vectors use a COSINE HNSW index. Keyword
// search uses Milvus full-text search: a BM25 function turns search_text
// (title, heading and text together, since a BM25 function reads one field)
// into a sparse vector at insert time, and queries are sent as raw text.
//
// Reads use Strong consistency, so a search right after an upsert or delete
// sees it, as the vector.Store contract (and the ingest pipeline's
// delete-stale-versions step) requires.
package milvus

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/milvus-io/milvus/client/v2/column"
	"github.com/milvus-io/milvus/client/v2/entity"
	"github.com/milvus-io/milvus/client/v2/index"
	"github.com/milvus-io/milvus/client/v2/milvusclient"

	"github.com/lorekb/lore/internal/vector"
)

// Field names of the collection.
const (
	fieldID         = "id"
	fieldSite       = "site_id"
	fieldDocument   = "document_id"
	fieldVersion    = "version"
	fieldChunkIndex = "chunk_index"
	fieldTitle      = "title"
	fieldHeading    = "heading"
	fieldText       = "text"
	fieldSearchText = "search_text"
	fieldVector     = "vector"
	fieldSparse     = "sparse"
)

// Size limits of the VarChar fields, in bytes.
const (
	maxIDLen      = 256
	maxTitleLen   = 2048
	maxHeadingLen = 2048
	maxTextLen    = 65535 // Milvus's VarChar maximum
)

// DefaultCollection is the collection name when Config.Collection is empty.
const DefaultCollection = "lore_chunks"

// upsertBatch bounds rows per request, keeping gRPC messages well under
// Milvus's limits with 800-rune chunks and 3072-dimension vectors.
const upsertBatch = 256

// maxTopK is Milvus's limit on results per search.
const maxTopK = 16384

// outputFields are returned with every hit.
var outputFields = []string{fieldSite, fieldDocument, fieldVersion, fieldChunkIndex, fieldTitle, fieldHeading, fieldText}

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
}

// Store is the Milvus-backed store. It is safe for concurrent use.
type Store struct {
	cli        *milvusclient.Client
	collection string
	dim        int
	closeOnce  sync.Once
	closeErr   error
}

var _ vector.Store = (*Store)(nil)

// Open connects, creates the collection with its indexes if it does not
// exist, and loads it. An existing collection whose vectors have another
// dimension is refused with vector.ErrDimension.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Dimension <= 0 {
		return nil, fmt.Errorf("milvus: dimension must be positive, got %d", cfg.Dimension)
	}
	if cfg.Collection == "" {
		cfg.Collection = DefaultCollection
	}
	cli, err := milvusclient.New(ctx, &milvusclient.ClientConfig{
		Address:  cfg.Address,
		Username: cfg.Username,
		Password: cfg.Password,
		DBName:   cfg.DBName,
	})
	if err != nil {
		return nil, fmt.Errorf("milvus: connect to %s: %w", cfg.Address, err)
	}
	s := &Store{cli: cli, collection: cfg.Collection, dim: cfg.Dimension}
	if err := s.ensureCollection(ctx); err != nil {
		cli.Close(ctx)
		return nil, err
	}
	return s, nil
}

// ensureCollection creates the collection if missing, checks its dimension
// and loads it.
func (s *Store) ensureCollection(ctx context.Context) error {
	has, err := s.cli.HasCollection(ctx, milvusclient.NewHasCollectionOption(s.collection))
	if err != nil {
		return fmt.Errorf("milvus: check collection %s: %w", s.collection, err)
	}
	if has {
		coll, err := s.cli.DescribeCollection(ctx, milvusclient.NewDescribeCollectionOption(s.collection))
		if err != nil {
			return fmt.Errorf("milvus: describe collection %s: %w", s.collection, err)
		}
		if err := checkSchema(coll.Schema, s.dim); err != nil {
			return fmt.Errorf("milvus: collection %s: %w", s.collection, err)
		}
	} else {
		opt := milvusclient.NewCreateCollectionOption(s.collection, Schema(s.dim)).
			WithConsistencyLevel(entity.ClStrong).
			WithIndexOptions(indexOptions(s.collection)...)
		if err := s.cli.CreateCollection(ctx, opt); err != nil {
			return fmt.Errorf("milvus: create collection %s: %w", s.collection, err)
		}
	}
	task, err := s.cli.LoadCollection(ctx, milvusclient.NewLoadCollectionOption(s.collection))
	if err != nil {
		return fmt.Errorf("milvus: load collection %s: %w", s.collection, err)
	}
	if err := task.Await(ctx); err != nil {
		return fmt.Errorf("milvus: load collection %s: %w", s.collection, err)
	}
	return nil
}

// Schema returns the collection schema for dim-dimensional vectors. It is
// exported so operators can inspect or pre-create the collection.
func Schema(dim int) *entity.Schema {
	return entity.NewSchema().
		WithDescription("Lore document chunks").
		WithField(entity.NewField().WithName(fieldID).WithDataType(entity.FieldTypeVarChar).
			WithMaxLength(maxIDLen).WithIsPrimaryKey(true).WithIsAutoID(false)).
		WithField(entity.NewField().WithName(fieldSite).WithDataType(entity.FieldTypeInt64).WithIsPartitionKey(true)).
		WithField(entity.NewField().WithName(fieldDocument).WithDataType(entity.FieldTypeInt64)).
		WithField(entity.NewField().WithName(fieldVersion).WithDataType(entity.FieldTypeInt64)).
		WithField(entity.NewField().WithName(fieldChunkIndex).WithDataType(entity.FieldTypeInt32)).
		WithField(entity.NewField().WithName(fieldTitle).WithDataType(entity.FieldTypeVarChar).WithMaxLength(maxTitleLen)).
		WithField(entity.NewField().WithName(fieldHeading).WithDataType(entity.FieldTypeVarChar).WithMaxLength(maxHeadingLen)).
		WithField(entity.NewField().WithName(fieldText).WithDataType(entity.FieldTypeVarChar).WithMaxLength(maxTextLen)).
		WithField(entity.NewField().WithName(fieldSearchText).WithDataType(entity.FieldTypeVarChar).WithMaxLength(maxTextLen).
			WithEnableAnalyzer(true).WithAnalyzerParams(map[string]any{"type": "standard"})).
		WithField(entity.NewField().WithName(fieldVector).WithDataType(entity.FieldTypeFloatVector).WithDim(int64(dim))).
		WithField(entity.NewField().WithName(fieldSparse).WithDataType(entity.FieldTypeSparseVector)).
		WithFunction(entity.NewFunction().WithName("search_text_bm25").WithType(entity.FunctionTypeBM25).
			WithInputFields(fieldSearchText).WithOutputFields(fieldSparse))
}

// indexOptions are the indexes created with the collection: HNSW for cosine
// search, the BM25 sparse index (dropping no terms, since a rare exact term
// is what keyword search is for) and an inverted index on document_id for
// the per-document deletes and counts.
func indexOptions(collection string) []milvusclient.CreateIndexOption {
	return []milvusclient.CreateIndexOption{
		milvusclient.NewCreateIndexOption(collection, fieldVector, index.NewHNSWIndex(entity.COSINE, 16, 200)),
		milvusclient.NewCreateIndexOption(collection, fieldSparse, index.NewSparseInvertedIndex(entity.BM25, 0)),
		milvusclient.NewCreateIndexOption(collection, fieldDocument, index.NewInvertedIndex()),
	}
}

// checkSchema verifies that an existing collection is one this package
// created, for vectors of dim dimensions.
func checkSchema(sch *entity.Schema, dim int) error {
	if sch == nil {
		return errors.New("no schema")
	}
	var vec *entity.Field
	for _, f := range sch.Fields {
		if f.Name == fieldVector {
			vec = f
		}
	}
	for _, name := range []string{fieldID, fieldSite, fieldDocument, fieldVersion, fieldChunkIndex, fieldTitle, fieldHeading, fieldText, fieldSearchText, fieldSparse} {
		found := false
		for _, f := range sch.Fields {
			found = found || f.Name == name
		}
		if !found {
			return fmt.Errorf("not a Lore collection: field %q missing", name)
		}
	}
	if vec == nil {
		return fmt.Errorf("not a Lore collection: field %q missing", fieldVector)
	}
	got, err := vec.GetDim()
	if err != nil {
		return err
	}
	if got != int64(dim) {
		return fmt.Errorf("%w: collection has %d dimensions, configured %d", vector.ErrDimension, got, dim)
	}
	return nil
}

// Drop deletes the collection and everything in it. It exists for tests
// and for operators changing the embedding model (and so the dimension).
func (s *Store) Drop(ctx context.Context) error {
	if err := s.cli.DropCollection(ctx, milvusclient.NewDropCollectionOption(s.collection)); err != nil {
		return fmt.Errorf("milvus: drop collection %s: %w", s.collection, err)
	}
	return nil
}

// Close disconnects; it is safe to call more than once.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.cli.Close(context.Background()) })
	return s.closeErr
}

// Upsert inserts or replaces chunks by ID. The batch is validated whole
// before anything is sent (vector.ErrDimension for a wrong dimension);
// duplicate IDs within it collapse to the last. Large batches go in several
// requests: a failure part-way leaves some chunks written, which a retry of
// the same (idempotent) batch completes.
func (s *Store) Upsert(ctx context.Context, chunks []vector.Chunk) error {
	if len(chunks) == 0 {
		return ctx.Err()
	}
	for i, c := range chunks {
		if err := s.validate(c); err != nil {
			return fmt.Errorf("milvus: chunk %d: %w", i, err)
		}
	}
	chunks = dedupe(chunks)
	for start := 0; start < len(chunks); start += upsertBatch {
		batch := chunks[start:min(start+upsertBatch, len(chunks))]
		if _, err := s.cli.Upsert(ctx, s.columns(batch)); err != nil {
			return fmt.Errorf("milvus: upsert %d chunks: %w", len(batch), err)
		}
	}
	return nil
}

// validate checks what Milvus would otherwise reject half-way through.
func (s *Store) validate(c vector.Chunk) error {
	switch {
	case c.ID == "":
		return errors.New("empty ID")
	case len(c.ID) > maxIDLen:
		return fmt.Errorf("ID of %d bytes exceeds %d", len(c.ID), maxIDLen)
	case len(c.Vector) != s.dim:
		return fmt.Errorf("%w: chunk %s has %d dimensions, store has %d", vector.ErrDimension, c.ID, len(c.Vector), s.dim)
	case len(c.Text) > maxTextLen:
		return fmt.Errorf("chunk %s text of %d bytes exceeds %d", c.ID, len(c.Text), maxTextLen)
	case c.Index < math.MinInt32 || c.Index > math.MaxInt32:
		return fmt.Errorf("chunk %s index %d out of int32 range", c.ID, c.Index)
	}
	for _, x := range c.Vector {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("chunk %s has a non-finite vector value", c.ID)
		}
	}
	return nil
}

// dedupe keeps the last chunk of each ID, in first-seen order.
func dedupe(chunks []vector.Chunk) []vector.Chunk {
	last := make(map[string]int, len(chunks))
	for i, c := range chunks {
		last[c.ID] = i
	}
	if len(last) == len(chunks) {
		return chunks
	}
	out := make([]vector.Chunk, 0, len(last))
	for i, c := range chunks {
		if last[c.ID] == i {
			out = append(out, c)
		}
	}
	return out
}

// columns builds the column-based upsert of a batch.
func (s *Store) columns(batch []vector.Chunk) milvusclient.UpsertOption {
	n := len(batch)
	ids := make([]string, n)
	sites := make([]int64, n)
	docs := make([]int64, n)
	versions := make([]int64, n)
	indexes := make([]int32, n)
	titles := make([]string, n)
	headings := make([]string, n)
	texts := make([]string, n)
	search := make([]string, n)
	vecs := make([][]float32, n)
	for i, c := range batch {
		ids[i] = c.ID
		sites[i] = c.SiteID
		docs[i] = c.DocumentID
		versions[i] = c.Version
		indexes[i] = int32(c.Index)
		titles[i] = truncate(c.Title, maxTitleLen)
		headings[i] = truncate(c.Heading, maxHeadingLen)
		texts[i] = c.Text
		search[i] = SearchText(c.Title, c.Heading, c.Text)
		vecs[i] = c.Vector
	}
	return milvusclient.NewColumnBasedInsertOption(s.collection).
		WithVarcharColumn(fieldID, ids).
		WithInt64Column(fieldSite, sites).
		WithInt64Column(fieldDocument, docs).
		WithInt64Column(fieldVersion, versions).
		WithInt32Column(fieldChunkIndex, indexes).
		WithVarcharColumn(fieldTitle, titles).
		WithVarcharColumn(fieldHeading, headings).
		WithVarcharColumn(fieldText, texts).
		WithVarcharColumn(fieldSearchText, search).
		WithFloatVectorColumn(fieldVector, s.dim, vecs)
}

// SearchText is what keyword search indexes for a chunk: its title, heading
// and text, cut to Milvus's VarChar limit on a rune boundary.
func SearchText(title, heading, text string) string {
	return truncate(title+"\n"+heading+"\n"+text, maxTextLen)
}

// truncate cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// DeleteDocument removes all versions of the document.
func (s *Store) DeleteDocument(ctx context.Context, documentID int64) error {
	return s.delete(ctx, fmt.Sprintf("%s == %d", fieldDocument, documentID))
}

// DeleteStaleVersions removes the document's chunks of other versions.
func (s *Store) DeleteStaleVersions(ctx context.Context, documentID, keepVersion int64) error {
	return s.delete(ctx, fmt.Sprintf("%s == %d && %s != %d", fieldDocument, documentID, fieldVersion, keepVersion))
}

// DeleteSite removes all chunks of the site.
func (s *Store) DeleteSite(ctx context.Context, siteID int64) error {
	return s.delete(ctx, siteFilter(siteID))
}

func (s *Store) delete(ctx context.Context, expr string) error {
	if _, err := s.cli.Delete(ctx, milvusclient.NewDeleteOption(s.collection).WithExpr(expr)); err != nil {
		return fmt.Errorf("milvus: delete %s: %w", expr, err)
	}
	return nil
}

// siteFilter is the expression every read carries: the isolation boundary.
func siteFilter(siteID int64) string { return fmt.Sprintf("%s == %d", fieldSite, siteID) }

// Search returns the k chunks of the site nearest to vec by cosine, best
// first, with scores of at least threshold.
func (s *Store) Search(ctx context.Context, siteID int64, vec []float32, k int, threshold float32) ([]vector.Hit, error) {
	if len(vec) != s.dim {
		return nil, fmt.Errorf("%w: query has %d dimensions, store has %d", vector.ErrDimension, len(vec), s.dim)
	}
	if k <= 0 {
		return nil, ctx.Err()
	}
	k = min(k, maxTopK)
	opt := milvusclient.NewSearchOption(s.collection, k, []entity.Vector{entity.FloatVector(vec)}).
		WithANNSField(fieldVector).
		WithFilter(siteFilter(siteID)).
		WithOutputFields(outputFields...).
		WithConsistencyLevel(entity.ClStrong).
		WithAnnParam(index.NewHNSWAnnParam(max(k, 64)))
	hits, err := s.search(ctx, opt)
	if err != nil {
		return nil, err
	}
	// Results come best first, so the threshold cuts a suffix.
	for i, h := range hits {
		if h.Score < threshold {
			return hits[:i], nil
		}
	}
	return hits, nil
}

// KeywordSearch returns the k chunks of the site with the best BM25 score
// for query, best first.
func (s *Store) KeywordSearch(ctx context.Context, siteID int64, query string, k int) ([]vector.Hit, error) {
	if k <= 0 || strings.TrimSpace(query) == "" {
		return nil, ctx.Err()
	}
	k = min(k, maxTopK)
	opt := milvusclient.NewSearchOption(s.collection, k, []entity.Vector{entity.Text(query)}).
		WithANNSField(fieldSparse).
		WithFilter(siteFilter(siteID)).
		WithOutputFields(outputFields...).
		WithConsistencyLevel(entity.ClStrong)
	hits, err := s.search(ctx, opt)
	if err != nil {
		return nil, err
	}
	// Only chunks that share a term with the query are matches.
	out := hits[:0]
	for _, h := range hits {
		if h.Score > 0 {
			out = append(out, h)
		}
	}
	return out, nil
}

// search runs one single-query search and converts its results.
func (s *Store) search(ctx context.Context, opt milvusclient.SearchOption) ([]vector.Hit, error) {
	res, err := s.cli.Search(ctx, opt)
	if err != nil {
		return nil, fmt.Errorf("milvus: search: %w", err)
	}
	if len(res) == 0 {
		return nil, nil
	}
	rs := res[0]
	if rs.Err != nil {
		return nil, fmt.Errorf("milvus: search: %w", rs.Err)
	}
	return hitsFrom(rs)
}

// hitsFrom converts a result set into hits.
func hitsFrom(rs milvusclient.ResultSet) ([]vector.Hit, error) {
	n := rs.ResultCount
	if n == 0 || rs.IDs == nil {
		return nil, nil
	}
	cols := map[string]column.Column{}
	for _, name := range outputFields {
		c := rs.GetColumn(name)
		if c == nil {
			return nil, fmt.Errorf("milvus: search result lacks field %s", name)
		}
		cols[name] = c
	}
	hits := make([]vector.Hit, n)
	for i := 0; i < n; i++ {
		var h vector.Hit
		var errs []error
		str := func(c column.Column) string {
			v, err := c.GetAsString(i)
			errs = append(errs, err)
			return v
		}
		num := func(c column.Column) int64 {
			v, err := c.GetAsInt64(i)
			errs = append(errs, err)
			return v
		}
		h.ChunkID = str(rs.IDs)
		h.SiteID = num(cols[fieldSite])
		h.DocumentID = num(cols[fieldDocument])
		h.Version = num(cols[fieldVersion])
		h.ChunkIndex = int(num(cols[fieldChunkIndex]))
		h.Title = str(cols[fieldTitle])
		h.Heading = str(cols[fieldHeading])
		h.Text = str(cols[fieldText])
		if i < len(rs.Scores) {
			h.Score = rs.Scores[i]
		}
		if err := errors.Join(errs...); err != nil {
			return nil, fmt.Errorf("milvus: read search result %d: %w", i, err)
		}
		hits[i] = h
	}
	return hits, nil
}

// CountDocument returns the number of chunks of the document.
func (s *Store) CountDocument(ctx context.Context, documentID int64) (int, error) {
	return s.count(ctx, fmt.Sprintf("%s == %d", fieldDocument, documentID))
}

// Count returns the number of chunks in the collection.
func (s *Store) Count(ctx context.Context) (int, error) {
	return s.count(ctx, "")
}

func (s *Store) count(ctx context.Context, expr string) (int, error) {
	opt := milvusclient.NewQueryOption(s.collection).
		WithOutputFields("count(*)").
		WithConsistencyLevel(entity.ClStrong)
	if expr != "" {
		opt = opt.WithFilter(expr)
	}
	rs, err := s.cli.Query(ctx, opt)
	if err != nil {
		return 0, fmt.Errorf("milvus: count %q: %w", expr, err)
	}
	c := rs.GetColumn("count(*)")
	if c == nil || c.Len() == 0 {
		return 0, fmt.Errorf("milvus: count %q: no count in the answer", expr)
	}
	n, err := c.GetAsInt64(0)
	if err != nil {
		return 0, fmt.Errorf("milvus: count %q: %w", expr, err)
	}
	return int(n), nil
}
