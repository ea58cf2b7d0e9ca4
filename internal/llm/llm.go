// Package llm defines the chat-model capability used by the agent loop.
//
// The agent runs each model turn as one Temporal activity; the activity calls
// [Model.Generate] and forwards the streamed [Delta] values to the client as
// they arrive. Implementations live in sub-packages: oai talks to any
// OpenAI-compatible server, extractive is a deterministic offline responder
// so that a fresh install without network access still has a working cited
// chat.
package llm

import (
	"context"
	"errors"
)

// Message roles, spelled as the OpenAI chat API spells them so that
// conversation history can be stored and replayed without translation.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Purpose values for [Request.Purpose]. They let a backend pick a different
// model or behaviour for summarisation than for answering.
const (
	// PurposeChat is an ordinary agent turn.
	PurposeChat = ""
	// PurposeSummarize asks for a summary of the conversation so far, used to
	// compact long histories; the caller builds the prompt.
	PurposeSummarize = "summarize"
)

// Finish reasons reported in [Result.FinishReason], using the OpenAI names
// because that is what compatible servers return.
const (
	FinishStop      = "stop"
	FinishToolCalls = "tool_calls"
	FinishLength    = "length"
)

// SearchToolName is the name of the knowledge-base search tool. It is shared
// here because both the agent (which implements the tool) and the extractive
// responder (which decides to call it) must agree on it.
const SearchToolName = "search_knowledge_base"

// ErrPermanent marks errors that retrying cannot fix (bad request, bad
// credentials, unknown model: HTTP 4xx other than 408 and 429). Backends wrap
// it so the activity can tell Temporal not to retry; test with errors.Is.
var ErrPermanent = errors.New("llm: permanent error")

// ToolCall is a complete tool invocation requested by the model. It is stored
// in the assistant message so the next turn can pair it with its tool result.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // JSON object text, as produced by the model
}

// Message is one entry of the conversation sent to the model. The JSON form
// is what the agent persists in workflow history, so the tags are stable.
type Message struct {
	Role       string     `json:"role"` // system|user|assistant|tool
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// ToolDef describes a tool the model may call, so the agent can offer its
// tools to any backend in one neutral shape.
type ToolDef struct {
	Name        string
	Description string
	Parameters  map[string]any // JSON schema of the arguments object
}

// Request is one model turn. Model overrides the backend's configured model
// when non-empty; a nil Temperature leaves the server default; MaxTokens
// bounds the answer (0: the server default), for short calls such as a
// connection test or generated document fields.
type Request struct {
	Model       string
	Messages    []Message
	Tools       []ToolDef
	Temperature *float64
	MaxTokens   int
	Purpose     string // PurposeChat or PurposeSummarize
}

// Delta is an incremental piece of the model output, delivered while the turn
// is still running so the user sees the answer being written. Exactly one of
// Text or ToolCall is set.
type Delta struct {
	Text     string
	ToolCall *ToolCallDelta
}

// ToolCallDelta is a partial tool call as streamed: pieces with the same
// Index belong to the same call and their Arguments concatenate. ID and Name
// are usually only present on the first piece.
type ToolCallDelta struct {
	Index     int
	ID        string
	Name      string
	Arguments string
}

// Usage counts tokens for billing and quota; backends that cannot measure it
// estimate it.
type Usage struct {
	InputTokens  int
	OutputTokens int
}

// Result is the outcome of a completed turn: the assistant message to append
// to the conversation, token usage and why generation stopped.
type Result struct {
	Message      Message
	Usage        Usage
	FinishReason string
}

// Model is the chat-model capability. Generate runs one turn, calling onDelta
// (which may be nil) for each piece of output in order, and returns the
// assembled message. Cancelling ctx must stop the call promptly, because the
// activity is cancelled when the user stops the chat.
type Model interface {
	Generate(ctx context.Context, req Request, onDelta func(Delta)) (Result, error)
}

// IsPermanentStatus reports whether an HTTP status code denotes a failure
// that retrying cannot fix: any 4xx except 408 (timeout) and 429 (rate limit).
// Backends share it so they classify errors the same way.
func IsPermanentStatus(code int) bool {
	return code >= 400 && code < 500 && code != 408 && code != 429
}

// EstimateTokens gives a rough token count (about four characters per token,
// at least one) for backends that do not report usage.
func EstimateTokens(s string) int {
	n := 0
	for range s {
		n++
	}
	n /= 4
	if n < 1 {
		n = 1
	}
	return n
}
