package milvus

import (
	"context"
	"net"
	"slices"
	"sync"
	"testing"

	"github.com/milvus-io/milvus-proto/go-api/v2/commonpb"
	"github.com/milvus-io/milvus-proto/go-api/v2/milvuspb"
	"github.com/milvus-io/milvus-proto/go-api/v2/schemapb"
	"github.com/milvus-io/milvus/pkg/v2/util/merr"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// fakeMilvus is a recording gRPC stand-in for the Milvus service: it keeps
// collections' schemas, properties, indexes and load state, records every
// write and search request, and answers reads with canned results. It does
// not search or store rows: it exists to check the requests this package
// sends and how it reacts to the answers, which is what can be proved
// without a server; behaviour is proved by the conformance suite against a
// real Milvus (TestConformance).
type fakeMilvus struct {
	milvuspb.UnimplementedMilvusServiceServer

	mu          sync.Mutex
	collections map[string]*fakeCollection
	calls       []string
	creates     []*milvuspb.CreateCollectionRequest
	indexes     []*milvuspb.CreateIndexRequest
	upserts     []*milvuspb.UpsertRequest
	deletes     []*milvuspb.DeleteRequest
	searches    []*milvuspb.SearchRequest
	queries     []*milvuspb.QueryRequest
	// fail holds statuses to answer the next calls of a method with.
	fail map[string][]error
	// results answers searches (empty results when nil).
	results *schemapb.SearchResultData
}

type fakeCollection struct {
	schema  *schemapb.CollectionSchema
	props   []*commonpb.KeyValuePair
	indexed []string                            // fields with an index
	names   map[string]string                   // field → index name, when the request named it
	params  map[string][]*commonpb.KeyValuePair // field → index parameters
	loaded  bool
}

// startFake serves a fakeMilvus on a loopback port and returns it with the
// address to pass to Open.
func startFake(t *testing.T) (*fakeMilvus, string) {
	t.Helper()
	f := &fakeMilvus{collections: map[string]*fakeCollection{}, fail: map[string][]error{}}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	milvuspb.RegisterMilvusServiceServer(srv, f)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return f, lis.Addr().String()
}

// addCollection records an existing collection, as a server would describe
// it: field IDs assigned, properties and indexes as given.
func (f *fakeMilvus) addCollection(name string, schema *schemapb.CollectionSchema, props map[string]string, indexed ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	schema.Name = name
	for i, fld := range schema.Fields {
		fld.FieldID = int64(100 + i)
	}
	var kv []*commonpb.KeyValuePair
	for k, v := range props {
		kv = append(kv, &commonpb.KeyValuePair{Key: k, Value: v})
	}
	c := &fakeCollection{schema: schema, props: kv, indexed: indexed, params: map[string][]*commonpb.KeyValuePair{}}
	// Existing indexes have the parameters this package asks for, as
	// those made by its earlier versions do.
	for _, opt := range indexOptions(name) {
		c.params[opt.Request().GetFieldName()] = opt.Request().GetExtraParams()
	}
	f.collections[name] = c
}

// setIndexParams replaces an existing index's parameters.
func (f *fakeMilvus) setIndexParams(collection, field string, params map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var kv []*commonpb.KeyValuePair
	for k, v := range params {
		kv = append(kv, &commonpb.KeyValuePair{Key: k, Value: v})
	}
	f.collections[collection].params[field] = kv
}

// failNext makes the next call of method answer err (a merr error).
func (f *fakeMilvus) failNext(method string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[method] = append(f.fail[method], err)
}

// enter records a call and returns the status it must answer with.
func (f *fakeMilvus) enter(method string) *commonpb.Status {
	f.calls = append(f.calls, method)
	if q := f.fail[method]; len(q) > 0 {
		f.fail[method] = q[1:]
		return merr.Status(q[0])
	}
	return merr.Success()
}

func (f *fakeMilvus) called(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c == method {
			n++
		}
	}
	return n
}

func (f *fakeMilvus) Connect(context.Context, *milvuspb.ConnectRequest) (*milvuspb.ConnectResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &milvuspb.ConnectResponse{Status: f.enter("Connect"), Identifier: 1}, nil
}

func (f *fakeMilvus) DescribeCollection(_ context.Context, req *milvuspb.DescribeCollectionRequest) (*milvuspb.DescribeCollectionResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.enter("DescribeCollection")
	c, ok := f.collections[req.GetCollectionName()]
	if !ok && merr.Ok(st) {
		st = merr.Status(merr.WrapErrCollectionNotFound(req.GetCollectionName()))
	}
	if !merr.Ok(st) {
		return &milvuspb.DescribeCollectionResponse{Status: st}, nil
	}
	return &milvuspb.DescribeCollectionResponse{Status: st, Schema: c.schema, Properties: c.props,
		CollectionName: req.GetCollectionName(), CollectionID: 1}, nil
}

func (f *fakeMilvus) CreateCollection(_ context.Context, req *milvuspb.CreateCollectionRequest) (*commonpb.Status, error) {
	f.mu.Lock()
	st := f.enter("CreateCollection")
	f.creates = append(f.creates, req)
	f.mu.Unlock()
	if !merr.Ok(st) {
		return st, nil
	}
	var sch schemapb.CollectionSchema
	if err := proto.Unmarshal(req.GetSchema(), &sch); err != nil {
		return merr.Status(merr.WrapErrParameterInvalidMsg("schema: %v", err)), nil
	}
	props := map[string]string{}
	for _, kv := range req.GetProperties() {
		props[kv.GetKey()] = kv.GetValue()
	}
	f.addCollection(req.GetCollectionName(), &sch, props)
	return st, nil
}

func (f *fakeMilvus) ShowCollections(context.Context, *milvuspb.ShowCollectionsRequest) (*milvuspb.ShowCollectionsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.enter("ShowCollections")
	var names []string
	for n := range f.collections {
		names = append(names, n)
	}
	slices.Sort(names)
	return &milvuspb.ShowCollectionsResponse{Status: st, CollectionNames: names}, nil
}

func (f *fakeMilvus) DescribeIndex(_ context.Context, req *milvuspb.DescribeIndexRequest) (*milvuspb.DescribeIndexResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.enter("DescribeIndex")
	c := f.collections[req.GetCollectionName()]
	if c == nil || len(c.indexed) == 0 {
		// What Milvus answers for a collection without any index.
		return &milvuspb.DescribeIndexResponse{Status: merr.Status(merr.WrapErrIndexNotFound(""))}, nil
	}
	resp := &milvuspb.DescribeIndexResponse{Status: st}
	for _, field := range c.indexed {
		name := c.names[field]
		if name == "" {
			name = "_default_idx_" + field // how older collections' indexes are named
		}
		resp.IndexDescriptions = append(resp.IndexDescriptions, &milvuspb.IndexDescription{
			IndexName: name, FieldName: field, State: commonpb.IndexState_Finished, Params: c.params[field]})
	}
	return resp, nil
}

func (f *fakeMilvus) CreateIndex(_ context.Context, req *milvuspb.CreateIndexRequest) (*commonpb.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.enter("CreateIndex")
	f.indexes = append(f.indexes, req)
	if c := f.collections[req.GetCollectionName()]; c != nil && merr.Ok(st) {
		c.indexed = append(c.indexed, req.GetFieldName())
		if c.names == nil {
			c.names = map[string]string{}
		}
		c.names[req.GetFieldName()] = req.GetIndexName()
		c.params[req.GetFieldName()] = req.GetExtraParams()
	}
	return st, nil
}

func (f *fakeMilvus) LoadCollection(_ context.Context, req *milvuspb.LoadCollectionRequest) (*commonpb.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.enter("LoadCollection")
	if c := f.collections[req.GetCollectionName()]; c != nil && merr.Ok(st) {
		c.loaded = true
	}
	return st, nil
}

func (f *fakeMilvus) GetLoadingProgress(context.Context, *milvuspb.GetLoadingProgressRequest) (*milvuspb.GetLoadingProgressResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &milvuspb.GetLoadingProgressResponse{Status: f.enter("GetLoadingProgress"), Progress: 100, RefreshProgress: 100}, nil
}

func (f *fakeMilvus) DropCollection(_ context.Context, req *milvuspb.DropCollectionRequest) (*commonpb.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.collections, req.GetCollectionName())
	return f.enter("DropCollection"), nil
}

func (f *fakeMilvus) Upsert(_ context.Context, req *milvuspb.UpsertRequest) (*milvuspb.MutationResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.upserts = append(f.upserts, req)
	return &milvuspb.MutationResult{Status: f.enter("Upsert"), UpsertCnt: int64(req.GetNumRows())}, nil
}

func (f *fakeMilvus) Delete(_ context.Context, req *milvuspb.DeleteRequest) (*milvuspb.MutationResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deletes = append(f.deletes, req)
	return &milvuspb.MutationResult{Status: f.enter("Delete")}, nil
}

func (f *fakeMilvus) Search(_ context.Context, req *milvuspb.SearchRequest) (*milvuspb.SearchResults, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.searches = append(f.searches, req)
	res := f.results
	if res == nil {
		res = &schemapb.SearchResultData{NumQueries: 1, Topks: []int64{0}}
	}
	return &milvuspb.SearchResults{Status: f.enter("Search"), Results: res, CollectionName: req.GetCollectionName()}, nil
}

func (f *fakeMilvus) Query(_ context.Context, req *milvuspb.QueryRequest) (*milvuspb.QueryResults, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queries = append(f.queries, req)
	count := &schemapb.FieldData{Type: schemapb.DataType_Int64, FieldName: "count(*)",
		Field: &schemapb.FieldData_Scalars{Scalars: &schemapb.ScalarField{Data: &schemapb.ScalarField_LongData{
			LongData: &schemapb.LongArray{Data: []int64{7}}}}}}
	return &milvuspb.QueryResults{Status: f.enter("Query"), FieldsData: []*schemapb.FieldData{count},
		OutputFields: []string{"count(*)"}, CollectionName: req.GetCollectionName()}, nil
}
