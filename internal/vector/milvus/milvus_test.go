package milvus

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/milvus-io/milvus/client/v2/column"
	"github.com/milvus-io/milvus/client/v2/entity"
	"github.com/milvus-io/milvus/client/v2/milvusclient"

	"github.com/lorekb/lore/internal/vector"
	"github.com/lorekb/lore/internal/vector/vectortest"
)

// TestConformance runs the shared suite against a real Milvus (2.5 or 2.6)
// at MILVUS_ADDRESS, each test in a fresh collection that is dropped
// afterwards. No fake can stand in for it: it is the proof that Milvus
// ranks, filters and deletes as the embedded store does.
func TestConformance(t *testing.T) {
	addr := os.Getenv("MILVUS_ADDRESS")
	if addr == "" {
		t.Skip("MILVUS_ADDRESS is not set: no Milvus server to run the conformance suite against")
	}
	// One reachability check, so an absent server fails once, not per test.
	probe, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if _, err := Dimensions(probe, Config{Address: addr, Username: os.Getenv("MILVUS_USERNAME"),
		Password: os.Getenv("MILVUS_PASSWORD"), DialTimeout: 10 * time.Second}, "lore_test", vectortest.Dim); err != nil {
		t.Fatalf("Milvus at MILVUS_ADDRESS=%s: %v", addr, err)
	}
	n := 0
	vectortest.Run(t, func(t *testing.T) vector.Store {
		n++
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		s, err := Open(ctx, Config{
			Address:     addr,
			Username:    os.Getenv("MILVUS_USERNAME"),
			Password:    os.Getenv("MILVUS_PASSWORD"),
			Collection:  fmt.Sprintf("lore_test_%d_%d", time.Now().UnixNano(), n),
			Dimension:   vectortest.Dim,
			DialTimeout: 10 * time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := s.Drop(ctx); err != nil {
				t.Error(err)
			}
			s.Close()
		})
		return s
	})
}

func TestSchema(t *testing.T) {
	sch := Schema(384)
	want := map[string]entity.FieldType{
		fieldID: entity.FieldTypeVarChar, fieldSite: entity.FieldTypeInt64, fieldDocument: entity.FieldTypeInt64,
		fieldVersion: entity.FieldTypeInt64, fieldChunkIndex: entity.FieldTypeInt32, fieldTitle: entity.FieldTypeVarChar,
		fieldHeading: entity.FieldTypeVarChar, fieldText: entity.FieldTypeVarChar, fieldSearchText: entity.FieldTypeVarChar,
		fieldVector: entity.FieldTypeFloatVector, fieldSparse: entity.FieldTypeSparseVector,
	}
	if len(sch.Fields) != len(want) {
		t.Fatalf("%d fields, want %d", len(sch.Fields), len(want))
	}
	for name, typ := range want {
		f := fieldOf(sch, name)
		if f == nil || f.DataType != typ {
			t.Fatalf("field %s: %+v, want type %v", name, f, typ)
		}
	}
	if id := fieldOf(sch, fieldID); !id.PrimaryKey || id.AutoID {
		t.Error("id must be a caller-supplied primary key, so upserts are idempotent")
	}
	for _, f := range sch.Fields {
		if f.IsPartitionKey != (f.Name == fieldSite) {
			t.Errorf("field %s partition key %v: site_id, and only it, must be the partition key", f.Name, f.IsPartitionKey)
		}
	}
	if dim, err := fieldOf(sch, fieldVector).GetDim(); err != nil || dim != 384 {
		t.Errorf("vector dim %d, %v", dim, err)
	}
	if fieldOf(sch, fieldSearchText).TypeParams["enable_analyzer"] != "true" {
		t.Errorf("search_text analyzer not enabled: %v", fieldOf(sch, fieldSearchText).TypeParams)
	}
	if !sameJSON(fieldOf(sch, fieldSearchText).TypeParams["analyzer_params"], searchAnalyzer) {
		t.Errorf("search_text analyzer %v, want %v", fieldOf(sch, fieldSearchText).TypeParams, searchAnalyzer)
	}
	if len(sch.Functions) != 1 {
		t.Fatalf("%d functions", len(sch.Functions))
	}
	fn := sch.Functions[0]
	if fn.Type != entity.FunctionTypeBM25 || fmt.Sprint(fn.InputFieldNames) != "[search_text]" || fmt.Sprint(fn.OutputFieldNames) != "[sparse]" {
		t.Errorf("BM25 function %+v", fn)
	}
	// The schema must serialise: this is what CreateCollection sends.
	if p := sch.ProtoMessage(); len(p.GetFields()) != len(want) || len(p.GetFunctions()) != 1 {
		t.Errorf("proto schema has %d fields and %d functions", len(p.GetFields()), len(p.GetFunctions()))
	}
}

func TestIndexOptions(t *testing.T) {
	got := map[string]string{}
	for _, opt := range indexOptions("c") {
		req := opt.Request()
		params := map[string]string{}
		for _, kv := range req.GetExtraParams() {
			params[kv.GetKey()] = kv.GetValue()
		}
		got[req.GetFieldName()] = req.GetIndexName() + ":" + params["index_type"] + "/" + params["metric_type"]
	}
	want := map[string]string{fieldVector: "vector:HNSW/COSINE", fieldSparse: "sparse:SPARSE_INVERTED_INDEX/BM25", fieldDocument: "document_id:INVERTED/"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("indexes %v, want %v", got, want)
	}
}

func TestCheckCollection(t *testing.T) {
	current := func(dim int) *entity.Collection {
		return &entity.Collection{Schema: Schema(dim), Properties: currentProps()}
	}
	if err := checkCollection(current(8), 8); err != nil {
		t.Fatal(err)
	}
	if err := checkCollection(current(8), 16); !errors.Is(err, vector.ErrDimension) {
		t.Fatalf("got %v, want ErrDimension", err)
	}
	foreign := &entity.Collection{Schema: entity.NewSchema().WithField(entity.NewField().WithName("pk").WithDataType(entity.FieldTypeInt64).WithIsPrimaryKey(true))}
	if err := checkCollection(foreign, 8); !errors.Is(err, ErrSchemaVersion) {
		t.Fatalf("foreign collection: %v", err)
	}
	newer := current(8)
	newer.Properties[propSchemaVersion] = fmt.Sprint(SchemaVersion + 1)
	err := checkCollection(newer, 8)
	if !errors.Is(err, ErrSchemaVersion) || !errors.Is(classify(err), vector.ErrPermanent) || !strings.Contains(err.Error(), "MILVUS_COLLECTION") {
		t.Fatalf("newer version: %v", err)
	}
	// Altered by hand: same version, other analyzer, or no partition key.
	altered := current(8)
	fieldOf(altered.Schema, fieldSearchText).WithAnalyzerParams(map[string]any{"tokenizer": "jieba"})
	if err := checkCollection(altered, 8); !errors.Is(err, ErrSchemaVersion) {
		t.Fatalf("other analyzer: %v", err)
	}
	altered = current(8)
	fieldOf(altered.Schema, fieldSite).WithIsPartitionKey(false)
	if err := checkCollection(altered, 8); !errors.Is(err, ErrSchemaVersion) {
		t.Fatalf("no partition key: %v", err)
	}
	altered = current(8)
	altered.Schema.Functions = nil
	if err := checkCollection(altered, 8); !errors.Is(err, ErrSchemaVersion) {
		t.Fatalf("no BM25 function: %v", err)
	}
}

func TestTruncate(t *testing.T) {
	long := strings.Repeat("中", maxTextLen) // 3 bytes each
	got := truncate(long, maxTextLen)
	if len(got) > maxTextLen || !utf8.ValidString(got) || len(got) < maxTextLen-3 {
		t.Fatalf("len %d valid %v", len(got), utf8.ValidString(got))
	}
	if truncate("héllo", 2) != "h" {
		t.Fatalf("truncate split a rune: %q", truncate("héllo", 2))
	}
}

func TestValidateAndDedupe(t *testing.T) {
	s := &Store{dim: 4}
	good := vector.Chunk{ID: "a", Vector: []float32{1, 0, 0, 0}}
	if err := s.validate(good); err != nil {
		t.Fatal(err)
	}
	bad := good
	bad.Vector = []float32{1}
	if err := s.validate(bad); !errors.Is(err, vector.ErrDimension) {
		t.Fatalf("got %v", err)
	}
	bad = good
	bad.ID = ""
	if err := s.validate(bad); !errors.Is(err, vector.ErrPermanent) {
		t.Fatalf("empty ID: %v", err)
	}
	bad = good
	bad.Text = strings.Repeat("x", maxTextLen+1)
	if err := s.validate(bad); !errors.Is(err, vector.ErrPermanent) {
		t.Fatalf("oversize text: %v", err)
	}
	// Upsert validates before connecting: a bad chunk never reaches Milvus.
	if err := s.Upsert(context.Background(), []vector.Chunk{good, {ID: "b", Vector: []float32{1, 2}}}); !errors.Is(err, vector.ErrDimension) {
		t.Fatalf("Upsert: %v", err)
	}

	in := []vector.Chunk{{ID: "x", Text: "1"}, {ID: "y", Text: "2"}, {ID: "x", Text: "3"}}
	out := dedupe(in)
	if len(out) != 2 || out[0].ID != "y" || out[1].Text != "3" {
		t.Fatalf("dedupe: %+v", out)
	}
}

func TestFilters(t *testing.T) {
	if got := siteFilter(3); got != "site_id == 3" {
		t.Fatalf("site filter %q", got)
	}
	if got := siteFilter(-7); got != "site_id == -7" {
		t.Fatalf("site filter %q", got)
	}
}

func TestHitsFromResultSet(t *testing.T) {
	rs := milvusclient.ResultSet{
		ResultCount: 2,
		IDs:         column.NewColumnVarChar(fieldID, []string{"d1-v2-c0", "d5-v1-c3"}),
		Scores:      []float32{0.9, 0.5},
		Fields: milvusclient.DataSet{
			column.NewColumnInt64(fieldSite, []int64{7, 7}),
			column.NewColumnInt64(fieldDocument, []int64{1, 5}),
			column.NewColumnInt64(fieldVersion, []int64{2, 1}),
			column.NewColumnInt32(fieldChunkIndex, []int32{0, 3}),
			column.NewColumnVarChar(fieldTitle, []string{"T1", "T5"}),
			column.NewColumnVarChar(fieldHeading, []string{"H1", "H5"}),
			column.NewColumnVarChar(fieldText, []string{"text one", "text five"}),
		},
	}
	hits, err := hitsFrom(rs)
	if err != nil {
		t.Fatal(err)
	}
	want := []vector.Hit{
		{ChunkID: "d1-v2-c0", SiteID: 7, DocumentID: 1, Version: 2, ChunkIndex: 0, Title: "T1", Heading: "H1", Text: "text one", Score: 0.9},
		{ChunkID: "d5-v1-c3", SiteID: 7, DocumentID: 5, Version: 1, ChunkIndex: 3, Title: "T5", Heading: "H5", Text: "text five", Score: 0.5},
	}
	if fmt.Sprint(hits) != fmt.Sprint(want) {
		t.Fatalf("got %+v\nwant %+v", hits, want)
	}
	rs.Fields = rs.Fields[:3]
	if _, err := hitsFrom(rs); err == nil {
		t.Fatal("missing output fields not reported")
	}
}
