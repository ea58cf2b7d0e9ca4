// Package oai implements [llm.Model] on any OpenAI-compatible chat
// completions server (OpenAI, vLLM, Ollama, LiteLLM, ...).
//
// Each Generate call is one streaming request to /chat/completions. Retries
// are left to Temporal, which already retries the activity, so there are
// none here. The request and the streamed chunks are plain structs encoded
// with encoding/json: a chat turn makes two calls, and the SDK this package
// used before (openai-go) spent about a tenth of lore's CPU per turn building
// its request and decoding the chunks, for a protocol this small.
package oai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/lorekb/lore/internal/llm"
)

// defaultBaseURL is OpenAI's API root, used when Config.BaseURL is empty.
const defaultBaseURL = "https://api.openai.com/v1"

// maxLine bounds one line of the event stream (a chunk's JSON): a server
// cannot make the client buffer without limit.
const maxLine = 4 << 20

// Config selects the server and model. BaseURL is the API root including any
// version path (e.g. "https://api.openai.com/v1" or "http://vllm:8000/v1");
// empty means OpenAI. An empty APIKey sends no Authorization header, which
// suits local servers. HTTPClient is optional.
type Config struct {
	BaseURL    string
	APIKey     string
	Model      string
	HTTPClient *http.Client
}

// Model is an [llm.Model] backed by an OpenAI-compatible server.
type Model struct {
	http  *http.Client
	url   string // BaseURL + /chat/completions
	key   string
	model string
}

var _ llm.Model = (*Model)(nil)

// New builds a Model from cfg. Settings come only from cfg, never from
// OPENAI_* environment variables, so that the key for one server is not sent
// to another by accident.
func New(cfg Config) *Model {
	base := strings.TrimRight(cfg.BaseURL, "/")
	if base == "" {
		base = defaultBaseURL
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Model{http: hc, url: base + "/chat/completions", key: cfg.APIKey, model: cfg.Model}
}

// Generate streams one chat completion. Text and tool-call pieces are passed
// to onDelta as they arrive; tool-call pieces are also accumulated by index
// into the returned message. HTTP 4xx errors other than 408/429 wrap
// [llm.ErrPermanent]; an error event in the stream is retryable.
func (m *Model) Generate(ctx context.Context, req llm.Request, onDelta func(llm.Delta)) (llm.Result, error) {
	if err := ctx.Err(); err != nil {
		return llm.Result{}, err
	}
	body, err := m.buildRequest(req)
	if err != nil {
		return llm.Result{}, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, m.url, bytes.NewReader(body))
	if err != nil {
		return llm.Result{}, fmt.Errorf("oai: %w: %w", llm.ErrPermanent, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	if m.key != "" {
		hreq.Header.Set("Authorization", "Bearer "+m.key)
	}
	res, err := m.http.Do(hreq)
	if err != nil {
		return llm.Result{}, classify(ctx, err)
	}
	defer res.Body.Close()
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return llm.Result{}, statusError(ctx, res)
	}

	var (
		content strings.Builder
		calls   = map[int]*llm.ToolCall{}
		usage   llm.Usage
		finish  string
	)
	err = readEvents(res.Body, func(data []byte) error {
		var c streamChunk
		if err := json.Unmarshal(data, &c); err != nil {
			return fmt.Errorf("decode a streamed chunk: %w", err)
		}
		if len(c.Error) > 0 && string(c.Error) != "null" {
			return fmt.Errorf("received error while streaming: %s", errorText(c.Error))
		}
		if c.Usage != nil {
			usage = llm.Usage{InputTokens: c.Usage.PromptTokens, OutputTokens: c.Usage.CompletionTokens}
		}
		for _, choice := range c.Choices {
			if choice.Index != 0 {
				continue // only one choice is requested
			}
			if choice.FinishReason != "" {
				finish = choice.FinishReason
			}
			if text := choice.Delta.Content; text != "" {
				content.WriteString(text)
				if onDelta != nil {
					onDelta(llm.Delta{Text: text})
				}
			}
			for _, tc := range choice.Delta.ToolCalls {
				call := calls[tc.Index]
				if call == nil {
					call = &llm.ToolCall{}
					calls[tc.Index] = call
				}
				if tc.ID != "" {
					call.ID = tc.ID
				}
				// Some servers repeat the name on every piece, others send
				// it once; only append when it is not a repeat.
				if tc.Function.Name != "" && tc.Function.Name != call.Name {
					call.Name += tc.Function.Name
				}
				call.Arguments += tc.Function.Arguments
				if onDelta != nil {
					onDelta(llm.Delta{ToolCall: &llm.ToolCallDelta{Index: tc.Index, ID: tc.ID,
						Name: tc.Function.Name, Arguments: tc.Function.Arguments}})
				}
			}
		}
		return nil
	})
	if err != nil {
		return llm.Result{}, classify(ctx, err)
	}
	if err := ctx.Err(); err != nil {
		return llm.Result{}, err
	}

	msg := llm.Message{Role: llm.RoleAssistant, Content: content.String()}
	indexes := make([]int, 0, len(calls))
	for i := range calls {
		indexes = append(indexes, i)
	}
	sort.Ints(indexes)
	for _, i := range indexes {
		msg.ToolCalls = append(msg.ToolCalls, *calls[i])
	}
	if finish == "" {
		finish = llm.FinishStop
		if len(msg.ToolCalls) > 0 {
			finish = llm.FinishToolCalls
		}
	}
	return llm.Result{Message: msg, Usage: usage, FinishReason: finish}, nil
}

// streamChunk is one streamed chat.completion.chunk (only the fields Lore reads),
// or an error event.
type streamChunk struct {
	Choices []struct {
		Index        int    `json:"index"`
		FinishReason string `json:"finish_reason"`
		Delta        struct {
			Content   string `json:"content"`
			ToolCalls []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// errDone ends readEvents at the stream's [DONE].
var errDone = errors.New("done")

// readEvents calls onData with the data of each server-sent event of r (the
// data lines of one event joined by newlines) until [DONE] or the end of the
// stream. Comments, event names and ids are ignored: the chat stream does
// not use them.
func readEvents(r io.Reader, onData func([]byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4<<10), maxLine) // a chunk is a few hundred bytes
	var data []byte
	dispatch := func() error {
		if len(data) == 0 {
			return nil
		}
		defer func() { data = data[:0] }()
		if bytes.HasPrefix(data, []byte("[DONE]")) {
			return errDone
		}
		return onData(data)
	}
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if err := dispatch(); err != nil {
				return ignoreDone(err)
			}
			continue
		}
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			v, _ = bytes.CutPrefix(v, []byte(" "))
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, v...)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return ignoreDone(dispatch())
}

func ignoreDone(err error) error {
	if errors.Is(err, errDone) {
		return nil
	}
	return err
}

// errorText is the message of an API error value: {"message": ...} or a
// plain string; otherwise its JSON.
func errorText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &o) == nil && o.Message != "" {
		return o.Message
	}
	return string(raw)
}

// statusError is the error of a non-2xx response, with the server's message
// (at most 1 KB of it): permanent for statuses retrying cannot fix.
func statusError(ctx context.Context, res *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(res.Body, 1<<10))
	msg := strings.TrimSpace(string(raw))
	var body struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(raw, &body) == nil && len(body.Error) > 0 {
		msg = errorText(body.Error)
	}
	err := fmt.Errorf("POST %s: %d %s: %s", res.Request.URL.Redacted(), res.StatusCode, http.StatusText(res.StatusCode), msg)
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("oai: %w", ctxErr)
	}
	if llm.IsPermanentStatus(res.StatusCode) {
		return fmt.Errorf("oai: %w: %w", llm.ErrPermanent, err)
	}
	return fmt.Errorf("oai: %w", err)
}

// request is the body of POST /chat/completions.
type request struct {
	Model         string        `json:"model"`
	Messages      []message     `json:"messages"`
	Tools         []tool        `json:"tools,omitempty"`
	Stream        bool          `json:"stream"`
	StreamOptions streamOptions `json:"stream_options"`
	Temperature   *float64      `json:"temperature,omitempty"`
	MaxTokens     int           `json:"max_tokens,omitempty"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// message is one request message; Content is nil (omitted) only for an
// assistant message that carries tool calls and no text.
type message struct {
	Role       string     `json:"role"`
	Content    *string    `json:"content,omitempty"`
	ToolCalls  []toolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

type toolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function functionCall `json:"function"`
}

type functionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type tool struct {
	Type     string      `json:"type"`
	Function functionDef `json:"function"`
}

type functionDef struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters,omitempty"`
}

// buildRequest encodes the neutral request as the chat completions body.
func (m *Model) buildRequest(req llm.Request) ([]byte, error) {
	model := m.model
	if req.Model != "" {
		model = req.Model
	}
	if model == "" {
		return nil, fmt.Errorf("oai: no model configured: %w", llm.ErrPermanent)
	}
	r := request{Model: model, Stream: true, StreamOptions: streamOptions{IncludeUsage: true},
		Temperature: req.Temperature, Messages: make([]message, 0, len(req.Messages))}
	if req.MaxTokens > 0 {
		r.MaxTokens = req.MaxTokens
	}
	for i, msg := range req.Messages {
		p, err := toMessage(msg)
		if err != nil {
			return nil, fmt.Errorf("oai: message %d: %w", i, err)
		}
		r.Messages = append(r.Messages, p)
	}
	for _, t := range req.Tools {
		r.Tools = append(r.Tools, tool{Type: "function", Function: functionDef{Name: t.Name, Description: t.Description, Parameters: t.Parameters}})
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("oai: encode the request: %w: %w", llm.ErrPermanent, err)
	}
	return b, nil
}

// toMessage converts one stored message to the wire's message.
func toMessage(msg llm.Message) (message, error) {
	content := msg.Content
	switch msg.Role {
	case llm.RoleSystem, llm.RoleUser:
		return message{Role: msg.Role, Content: &content}, nil
	case llm.RoleTool:
		return message{Role: msg.Role, Content: &content, ToolCallID: msg.ToolCallID}, nil
	case llm.RoleAssistant:
		m := message{Role: msg.Role}
		if msg.Content != "" || len(msg.ToolCalls) == 0 {
			m.Content = &content
		}
		for _, tc := range msg.ToolCalls {
			m.ToolCalls = append(m.ToolCalls, toolCall{ID: tc.ID, Type: "function", Function: functionCall{Name: tc.Name, Arguments: tc.Arguments}})
		}
		return m, nil
	default:
		return message{}, fmt.Errorf("unknown role %q: %w", msg.Role, llm.ErrPermanent)
	}
}

// classify turns a transport or stream error into the error Generate
// returns: the context's error when the call was cancelled, otherwise the
// error as is (retryable).
func classify(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("oai: %w", ctxErr)
	}
	return fmt.Errorf("oai: %w", err)
}
