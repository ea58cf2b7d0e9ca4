package oai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/packages/param"

	"github.com/lorekb/lore/internal/llm"
)

// openAIParams is the request as openai-go's own types build it, the
// reference requestBody is held to.
func openAIParams(model string, req llm.Request) openai.ChatCompletionNewParams {
	if req.Model != "" {
		model = req.Model
	}
	params := openai.ChatCompletionNewParams{
		Model:         model,
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)},
	}
	if req.Temperature != nil {
		params.Temperature = param.NewOpt(*req.Temperature)
	}
	if req.MaxTokens > 0 {
		params.MaxTokens = param.NewOpt(int64(req.MaxTokens))
	}
	for _, msg := range req.Messages {
		var p openai.ChatCompletionMessageParamUnion
		switch msg.Role {
		case llm.RoleSystem:
			p = openai.SystemMessage(msg.Content)
		case llm.RoleUser:
			p = openai.UserMessage(msg.Content)
		case llm.RoleTool:
			p = openai.ToolMessage(msg.Content, msg.ToolCallID)
		case llm.RoleAssistant:
			var a openai.ChatCompletionAssistantMessageParam
			if msg.Content != "" || len(msg.ToolCalls) == 0 {
				a.Content.OfString = param.NewOpt(msg.Content)
			}
			for _, tc := range msg.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallParam{
					ID:       tc.ID,
					Function: openai.ChatCompletionMessageToolCallFunctionParam{Name: tc.Name, Arguments: tc.Arguments},
				})
			}
			p = openai.ChatCompletionMessageParamUnion{OfAssistant: &a}
		}
		params.Messages = append(params.Messages, p)
	}
	for _, t := range req.Tools {
		fn := openai.FunctionDefinitionParam{Name: t.Name}
		if t.Description != "" {
			fn.Description = param.NewOpt(t.Description)
		}
		if t.Parameters != nil {
			fn.Parameters = openai.FunctionParameters(t.Parameters)
		}
		params.Tools = append(params.Tools, openai.ChatCompletionToolParam{Function: fn})
	}
	return params
}

// The body Generate sends is byte for byte the one openai-go's
// Chat.Completions.NewStreaming sends for the same request.
func TestRequestBodyMatchesOpenAIGo(t *testing.T) {
	var got [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, b)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	m := New(Config{BaseURL: srv.URL, Model: "default"})
	zero, temp := 0.0, 0.7
	long := strings.Repeat("passage text <b>&amp;</b> \"quoted\" \\ \t\n", 200)
	reqs := []llm.Request{
		{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}},
		{Model: "override", Temperature: &temp, MaxTokens: 64, Purpose: llm.PurposeSummarize, Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "sys <&> \u2028\u2029 é 日本 \x00 \x7f"},
			{Role: llm.RoleUser, Content: "bad utf-8 \xff\xfe here"},
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_1", Name: llm.SearchToolName, Arguments: `{"query":"x"}`}}},
			{Role: llm.RoleTool, ToolCallID: "call_1", Content: long},
			{Role: llm.RoleAssistant, Content: "both", ToolCalls: []llm.ToolCall{{ID: "a"}, {Name: "n", Arguments: "{"}}},
			{Role: llm.RoleAssistant},
			{Role: llm.RoleTool},
			{Role: llm.RoleSystem},
			{Role: llm.RoleUser, Content: "again"},
		}, Tools: []llm.ToolDef{
			{Name: llm.SearchToolName, Description: "Search <docs>", Parameters: map[string]any{
				"type":       "object",
				"properties": map[string]any{"query": map[string]any{"type": "string", "description": "a & b"}},
				"required":   []string{"query"},
			}},
			{Name: "bare"},
			{Name: "empty", Parameters: map[string]any{}},
		}},
		{Temperature: &zero, MaxTokens: -1, Messages: []llm.Message{{Role: llm.RoleUser, Content: ""}}},
		{Messages: nil},
	}
	for i, req := range reqs {
		got = nil
		if _, err := m.Generate(context.Background(), req, nil); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		stream := m.client.Chat.Completions.NewStreaming(context.Background(), openAIParams(m.model, req))
		for stream.Next() {
		}
		if err := stream.Err(); err != nil {
			t.Fatalf("request %d through openai-go: %v", i, err)
		}
		stream.Close()
		if len(got) != 2 {
			t.Fatalf("request %d: server saw %d requests", i, len(got))
		}
		if !bytes.Equal(got[0], got[1]) {
			t.Errorf("request %d: body\n%s\nopenai-go sends\n%s", i, got[0], got[1])
		}
	}
}

// decodeOpenAI is what Generate read of a chunk when it decoded chunks as
// openai-go's ChatCompletionChunk.
func decodeOpenAI(data []byte) (streamChunk, error) {
	var ch openai.ChatCompletionChunk
	if err := json.Unmarshal(data, &ch); err != nil {
		return streamChunk{}, err
	}
	out := streamChunk{hasUsage: ch.JSON.Usage.Valid()}
	if out.hasUsage {
		out.usage = llm.Usage{InputTokens: int(ch.Usage.PromptTokens), OutputTokens: int(ch.Usage.CompletionTokens)}
	}
	for _, c := range ch.Choices {
		sc := streamChoice{index: c.Index, finish: c.FinishReason, content: c.Delta.Content}
		for _, tc := range c.Delta.ToolCalls {
			sc.toolCalls = append(sc.toolCalls, streamToolCall{index: tc.Index, id: tc.ID, name: tc.Function.Name, arguments: tc.Function.Arguments})
		}
		out.choices = append(out.choices, sc)
	}
	return out, nil
}

func decodeLore(data []byte) (streamChunk, error) {
	var ch streamChunk
	err := json.Unmarshal(data, &ch)
	return ch, err
}

// equalChunks compares decoded chunks, an empty list of choices or tool
// calls equal to none (Generate cannot tell them apart).
func equalChunks(a, b streamChunk) bool {
	norm := func(c streamChunk) streamChunk {
		if len(c.choices) == 0 {
			c.choices = nil
		}
		for i := range c.choices {
			if len(c.choices[i].toolCalls) == 0 {
				c.choices[i].toolCalls = nil
			}
		}
		return c
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

var chunkSeeds = []string{
	`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"},"finish_reason":null}],"usage":null}`,
	`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":42,"completion_tokens":7,"total_tokens":49}}`,
	`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"search_knowledge_base","arguments":"{\"query\""}}]},"finish_reason":null,"logprobs":null}],"system_fingerprint":"fp","service_tier":"default","obfuscation":"xyz"}`,
	`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
	`{"choices":[{"index":1,"delta":{"content":"other choice"}},{"index":0,"delta":{"content":"\u65e5\u672c \ud83d\ude00 \ud800 \"q\" \\ \/ \b\f\n\r\t"}}]}`,
	`{"choices":"nope","usage":5}`,
	`{"choices":[null,1,"x",[],{"index":"2","delta":"s","finish_reason":7}]}`,
	`{"choices":[{"index":1.0,"finish_reason":true,"delta":{"content":12.50,"tool_calls":{"index":0}}}]}`,
	`{"choices":[{"index":3e0,"delta":{"content":{"a":1},"tool_calls":[{"index":true,"id":false,"function":{"name":["x"],"arguments":null}}]}}]}`,
	`{"choices":[{"index":0,"delta":{"content":"a","content":null}}],"choices":[{"index":0,"delta":{"content":"b"}}]}`,
	`{"usage":{"prompt_tokens":1},"usage":null}`,
	`{"usage":{"prompt_tokens":"12","completion_tokens":-3.7}}`,
	`{"\u0063hoices":[{"index":0,"delta":{"Content":"case","conte\u006et":"escaped key"}}]}`,
	`{"choices":[{"index":9999999999999999999,"delta":{"content":"big"}},{"index":-0,"delta":{"content":"neg zero"}}]}`,
	`{"choices":[{"index":0,"delta":{"content":"bad utf-8 ` + "\xff\xfe" + `"}}]}`,
	` { "choices" : [ { "index" : 0 , "delta" : { "content" : "spaced" } } ] } `,
	`[1,2]`, `"text"`, `null`, `12`, `{}`, `{"error":null}`,
	`{"choices":[{"index":0,"delta":{"content":"x"}}]`, `{"choices":[{"index":0,"delta":{"content":"x"}}]}}`, ``,
}

// Each chunk decodes to what openai-go's decoder made of it, errors included.
func TestChunkMatchesOpenAIGo(t *testing.T) {
	for _, s := range chunkSeeds {
		checkChunk(t, []byte(s))
	}
}

func FuzzChunkMatchesOpenAIGo(f *testing.F) {
	for _, s := range chunkSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkChunk)
}

func checkChunk(t *testing.T, data []byte) {
	want, wantErr := decodeOpenAI(data)
	got, gotErr := decodeLore(data)
	if (wantErr == nil) != (gotErr == nil) {
		t.Fatalf("%q: err %v, openai-go %v", data, gotErr, wantErr)
	}
	if !equalChunks(got, want) {
		t.Errorf("%q:\n got %+v\nwant %+v", data, got, want)
	}
}

// Old and new decoding side by side: go test -bench Chunk ./internal/llm/oai/
func BenchmarkChunk(b *testing.B) {
	data := []byte(chunkSeeds[0])
	for _, d := range []struct {
		name string
		fn   func([]byte) (streamChunk, error)
	}{{"openai-go", decodeOpenAI}, {"lore", decodeLore}} {
		b.Run(d.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.fn(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Old and new request encoding side by side, on a request the size of a
// chat turn's answer call (system prompt, question, tool call, results).
func BenchmarkRequestBody(b *testing.B) {
	m := New(Config{Model: "m"})
	req := llm.Request{Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: strings.Repeat("Answer from the passages and cite them. ", 30)},
		{Role: llm.RoleUser, Content: "How do I install and upgrade it?"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_1", Name: llm.SearchToolName, Arguments: `{"query":"install and upgrade"}`}}},
		{Role: llm.RoleTool, ToolCallID: "call_1", Content: strings.Repeat(fmt.Sprintf("[%d] Title > Heading\nSome passage text about apt-get, \"quotes\" and <tags>.\n", 1), 120)},
	}, Tools: []llm.ToolDef{{Name: llm.SearchToolName, Description: "Search the docs", Parameters: map[string]any{
		"type": "object", "properties": map[string]any{"query": map[string]any{"type": "string"}}, "required": []string{"query"},
	}}}}
	b.Run("openai-go", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := openAIParams(m.model, req).MarshalJSON(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("lore", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := m.requestBody(req); err != nil {
				b.Fatal(err)
			}
		}
	})
}
