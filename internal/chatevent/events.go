// Package chatevent declares every event a chat turn sends its client
// (WIRE.md §3, the Responses-style stream): one struct per type and one
// encoder. The chat run (workflows), its model calls (activities) and the
// API build events only through this file, and read them only through
// Parse, so the wire shape of an event is written down once.
package chatevent

import (
	"bytes"
	"encoding/json"
)

// Type is the "type" of an event.
type Type string

// The event types, in the order a turn sends them (tool and text events
// interleave).
const (
	TypeCreated           Type = "response.created"
	TypeToolCallStarted   Type = "response.tool_call.started"
	TypeToolCallDelta     Type = "response.tool_call.delta"
	TypeToolCallCompleted Type = "response.tool_call.completed"
	TypeTextDelta         Type = "response.output_text.delta"
	TypeKnowledgeSources  Type = "response.knowledge_sources"
	TypePipelineTrace     Type = "response.pipeline_trace"
	TypeCompleted         Type = "response.completed"
	// TypeError ends a stream whose setup failed (never a model or runtime
	// failure: those end with a notice in a text delta and Completed).
	TypeError Type = "response.error"
)

// Event is one of the event structs of this file.
type Event interface{ Type() Type }

// Response is the response object of Created and Completed.
type Response struct {
	ID     string `json:"id"` // the thread id
	Object string `json:"object"`
	Status string `json:"status"`
	Usage  *Usage `json:"usage,omitempty"` // Completed only
}

// Usage is the token usage of a turn.
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// NewUsage fills TotalTokens.
func NewUsage(in, out int) Usage {
	return Usage{InputTokens: in, OutputTokens: out, TotalTokens: in + out}
}

// Created opens every stream: the turn is stored, its thread id is known.
type Created struct {
	Response Response `json:"response"`
}

// NewCreated is the first event of the turn of a thread.
func NewCreated(threadID string) Created {
	return Created{Response: Response{ID: threadID, Object: "response", Status: "in_progress"}}
}

// ToolCallStarted: the model began a tool call.
type ToolCallStarted struct {
	Tool string `json:"tool"`
}

// ToolCallDelta is a piece of a tool call as the model streams it.
type ToolCallDelta struct {
	ToolCall ToolCallPiece `json:"tool_call"`
}

// ToolCallPiece is the OpenAI-style piece of a streamed tool call.
type ToolCallPiece struct {
	Index    int           `json:"index"`
	ID       string        `json:"id,omitempty"`
	Type     string        `json:"type,omitempty"` // "function" with ID
	Function FunctionPiece `json:"function"`
}

// FunctionPiece is the function part of a ToolCallPiece.
type FunctionPiece struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
}

// ToolCallCompleted: a tool call finished; ElapsedMS only with the site's
// pipeline trace on.
type ToolCallCompleted struct {
	Tool       string `json:"tool"`
	ToolCallID string `json:"tool_call_id"`
	ChunkCount int    `json:"chunk_count"`
	ElapsedMS  *int64 `json:"elapsed_ms,omitempty"`
}

// TextDelta appends streamed answer text (never empty). Notices (timeout,
// system error) are text deltas too.
type TextDelta struct {
	Delta string `json:"delta"`
}

// KnowledgeSources lists the documents the answer cites, by source number.
type KnowledgeSources struct {
	Sources []Source `json:"sources"`
}

// Source is one cited document, as the stored final message shows it too.
type Source struct {
	ID          string  `json:"id"`
	Title       string  `json:"title"`
	SiteID      int64   `json:"siteId"`
	DocumentID  int64   `json:"documentId"`
	Score       float64 `json:"score"` // the passage's support for the search query, 0..1
	SourceIndex int     `json:"sourceIndex"`
	// Related marks a document the search found that the answer does not
	// cite: offered as related reading, not as support for the answer.
	Related bool `json:"related,omitempty"`
	// Revision is the document revision the answer quoted (its content
	// version then); the stored conversation compares it with the current
	// one (changed_since).
	Revision int64 `json:"revision,omitempty"`
	// Section is the heading of the passage's best fragment (the last part
	// of its heading path): where on the page a citation opens.
	Section string `json:"section,omitempty"`
}

// PipelineTrace is the turn's timing, with the site's pipeline trace on.
type PipelineTrace struct {
	Trace Trace `json:"trace"`
}

// Trace is milliseconds from the request: to the first streamed piece, to
// the first answer text, to the end.
type Trace struct {
	TTFB       float64 `json:"ttfb"`
	FirstToken float64 `json:"first_token"`
	Total      float64 `json:"total"`
}

// Completed ends every turn that started, with its usage.
type Completed struct {
	Response Response `json:"response"`
}

// NewCompleted is the last event of the turn of a thread.
func NewCompleted(threadID string, u Usage) Completed {
	return Completed{Response: Response{ID: threadID, Object: "response", Status: "completed", Usage: &u}}
}

// Error ends a stream whose setup failed.
type Error struct {
	Error string `json:"error"`
}

// Type implements Event.
func (Created) Type() Type { return TypeCreated }

// Type implements Event.
func (ToolCallStarted) Type() Type { return TypeToolCallStarted }

// Type implements Event.
func (ToolCallDelta) Type() Type { return TypeToolCallDelta }

// Type implements Event.
func (ToolCallCompleted) Type() Type { return TypeToolCallCompleted }

// Type implements Event.
func (TextDelta) Type() Type { return TypeTextDelta }

// Type implements Event.
func (KnowledgeSources) Type() Type { return TypeKnowledgeSources }

// Type implements Event.
func (PipelineTrace) Type() Type { return TypePipelineTrace }

// Type implements Event.
func (Completed) Type() Type { return TypeCompleted }

// Type implements Event.
func (Error) Type() Type { return TypeError }

// Encode is the SSE payload of an event: its fields with "type" first.
func Encode(e Event) json.RawMessage {
	body, _ := json.Marshal(e) // plain structs: cannot fail
	typ, _ := json.Marshal(e.Type())
	out := make([]byte, 0, len(body)+len(typ)+9)
	out = append(out, `{"type":`...)
	out = append(out, typ...)
	if len(body) > 2 {
		out = append(out, ',')
	}
	return append(out, body[1:]...)
}

// Parsed is what readers of the log need from an encoded event.
type Parsed struct {
	Type     Type   `json:"type"`
	Delta    string `json:"delta"`
	Response struct {
		Usage *Usage `json:"usage"`
	} `json:"response"`
	Sources []Source `json:"sources"` // of a knowledge_sources event
}

// Parse reads an encoded event (a payload that is not one has no Type).
func Parse(data []byte) Parsed {
	var p Parsed
	_ = json.Unmarshal(data, &p)
	return p
}

// typePrefix starts every payload Encode writes.
const typePrefix = `{"type":"`

// TypeOf is Parse(data).Type without decoding the event: every reader of a
// turn looks at the type of each of its events (most are text deltas), and
// Encode writes it first. A payload written otherwise is parsed.
func TypeOf(data []byte) Type {
	if rest, ok := bytes.CutPrefix(data, []byte(typePrefix)); ok {
		if i := bytes.IndexByte(rest, '"'); i >= 0 && bytes.IndexByte(rest[:i], '\\') < 0 {
			return Type(rest[:i])
		}
	}
	return Parse(data).Type
}

// textPrefix starts the payload Encode writes for a TextDelta.
const textPrefix = typePrefix + string(TypeTextDelta) + `","delta":`

// TextOf returns the text of a text delta event (ok false for any other
// event), decoding only its one string field; the same as Parse for any
// payload.
func TextOf(data []byte) (string, bool) {
	if rest, ok := bytes.CutPrefix(data, []byte(textPrefix)); ok {
		var s string
		if rest, ok = bytes.CutSuffix(rest, []byte("}")); ok && json.Unmarshal(rest, &s) == nil {
			return s, true
		}
	}
	if p := Parse(data); p.Type == TypeTextDelta {
		return p.Delta, true
	}
	return "", false
}
