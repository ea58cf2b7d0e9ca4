package milvus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/milvus-io/milvus-proto/go-api/v2/commonpb"
	"github.com/milvus-io/milvus-proto/go-api/v2/milvuspb"
	"github.com/milvus-io/milvus-proto/go-api/v2/schemapb"
	"github.com/milvus-io/milvus/pkg/v2/util/merr"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/lorekb/lore/internal/analyze"
	"github.com/lorekb/lore/internal/vector"
)

// openFake opens a store of dimension 4 on a fresh fake server.
func openFake(t *testing.T, f *fakeMilvus, addr string) *Store {
	t.Helper()
	s, err := Open(context.Background(), Config{Address: addr, Collection: "c", Dimension: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// wantIndexedAndLoaded fails the test unless the fake's collection "c" is
// loaded and the indexes created on it are on the fields want names (sorted,
// as fmt prints a slice).
func wantIndexedAndLoaded(t *testing.T, f *fakeMilvus, want string) {
	t.Helper()
	var fields []string
	for _, r := range f.indexes {
		fields = append(fields, r.GetFieldName())
	}
	slices.Sort(fields)
	if fmt.Sprint(fields) != want {
		t.Errorf("indexes created on %v, want %s", fields, want)
	}
	if !f.collections["c"].loaded {
		t.Error("collection not loaded")
	}
}

// currentProps are the properties of a collection this version creates.
func currentProps() map[string]string {
	return map[string]string{propSchemaVersion: fmt.Sprint(SchemaVersion), propAnalyzerVersion: fmt.Sprint(analyze.Version)}
}

func TestOpenCreatesCollectionWithVersionAndEveryIndex(t *testing.T) {
	f, addr := startFake(t)
	openFake(t, f, addr)
	if len(f.creates) != 1 {
		t.Fatalf("%d CreateCollection calls", len(f.creates))
	}
	if got := kvMap(f.creates[0].GetProperties()); fmt.Sprint(got) != fmt.Sprint(currentProps()) {
		t.Errorf("collection properties %v, want %v", got, currentProps())
	}
	wantIndexedAndLoaded(t, f, "[document_id sparse vector]")
}

// A collection whose index creation failed half-way (the client creates
// the collection, then each index) is repaired on the next open instead of
// failing to load forever.
func TestOpenCreatesMissingIndexes(t *testing.T) {
	f, addr := startFake(t)
	f.addCollection("c", Schema(4).ProtoMessage(), currentProps(), fieldVector)
	openFake(t, f, addr)
	if len(f.creates) != 0 {
		t.Fatal("an existing collection was created again")
	}
	wantIndexedAndLoaded(t, f, "[document_id sparse]")

	// A collection with no index at all: Milvus answers DescribeIndex with
	// "index not found", which means "none", not a failure.
	f2, addr2 := startFake(t)
	f2.addCollection("c", Schema(4).ProtoMessage(), currentProps())
	openFake(t, f2, addr2)
	if len(f2.indexes) != 3 {
		t.Errorf("%d indexes created, want 3", len(f2.indexes))
	}

	// An index made by hand with another metric is refused, not searched.
	f3, addr3 := startFake(t)
	f3.addCollection("c", Schema(4).ProtoMessage(), currentProps(), fieldVector, fieldSparse, fieldDocument)
	f3.setIndexParams("c", fieldVector, map[string]string{"index_type": "HNSW", "metric_type": "L2"})
	_, err := Open(context.Background(), Config{Address: addr3, Collection: "c", Dimension: 4})
	if !errors.Is(err, ErrSchemaVersion) || !errors.Is(err, vector.ErrPermanent) || !strings.Contains(err.Error(), "L2") {
		t.Fatalf("L2 index: %v", err)
	}
	if f3.called("LoadCollection") != 0 {
		t.Error("a collection with a foreign index was loaded")
	}
}

// recordedV1 is the DescribeCollection answer for a collection made by the
// adapter before schema versioning (no version property), recorded from
// its CreateCollection request with the field IDs a server assigns.
func recordedV1(t *testing.T) *milvuspb.DescribeCollectionResponse {
	t.Helper()
	b, err := os.ReadFile("testdata/collection_v1.json")
	if err != nil {
		t.Fatal(err)
	}
	var resp milvuspb.DescribeCollectionResponse
	if err := protojson.Unmarshal(b, &resp); err != nil {
		t.Fatal(err)
	}
	return &resp
}

func TestOpenChecksSchemaVersion(t *testing.T) {
	rec := recordedV1(t)
	f, addr := startFake(t)
	f.addCollection("c", rec.GetSchema(), nil, fieldVector, fieldSparse, fieldDocument)
	_, err := Open(context.Background(), Config{Address: addr, Collection: "c", Dimension: 384})
	if SchemaVersion == 1 {
		if err != nil {
			t.Fatalf("a version 1 collection refused by version 1: %v", err)
		}
	} else if !errors.Is(err, ErrSchemaVersion) || !errors.Is(err, vector.ErrPermanent) || !strings.Contains(err.Error(), "re-vectorize") {
		t.Fatalf("version 1 collection: %v, want ErrSchemaVersion naming the migration", err)
	}
	if f.called("LoadCollection") != 0 && err != nil {
		t.Error("a refused collection was loaded")
	}

	f2, addr2 := startFake(t)
	f2.addCollection("c", Schema(4).ProtoMessage(), map[string]string{propSchemaVersion: "99"}, fieldVector, fieldSparse, fieldDocument)
	if _, err := Open(context.Background(), Config{Address: addr2, Collection: "c", Dimension: 4}); !errors.Is(err, ErrSchemaVersion) {
		t.Fatalf("version 99: %v", err)
	}
	// Terms of another analyzer version must not share the index.
	props := currentProps()
	props[propAnalyzerVersion] = fmt.Sprint(analyze.Version - 1)
	f2.addCollection("d", Schema(4).ProtoMessage(), props, fieldVector, fieldSparse, fieldDocument)
	if _, err := Open(context.Background(), Config{Address: addr2, Collection: "d", Dimension: 4}); !errors.Is(err, ErrSchemaVersion) {
		t.Fatalf("older analyzer: %v", err)
	}
	if _, err := Open(context.Background(), Config{Address: addr2, Collection: "c", Dimension: 8}); !errors.Is(err, vector.ErrDimension) || !errors.Is(err, vector.ErrPermanent) {
		t.Fatalf("other dimension: %v", err)
	}
	if len(f2.indexes) != 0 || f2.called("LoadCollection") != 0 {
		t.Error("a refused collection was changed or loaded")
	}
}

func TestOpenDialTimeout(t *testing.T) {
	start := time.Now()
	// Port 1 on loopback: nothing listens, the dial keeps retrying.
	_, err := Open(context.Background(), Config{Address: "127.0.0.1:1", Dimension: 4, DialTimeout: 300 * time.Millisecond})
	if !errors.Is(err, vector.ErrUnavailable) {
		t.Fatalf("got %v, want ErrUnavailable", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Open took %v with a 300ms dial timeout", d)
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want error
	}{
		{merr.WrapErrParameterInvalidMsg("bad expr"), vector.ErrPermanent},
		{merr.WrapErrCollectionNotFound("c"), vector.ErrPermanent},
		{merr.WrapErrCollectionSchemaMisMatch("c"), vector.ErrPermanent},
		{merr.WrapErrFieldNotFound("x"), vector.ErrPermanent},
		{merr.WrapErrDatabaseNotFound("db"), vector.ErrPermanent},
		{merr.ErrNeedAuthenticate, vector.ErrPermanent},
		{merr.WrapErrPrivilegeNotPermitted("search"), vector.ErrPermanent},
		// An error the server flags as caused by the input (segcore code).
		{merr.Error(&commonpb.Status{Code: 2000, Reason: "analyzer failed", ExtraInfo: map[string]string{merr.InputErrorFlagKey: "true"}}), vector.ErrPermanent},
		{merr.Error(&commonpb.Status{Code: 2000, Reason: "segcore crashed"}), vector.ErrUnavailable},
		{merr.WrapErrServiceNotReady("proxy", 1, "initializing"), vector.ErrUnavailable},
		{merr.WrapErrServiceUnavailable("down"), vector.ErrUnavailable},
		{merr.WrapErrServiceRateLimit(10), vector.ErrUnavailable},
		{merr.WrapErrServiceMemoryLimitExceeded(2, 1), vector.ErrUnavailable},
		{status.Error(codes.Unavailable, "connection refused"), vector.ErrUnavailable},
		{status.Error(codes.DeadlineExceeded, "slow"), vector.ErrUnavailable},
		{status.Error(codes.Unauthenticated, "who"), vector.ErrPermanent},
		{status.Error(codes.PermissionDenied, "no"), vector.ErrPermanent},
		{status.Error(codes.InvalidArgument, "no"), vector.ErrPermanent},
		{context.DeadlineExceeded, vector.ErrUnavailable},
		{errors.New("something new"), vector.ErrUnavailable},
		{fmt.Errorf("%w: wrong", vector.ErrDimension), vector.ErrPermanent},
	} {
		got := classify(tc.err)
		if !errors.Is(got, tc.want) || !errors.Is(got, tc.err) || got.Error() != tc.err.Error() {
			t.Errorf("classify(%v) = %v, want it marked %v and unchanged otherwise", tc.err, got, tc.want)
		}
		other := vector.ErrPermanent
		if tc.want == vector.ErrPermanent {
			other = vector.ErrUnavailable
		}
		if errors.Is(got, other) {
			t.Errorf("classify(%v) marked both", tc.err)
		}
	}
}

// Errors of real calls reach the caller classified.
func TestCallErrorsAreClassified(t *testing.T) {
	f, addr := startFake(t)
	s := openFake(t, f, addr)
	ctx := context.Background()
	f.failNext("Search", merr.WrapErrParameterInvalidMsg("cannot parse expression"))
	if _, err := s.Search(ctx, 1, []float32{1, 0, 0, 0}, 5, 0); !errors.Is(err, vector.ErrPermanent) {
		t.Errorf("invalid parameter: %v", err)
	}
	f.failNext("Delete", merr.WrapErrServiceNotReady("proxy", 1, "stopping"))
	if err := s.DeleteSite(ctx, 1); !errors.Is(err, vector.ErrUnavailable) {
		t.Errorf("service not ready: %v", err)
	}
	f.failNext("Query", merr.WrapErrPrivilegeNotPermitted("Query"))
	if _, err := s.Count(ctx); !errors.Is(err, vector.ErrPermanent) {
		t.Errorf("not permitted: %v", err)
	}
}

// A collection released by an operator (or after a query node restart) is
// loaded again and the call retried once, instead of failing every read.
func TestReleasedCollectionIsLoadedAgain(t *testing.T) {
	f, addr := startFake(t)
	s := openFake(t, f, addr)
	loads := f.called("LoadCollection")
	f.failNext("Search", merr.WrapErrCollectionNotLoaded("c"))
	if _, err := s.Search(context.Background(), 1, []float32{1, 0, 0, 0}, 5, 0); err != nil {
		t.Fatalf("search after a release: %v", err)
	}
	if got := f.called("LoadCollection") - loads; got != 1 {
		t.Errorf("%d loads after the release, want 1", got)
	}
	if got := f.called("Search"); got != 2 {
		t.Errorf("%d searches, want the failed one and its retry", got)
	}
	// Still released after the load: the error reaches the caller.
	f.failNext("Query", merr.WrapErrCollectionNotLoaded("c"))
	f.failNext("Query", merr.WrapErrCollectionNotLoaded("c"))
	if _, err := s.Count(context.Background()); err == nil {
		t.Error("a collection that stays released was reported counted")
	}
}

// A keyword query with no term (punctuation, emoji) finds nothing without
// asking Milvus, which refuses a full-text search with no tokens.
func TestKeywordSearchWithoutTerms(t *testing.T) {
	f, addr := startFake(t)
	s := openFake(t, f, addr)
	for _, q := range []string{"", "   ", "?!…", "🎉🎉 👍", "—/*-+", "how do I", "的"} {
		hits, err := s.KeywordSearch(context.Background(), 1, q, 10)
		if err != nil || len(hits) != 0 {
			t.Errorf("query %q: %v, %v", q, hits, err)
		}
	}
	if n := f.called("Search"); n != 0 {
		t.Errorf("%d searches sent for queries without terms", n)
	}
	if _, err := s.KeywordSearch(context.Background(), 1, "install", 10); err != nil {
		t.Fatal(err)
	}
	if n := f.called("Search"); n != 1 {
		t.Errorf("%d searches for a real query", n)
	}
}

// Reads are Strong unless the context allows stale reads, and every search
// filters on the site (the partition key).
func TestSearchRequests(t *testing.T) {
	f, addr := startFake(t)
	s := openFake(t, f, addr)
	ctx := context.Background()
	stale := vector.AllowStale(ctx)
	vec := []float32{1, 0, 0, 0}
	must := func(_ []vector.Hit, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Search(ctx, 3, vec, 5, 0))
	must(s.Search(stale, 3, vec, 5, 0))
	must(s.KeywordSearch(ctx, 3, "安装数据库", 5))
	must(s.KeywordSearch(stale, 3, "Restoring the Backups?", 5))
	want := []commonpb.ConsistencyLevel{commonpb.ConsistencyLevel_Strong, commonpb.ConsistencyLevel_Bounded,
		commonpb.ConsistencyLevel_Strong, commonpb.ConsistencyLevel_Bounded}
	for i, r := range f.searches {
		if r.GetConsistencyLevel() != want[i] || r.GetUseDefaultConsistency() {
			t.Errorf("search %d: consistency %v (default %v), want %v", i, r.GetConsistencyLevel(), r.GetUseDefaultConsistency(), want[i])
		}
		if r.GetDsl() != "site_id == 3" {
			t.Errorf("search %d: filter %q", i, r.GetDsl())
		}
		if anns := kvMap(r.GetSearchParams())["anns_field"]; anns != []string{fieldVector, fieldVector, fieldSparse, fieldSparse}[i] {
			t.Errorf("search %d: anns_field %q", i, anns)
		}
	}
	// The query text is the analyzer's terms, split by search_text's
	// whitespace analyzer exactly as the indexed terms were.
	for i, want := range map[int]string{2: strings.Join(analyze.Terms("安装数据库"), " "), 3: "restor backup"} {
		var pg commonpb.PlaceholderGroup
		if err := proto.Unmarshal(f.searches[i].GetPlaceholderGroup(), &pg); err != nil {
			t.Fatal(err)
		}
		ph := pg.GetPlaceholders()[0]
		if ph.GetType() != commonpb.PlaceholderType_VarChar || string(ph.GetValues()[0]) != want {
			t.Errorf("search %d: placeholder %v %q, want text %q", i, ph.GetType(), ph.GetValues(), want)
		}
	}
	if got := strings.Join(analyze.Terms("安装数据库"), " "); !strings.Contains(" "+got+" ", " 安装 ") || !strings.Contains(" "+got+" ", " 数据库 ") {
		t.Errorf("terms of the Chinese query: %q", got)
	}
	if _, err := s.Count(ctx); err != nil {
		t.Fatal(err)
	}
	if f.queries[0].GetConsistencyLevel() != commonpb.ConsistencyLevel_Strong {
		t.Errorf("count consistency %v", f.queries[0].GetConsistencyLevel())
	}
}

func fieldData(req *milvuspb.UpsertRequest, name string) *schemapb.FieldData {
	for _, fd := range req.GetFieldsData() {
		if fd.GetFieldName() == name {
			return fd
		}
	}
	return nil
}

// The rows sent: every field but the BM25 output, titles and headings cut
// to their limit on a rune boundary.
func TestUpsertRows(t *testing.T) {
	f, addr := startFake(t)
	var logged strings.Builder
	s, err := Open(context.Background(), Config{Address: addr, Collection: "c", Dimension: 4,
		Log: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	long := strings.Repeat("标题", maxTitleLen) // 6 bytes a repeat
	c := vector.Chunk{ID: "d1-v1-c0", SiteID: 2, DocumentID: 1, Version: 1, Title: long, Heading: "Install > Linux",
		Text: "Run the installer.", Vector: []float32{1, 0, 0, 0}}
	if err := s.Upsert(context.Background(), []vector.Chunk{c}); err != nil {
		t.Fatal(err)
	}
	req := f.upserts[0]
	if fieldData(req, fieldSparse) != nil {
		t.Error("the BM25 output field was sent")
	}
	title := fieldData(req, fieldTitle).GetScalars().GetStringData().GetData()[0]
	if len(title) > maxTitleLen || !utf8.ValidString(title) || !strings.HasPrefix(long, title) || len(title) < maxTitleLen-3 {
		t.Errorf("title of %d bytes, valid %v", len(title), utf8.ValidString(title))
	}
	if !strings.Contains(logged.String(), "field=title") || !strings.Contains(logged.String(), "chunk=d1-v1-c0") {
		t.Errorf("the cut title was not logged: %q", logged.String())
	}
	if got := fieldData(req, fieldSite).GetScalars().GetLongData().GetData(); fmt.Sprint(got) != "[2]" {
		t.Errorf("site_id %v", got)
	}
	if got := fieldData(req, fieldText).GetScalars().GetStringData().GetData(); got[0] != c.Text {
		t.Errorf("text %q", got)
	}

	// search_text holds the analyzer's terms of title, heading and text, so
	// a Chinese sentence is searchable by its words.
	c = vector.Chunk{ID: "d2-v1-c0", SiteID: 2, DocumentID: 2, Version: 1, Title: "Installing Node.js", Heading: "Setup > Linux",
		Text: "如何在服务器上安装数据库软件", Vector: []float32{0, 1, 0, 0}}
	if err := s.Upsert(context.Background(), []vector.Chunk{c}); err != nil {
		t.Fatal(err)
	}
	got := fieldData(f.upserts[1], fieldSearchText).GetScalars().GetStringData().GetData()[0]
	var want []string
	for _, part := range []string{c.Title, c.Heading, c.Text} {
		want = append(want, analyze.Terms(part)...)
	}
	if got != strings.Join(want, " ") {
		t.Errorf("search_text %q, want %q", got, strings.Join(want, " "))
	}
	for _, term := range []string{"instal", "node", "linux", "安装", "数据库", "服务器"} {
		if !slices.Contains(strings.Fields(got), term) {
			t.Errorf("search_text %q lacks %q", got, term)
		}
	}
}

// Terms over the field limit are cut at a term boundary.
func TestFitTerms(t *testing.T) {
	s := &Store{log: slog.New(slog.DiscardHandler)}
	terms := strings.TrimSpace(strings.Repeat("backup ", maxTextLen/7+100))
	got := s.fitTerms("x", terms)
	if len(got) > maxTextLen || len(got) < maxTextLen-7 || !strings.HasPrefix(terms, got) || strings.HasSuffix(got, " ") {
		t.Fatalf("cut to %d bytes, ending %q", len(got), got[len(got)-10:])
	}
	for _, w := range strings.Fields(got) {
		if w != "backup" {
			t.Fatalf("a term was split: %q", w)
		}
	}
	if s.fitTerms("x", "a b") != "a b" {
		t.Fatal("short terms changed")
	}
}

func TestClosedStore(t *testing.T) {
	f, addr := startFake(t)
	s := openFake(t, f, addr)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ctx := context.Background()
	chunk := vector.Chunk{ID: "a", SiteID: 1, DocumentID: 1, Vector: []float32{1, 0, 0, 0}}
	errs := []error{s.Upsert(ctx, []vector.Chunk{chunk}), s.DeleteDocument(ctx, 1), s.DeleteStaleVersions(ctx, 1, 1), s.DeleteSite(ctx, 1)}
	_, err := s.Search(ctx, 1, chunk.Vector, 5, 0)
	errs = append(errs, err)
	_, err = s.KeywordSearch(ctx, 1, "x", 5)
	errs = append(errs, err)
	_, err = s.Count(ctx)
	errs = append(errs, err)
	_, err = s.CountDocument(ctx, 1)
	errs = append(errs, err)
	for i, err := range errs {
		if !errors.Is(err, vector.ErrClosed) {
			t.Errorf("call %d after Close: %v, want ErrClosed", i, err)
		}
	}
}

func TestDimensions(t *testing.T) {
	f, addr := startFake(t)
	for _, name := range []string{"lore_chunks", "lore_chunks_768", "lore_chunks_1536", "lore_chunks_x", "lore_chunks_768_old", "other_384"} {
		f.addCollection(name, Schema(4).ProtoMessage(), nil)
	}
	dims, err := Dimensions(context.Background(), Config{Address: addr}, "lore_chunks", 256)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(dims) != "[256 768 1536]" {
		t.Fatalf("dimensions %v", dims)
	}
	if CollectionName("lore_chunks", 256, 256) != "lore_chunks" || CollectionName("lore_chunks", 768, 256) != "lore_chunks_768" {
		t.Fatal("collection names")
	}
}
