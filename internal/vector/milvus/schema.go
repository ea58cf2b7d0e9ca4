package milvus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/milvus-io/milvus-proto/go-api/v2/commonpb"
	"github.com/milvus-io/milvus-proto/go-api/v2/milvuspb"
	"github.com/milvus-io/milvus/client/v2/entity"
	"github.com/milvus-io/milvus/client/v2/index"
	"github.com/milvus-io/milvus/client/v2/milvusclient"
	"github.com/milvus-io/milvus/pkg/v2/util/merr"

	"github.com/lorekb/lore/internal/analyze"
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

// SchemaVersion is the layout this package writes and reads. It is stored
// on the collection (propSchemaVersion) when the collection is created, and
// Open refuses a collection of another version: data written under other
// rules (another analyzer, other fields) would be searched wrongly without
// an error. Bump it with every change to Schema, searchText or the keyword
// query, and describe the migration in README ("Milvus schema versions").
//
// Version 1 (no property: collections made before versioning) ran Milvus's
// standard analyzer over raw title, heading and text, which keeps a run of
// Chinese characters as one token. Version 2 stores the terms of Lore's
// analyzer (package analyze) and splits them at spaces.
const SchemaVersion = 2

// Collection properties recording what the collection was built with: the
// schema version, and the version of Lore's analyzer whose terms fill
// search_text (terms of two analyzer versions must not share an index).
const (
	propSchemaVersion   = "lore.schema_version"
	propAnalyzerVersion = "lore.analyzer_version"
)

// searchAnalyzer is the analyzer of search_text: the terms are Lore's,
// already lower-cased, stemmed and segmented, so Milvus only splits them.
var searchAnalyzer = map[string]any{"tokenizer": "whitespace"}

// bm25Function is the name of the function that feeds the sparse field.
const bm25Function = "search_text_bm25"

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
			WithEnableAnalyzer(true).WithAnalyzerParams(searchAnalyzer)).
		WithField(entity.NewField().WithName(fieldVector).WithDataType(entity.FieldTypeFloatVector).WithDim(int64(dim))).
		WithField(entity.NewField().WithName(fieldSparse).WithDataType(entity.FieldTypeSparseVector)).
		WithFunction(entity.NewFunction().WithName(bm25Function).WithType(entity.FunctionTypeBM25).
			WithInputFields(fieldSearchText).WithOutputFields(fieldSparse))
}

// indexOptions are the indexes every collection needs before it can load:
// HNSW for cosine search, the BM25 sparse index (dropping no terms, since a
// rare exact term is what keyword search is for) and an inverted index on
// document_id for the per-document deletes and counts.
func indexOptions(collection string) []milvusclient.CreateIndexOption {
	return []milvusclient.CreateIndexOption{
		milvusclient.NewCreateIndexOption(collection, fieldVector, index.NewHNSWIndex(entity.COSINE, 16, 200)).WithIndexName(fieldVector),
		milvusclient.NewCreateIndexOption(collection, fieldSparse, index.NewSparseInvertedIndex(entity.BM25, 0)).WithIndexName(fieldSparse),
		milvusclient.NewCreateIndexOption(collection, fieldDocument, index.NewInvertedIndex()).WithIndexName(fieldDocument),
	}
}

// ensureCollection creates the collection if missing (or checks the one
// there), creates the indexes it lacks and loads it. The client creates a
// collection and its indexes in separate requests, so a failure between
// them leaves a collection without indexes, which cannot load; creating the
// missing ones on every open repairs it.
func (s *Store) ensureCollection(ctx context.Context) error {
	has, err := s.cli.HasCollection(ctx, milvusclient.NewHasCollectionOption(s.collection))
	if err != nil {
		return fmt.Errorf("milvus: check collection %s: %w", s.collection, classify(err))
	}
	if has {
		coll, err := s.cli.DescribeCollection(ctx, milvusclient.NewDescribeCollectionOption(s.collection))
		if err != nil {
			return fmt.Errorf("milvus: describe collection %s: %w", s.collection, classify(err))
		}
		if err := checkCollection(coll, s.dim); err != nil {
			return fmt.Errorf("milvus: collection %s: %w", s.collection, classify(err))
		}
	} else {
		opt := milvusclient.NewCreateCollectionOption(s.collection, Schema(s.dim)).
			WithConsistencyLevel(entity.ClBounded).
			WithProperty(propSchemaVersion, SchemaVersion).
			WithProperty(propAnalyzerVersion, analyze.Version)
		if err := s.cli.CreateCollection(ctx, opt); err != nil {
			return fmt.Errorf("milvus: create collection %s: %w", s.collection, classify(err))
		}
	}
	if err := s.ensureIndexes(ctx); err != nil {
		return err
	}
	return s.load(ctx)
}

// ensureIndexes creates each index of indexOptions whose field has none,
// and waits for it. An index of another type or metric (made by hand) is
// refused: searches would fail or rank by another measure.
func (s *Store) ensureIndexes(ctx context.Context) error {
	have := fieldIndexes{}
	if _, err := s.cli.ListIndexes(ctx, have.option(s.collection)); err != nil && !errors.Is(err, merr.ErrIndexNotFound) {
		return fmt.Errorf("milvus: list indexes of %s: %w", s.collection, classify(err))
	}
	for _, opt := range indexOptions(s.collection) {
		req := opt.Request()
		field := req.GetFieldName()
		if got, ok := have[field]; ok {
			want := kvMap(req.GetExtraParams())
			for _, key := range []string{"index_type", "metric_type"} {
				// Compared only when the server reports it, so that a
				// server describing indexes otherwise never refuses ours.
				if g, ok := got[key]; ok && !strings.EqualFold(g, want[key]) {
					return fmt.Errorf("milvus: collection %s: %w: index on %s has %s %q, want %q",
						s.collection, classify(ErrSchemaVersion), field, key, got[key], want[key])
				}
			}
			continue
		}
		s.log.Info("creating missing milvus index", "field", field)
		task, err := s.cli.CreateIndex(ctx, opt)
		if err == nil {
			err = task.Await(ctx)
		}
		if err != nil {
			return fmt.Errorf("milvus: create index on %s.%s: %w", s.collection, field, classify(err))
		}
	}
	return nil
}

// fieldIndexes collects the parameters of each field's index, from one
// DescribeIndex answer (ListIndexes reports only index names, and indexes
// made by older versions have Milvus's default names).
type fieldIndexes map[string]map[string]string

type listIndexes struct {
	collection string
	seen       fieldIndexes
}

func (f fieldIndexes) option(collection string) milvusclient.ListIndexOption {
	return listIndexes{collection: collection, seen: f}
}

func (o listIndexes) Request() *milvuspb.DescribeIndexRequest {
	return &milvuspb.DescribeIndexRequest{CollectionName: o.collection}
}

func (o listIndexes) Matches(d *milvuspb.IndexDescription) bool {
	o.seen[d.GetFieldName()] = kvMap(d.GetParams())
	return true
}

func kvMap(pairs []*commonpb.KeyValuePair) map[string]string {
	m := make(map[string]string, len(pairs))
	for _, p := range pairs {
		m[p.GetKey()] = p.GetValue()
	}
	return m
}

// checkCollection verifies that an existing collection is one this package
// created, for vectors of dim dimensions, under SchemaVersion.
func checkCollection(coll *entity.Collection, dim int) error {
	if coll == nil || coll.Schema == nil {
		return errors.New("no schema")
	}
	sch := coll.Schema
	want := Schema(dim)
	for _, w := range want.Fields {
		if fieldOf(sch, w.Name) == nil {
			return fmt.Errorf("%w: not a Lore collection: field %q missing", ErrSchemaVersion, w.Name)
		}
	}
	if got, err := fieldOf(sch, fieldVector).GetDim(); err != nil || got != int64(dim) {
		return fmt.Errorf("%w: collection has %d dimensions, configured %d", vector.ErrDimension, got, dim)
	}
	v, av := collectionVersion(coll)
	if v != SchemaVersion || av != analyze.Version {
		return fmt.Errorf("%w: collection has schema version %d (analyzer %d), this Lore writes version %d (analyzer %d); "+
			"migrate: set MILVUS_COLLECTION to a new name, restart the workers, re-vectorize every document "+
			"(README, \"Milvus schema versions\"), then drop the old collection", ErrSchemaVersion, v, av, SchemaVersion, analyze.Version)
	}
	return sameLayout(sch, want)
}

// collectionVersion is the schema and analyzer versions recorded on the
// collection; one without the properties predates versioning: schema
// version 1, no analyzer (0).
func collectionVersion(coll *entity.Collection) (schema, analyzer int) {
	num := func(key string, missing int) int {
		v, ok := coll.Properties[key]
		if !ok {
			return missing
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return -1
		}
		return n
	}
	return num(propSchemaVersion, 1), num(propAnalyzerVersion, 0)
}

// sameLayout compares what SchemaVersion fixes beyond field names: types,
// the primary and partition keys, the analyzer and the BM25 function. A
// difference means the collection was altered by hand.
func sameLayout(got, want *entity.Schema) error {
	for _, w := range want.Fields {
		g := fieldOf(got, w.Name)
		switch {
		case g.DataType != w.DataType:
			return fmt.Errorf("%w: field %s has type %v, want %v", ErrSchemaVersion, w.Name, g.DataType, w.DataType)
		case g.PrimaryKey != w.PrimaryKey || g.AutoID != w.AutoID:
			return fmt.Errorf("%w: field %s: primary key %v auto id %v, want %v %v", ErrSchemaVersion, w.Name, g.PrimaryKey, g.AutoID, w.PrimaryKey, w.AutoID)
		case g.IsPartitionKey != w.IsPartitionKey:
			return fmt.Errorf("%w: field %s: partition key %v, want %v", ErrSchemaVersion, w.Name, g.IsPartitionKey, w.IsPartitionKey)
		}
	}
	st := fieldOf(got, fieldSearchText)
	if st.TypeParams["enable_analyzer"] != "true" || !sameJSON(st.TypeParams["analyzer_params"], searchAnalyzer) {
		return fmt.Errorf("%w: %s analyzer %v, want %v", ErrSchemaVersion, fieldSearchText, st.TypeParams, searchAnalyzer)
	}
	ok := slices.ContainsFunc(got.Functions, func(f *entity.Function) bool {
		return f.Type == entity.FunctionTypeBM25 && slices.Equal(f.InputFieldNames, []string{fieldSearchText}) &&
			slices.Equal(f.OutputFieldNames, []string{fieldSparse})
	})
	if !ok {
		return fmt.Errorf("%w: no BM25 function from %s to %s", ErrSchemaVersion, fieldSearchText, fieldSparse)
	}
	return nil
}

func fieldOf(sch *entity.Schema, name string) *entity.Field {
	for _, f := range sch.Fields {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// sameJSON reports whether the JSON text s encodes the value want.
func sameJSON(s string, want map[string]any) bool {
	var got map[string]any
	if json.Unmarshal([]byte(s), &got) != nil {
		return false
	}
	b, _ := json.Marshal(want)
	var norm map[string]any
	_ = json.Unmarshal(b, &norm)
	return reflect.DeepEqual(got, norm)
}

// CollectionName is the collection of dim-dimensional vectors: base for
// defaultDim (so the first deployment's collection keeps its plain name),
// base_<dim> for any other.
func CollectionName(base string, dim, defaultDim int) string {
	if base == "" {
		base = DefaultCollection
	}
	if dim == defaultDim {
		return base
	}
	return fmt.Sprintf("%s_%d", base, dim)
}

// Dimensions lists the vector dimensions that have a collection named after
// base (see CollectionName), so deletes can reach every one of them: a
// tenant that changed embedding models still has chunks in the old one.
func Dimensions(ctx context.Context, cfg Config, base string, defaultDim int) ([]int, error) {
	if base == "" {
		base = DefaultCollection
	}
	cli, err := dial(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer cli.Close(context.WithoutCancel(ctx))
	names, err := cli.ListCollections(ctx, milvusclient.NewListCollectionOption())
	if err != nil {
		return nil, fmt.Errorf("milvus: list collections: %w", classify(err))
	}
	suffix := regexp.MustCompile(`^` + regexp.QuoteMeta(base) + `_([1-9][0-9]{0,5})$`)
	var dims []int
	for _, name := range names {
		if name == base {
			dims = append(dims, defaultDim)
		} else if m := suffix.FindStringSubmatch(name); m != nil {
			n, _ := strconv.Atoi(m[1])
			dims = append(dims, n)
		}
	}
	slices.Sort(dims)
	return slices.Compact(dims), nil
}
