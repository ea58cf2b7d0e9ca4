package oai

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/tidwall/gjson"

	"github.com/lorekb/lore/internal/llm"
)

// A chat turn's request body and stream chunks are encoded and decoded here
// rather than through openai-go's param and response types: their
// reflection-driven codecs (apijson, nested MarshalJSON calls that re-compact
// the long tool results at every level) were a fifth of Lore's CPU per chat
// turn. openai-go still sends the request and splits the event stream.
// TestRequestBodyMatchesOpenAIGo and FuzzChunkMatchesOpenAIGo hold both
// sides to what openai-go does.

// chatRequest is the body of a streamed chat completion, its fields in the
// order openai-go writes them.
type chatRequest struct {
	Messages      []chatMessage `json:"messages,omitzero"`
	Model         string        `json:"model"`
	MaxTokens     int           `json:"max_tokens,omitempty"`
	Temperature   *float64      `json:"temperature,omitempty"`
	StreamOptions streamOptions `json:"stream_options"`
	Tools         []chatTool    `json:"tools,omitempty"`
	Stream        bool          `json:"stream"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// chatMessage is one message; nil pointers are fields the role leaves out.
type chatMessage struct {
	Content    *string        `json:"content,omitempty"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID *string        `json:"tool_call_id,omitempty"`
	Role       string         `json:"role"`
}

type chatToolCall struct {
	ID       string           `json:"id"`
	Function chatToolCallFunc `json:"function,omitzero"`
	Type     string           `json:"type"`
}

type chatToolCallFunc struct {
	Arguments string `json:"arguments"`
	Name      string `json:"name"`
}

type chatTool struct {
	Function chatFunction `json:"function"`
	Type     string       `json:"type"`
}

type chatFunction struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters,omitzero"`
}

// requestBody encodes req as the JSON body of a streamed chat completion.
func (m *Model) requestBody(req llm.Request) ([]byte, error) {
	model := m.model
	if req.Model != "" {
		model = req.Model
	}
	if model == "" {
		return nil, fmt.Errorf("oai: no model configured: %w", llm.ErrPermanent)
	}
	body := chatRequest{
		Model:         model,
		MaxTokens:     max(req.MaxTokens, 0),
		Temperature:   req.Temperature,
		StreamOptions: streamOptions{IncludeUsage: true},
		Stream:        true,
	}
	for i := range req.Messages {
		msg := &req.Messages[i]
		w := chatMessage{Role: msg.Role}
		switch msg.Role {
		case llm.RoleSystem, llm.RoleUser:
			w.Content = &msg.Content
		case llm.RoleTool:
			w.Content, w.ToolCallID = &msg.Content, &msg.ToolCallID
		case llm.RoleAssistant:
			if msg.Content != "" || len(msg.ToolCalls) == 0 {
				w.Content = &msg.Content
			}
			for _, tc := range msg.ToolCalls {
				w.ToolCalls = append(w.ToolCalls, chatToolCall{
					ID:       tc.ID,
					Function: chatToolCallFunc{Arguments: tc.Arguments, Name: tc.Name},
					Type:     "function",
				})
			}
		default:
			return nil, fmt.Errorf("oai: message %d: unknown role %q: %w", i, msg.Role, llm.ErrPermanent)
		}
		body.Messages = append(body.Messages, w)
	}
	for _, t := range req.Tools {
		body.Tools = append(body.Tools, chatTool{
			Function: chatFunction{Name: t.Name, Description: t.Description, Parameters: t.Parameters},
			Type:     "function",
		})
	}
	return json.Marshal(body)
}

// streamChunk is what Generate reads of one chat.completion.chunk. Its
// decoder reads the fields as openai-go's ChatCompletionChunk does (exact key
// names, the first of repeated keys, loose scalars, any non-null usage
// counts), without building the rest.
type streamChunk struct {
	choices  []streamChoice
	usage    llm.Usage
	hasUsage bool
}

type streamChoice struct {
	index     int64
	finish    string
	content   string
	toolCalls []streamToolCall
}

type streamToolCall struct {
	index               int64
	id, name, arguments string
}

// UnmarshalJSON decodes data, which encoding/json has already checked is
// valid JSON (ssestream.Stream decodes each event with json.Unmarshal).
func (c *streamChunk) UnmarshalJSON(data []byte) error {
	*c = streamChunk{}
	fields(gjson.ParseBytes(data), func(key string, v gjson.Result) {
		switch key {
		case "choices":
			c.choices = elems(v, decodeChoice)
		case "usage":
			c.hasUsage = v.Type != gjson.Null
			c.usage = llm.Usage{
				InputTokens:  int(member(v, "prompt_tokens").Int()),
				OutputTokens: int(member(v, "completion_tokens").Int()),
			}
		}
	})
	return nil
}

func decodeChoice(e gjson.Result) streamChoice {
	var ch streamChoice
	fields(e, func(key string, v gjson.Result) {
		switch key {
		case "index":
			ch.index = v.Int()
		case "finish_reason":
			ch.finish = v.String()
		case "delta":
			ch.content = member(v, "content").String()
			ch.toolCalls = elems(member(v, "tool_calls"), decodeToolCall)
		}
	})
	return ch
}

func decodeToolCall(e gjson.Result) streamToolCall {
	f := member(e, "function")
	return streamToolCall{
		index:     member(e, "index").Int(),
		id:        member(e, "id").String(),
		name:      member(f, "name").String(),
		arguments: member(f, "arguments").String(),
	}
}

// elems decodes each element of v, and none when v is not an array
// (openai-go leaves such a list empty).
func elems[T any](v gjson.Result, decode func(gjson.Result) T) []T {
	var out []T
	if v.IsArray() {
		v.ForEach(func(_, e gjson.Result) bool {
			out = append(out, decode(e))
			return true
		})
	}
	return out
}

// member is the first member of obj named key, missing (its String and Int
// "" and 0) when there is none or obj is not an object: what openai-go's
// decoder (gjson's Map) takes for a field.
func member(obj gjson.Result, key string) gjson.Result {
	var out gjson.Result
	if obj.IsObject() {
		obj.ForEach(func(k, v gjson.Result) bool {
			if k.Str == key {
				out = v
				return false
			}
			return true
		})
	}
	return out
}

// fields calls f for the first member of each key of obj, and for none when
// obj is not an object, as openai-go's decoder (gjson's Map) reads an
// object. A null member's String and Int are "" and 0: the zero value
// openai-go leaves for it.
func fields(obj gjson.Result, f func(key string, v gjson.Result)) {
	if !obj.IsObject() {
		return
	}
	var buf [8]string
	seen := buf[:0]
	obj.ForEach(func(k, v gjson.Result) bool {
		if !slices.Contains(seen, k.Str) {
			seen = append(seen, k.Str)
			f(k.Str, v)
		}
		return true
	})
}
