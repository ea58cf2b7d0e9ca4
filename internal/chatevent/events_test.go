package chatevent

import (
	"testing"
)

// The wire shape of every event (WIRE.md §3): "type" first, then the fields
// in their documented names; optional fields absent when unset.
func TestEncodeWritesTheWireShape(t *testing.T) {
	ms := int64(12)
	for _, tc := range []struct {
		ev   Event
		want string
	}{
		{NewCreated("auto-1"), `{"type":"response.created","response":{"id":"auto-1","object":"response","status":"in_progress"}}`},
		{ToolCallStarted{Tool: "search_knowledge_base"}, `{"type":"response.tool_call.started","tool":"search_knowledge_base"}`},
		{ToolCallDelta{ToolCall: ToolCallPiece{Index: 0, ID: "c1", Type: "function", Function: FunctionPiece{Name: "s"}}},
			`{"type":"response.tool_call.delta","tool_call":{"index":0,"id":"c1","type":"function","function":{"name":"s"}}}`},
		{ToolCallDelta{ToolCall: ToolCallPiece{Index: 1, Function: FunctionPiece{Arguments: `{"q"`}}},
			`{"type":"response.tool_call.delta","tool_call":{"index":1,"function":{"arguments":"{\"q\""}}}`},
		{ToolCallCompleted{Tool: "t", ToolCallID: "c1", ChunkCount: 3}, `{"type":"response.tool_call.completed","tool":"t","tool_call_id":"c1","chunk_count":3}`},
		{ToolCallCompleted{Tool: "t", ToolCallID: "c1", ElapsedMS: &ms}, `{"type":"response.tool_call.completed","tool":"t","tool_call_id":"c1","chunk_count":0,"elapsed_ms":12}`},
		{TextDelta{Delta: "Hi"}, `{"type":"response.output_text.delta","delta":"Hi"}`},
		{KnowledgeSources{Sources: []Source{{ID: "4", Title: "T", SiteID: 1, DocumentID: 4, Score: 0.5, SourceIndex: 2}}},
			`{"type":"response.knowledge_sources","sources":[{"id":"4","title":"T","siteId":1,"documentId":4,"score":0.5,"sourceIndex":2}]}`},
		{PipelineTrace{Trace: Trace{TTFB: 1, FirstToken: 2, Total: 3}}, `{"type":"response.pipeline_trace","trace":{"ttfb":1,"first_token":2,"total":3}}`},
		{NewCompleted("auto-1", NewUsage(5, 2)),
			`{"type":"response.completed","response":{"id":"auto-1","object":"response","status":"completed","usage":{"input_tokens":5,"output_tokens":2,"total_tokens":7}}}`},
		{Error{Error: "no model"}, `{"type":"response.error","error":"no model"}`},
	} {
		if got := string(Encode(tc.ev)); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.ev.Type(), got, tc.want)
		}
	}
}

func TestParseReadsTypeDeltaAndUsage(t *testing.T) {
	p := Parse(Encode(TextDelta{Delta: "x"}))
	if p.Type != TypeTextDelta || p.Delta != "x" {
		t.Fatalf("%+v", p)
	}
	p = Parse(Encode(NewCompleted("a", NewUsage(1, 2))))
	if p.Type != TypeCompleted || p.Response.Usage == nil || p.Response.Usage.TotalTokens != 3 {
		t.Fatalf("%+v", p)
	}
	if Parse([]byte("not json")).Type != "" {
		t.Fatal("garbage parsed")
	}
}

// TypeOf and TextOf read what Parse reads, from every encoded event and
// from payloads Encode does not write.
func TestTypeOfAndTextOfAgreeWithParse(t *testing.T) {
	payloads := [][]byte{
		Encode(NewCreated("auto-1")), Encode(ToolCallStarted{Tool: "t"}), Encode(TextDelta{Delta: "Hi"}),
		Encode(TextDelta{Delta: "a \"quoted\" } brace\n"}), Encode(TextDelta{Delta: "日本"}),
		Encode(NewCompleted("a", NewUsage(1, 2))), Encode(Error{Error: "x"}),
		[]byte(`{"delta":"late","type":"response.output_text.delta"}`),
		[]byte(`{"type":"response.output_text.delta","delta":"x","extra":1}`),
		[]byte(`{"type":"respo\u006ese.created"}`), []byte("not json"), nil,
	}
	for _, b := range payloads {
		p := Parse(b)
		if got := TypeOf(b); got != p.Type {
			t.Errorf("TypeOf(%s) = %q, Parse says %q", b, got, p.Type)
		}
		text, ok := TextOf(b)
		if ok != (p.Type == TypeTextDelta) || text != p.Delta && ok {
			t.Errorf("TextOf(%s) = %q, %v; Parse says %+v", b, text, ok, p)
		}
	}
}
