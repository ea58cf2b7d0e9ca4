// Package oai implements [llm.Model] on any OpenAI-compatible chat
// completions server (OpenAI, vLLM, Ollama, LiteLLM, ...) using openai-go,
// with a response middleware (keepalive.go) that drops the keep-alive events
// openai-go's stream decoder cannot take.
//
// Each Generate call is one streaming request. Retries are left to Temporal,
// which already retries the activity, so the SDK's own retries are off.
package oai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"github.com/openai/openai-go/packages/ssestream"

	"github.com/lorekb/lore/internal/llm"
)

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
	client openai.Client
	model  string
}

var _ llm.Model = (*Model)(nil)

// New builds a Model from cfg (settings only from cfg, see ClientOptions).
func New(cfg Config) *Model {
	opts := append(ClientOptions(cfg.BaseURL, cfg.APIKey, cfg.HTTPClient), option.WithMiddleware(dropKeepAlives))
	return &Model{client: openai.NewClient(opts...), model: cfg.Model}
}

// ClientOptions are the openai-go options of every client Lore makes for an
// OpenAI-compatible server (this chat model, the embedder): the SDK does not
// retry (Temporal retries the activity), and settings come only from the
// arguments, never from OPENAI_* environment variables, so that the key for
// one server is not sent to another by accident. An empty baseURL means
// OpenAI; an empty apiKey sends no Authorization header; hc may be nil.
func ClientOptions(baseURL, apiKey string, hc *http.Client) []option.RequestOption {
	opts := []option.RequestOption{
		option.WithMaxRetries(0),
		option.WithEnvironmentProduction(),
		option.WithHeaderDel("authorization"),
	}
	if baseURL != "" {
		opts = append(opts, option.WithBaseURL(baseURL))
	}
	if apiKey != "" {
		opts = append(opts, option.WithAPIKey(apiKey))
	}
	if hc != nil {
		opts = append(opts, option.WithHTTPClient(hc))
	}
	return opts
}

// Generate streams one chat completion. Text and tool-call pieces are passed
// to onDelta as they arrive; tool-call pieces are also accumulated by index
// into the returned message. HTTP 4xx errors other than 408/429 wrap
// [llm.ErrPermanent].
func (m *Model) Generate(ctx context.Context, req llm.Request, onDelta func(llm.Delta)) (llm.Result, error) {
	if err := ctx.Err(); err != nil {
		return llm.Result{}, err
	}
	body, err := m.requestBody(req)
	if err != nil {
		return llm.Result{}, err
	}

	// As Chat.Completions.NewStreaming does, with Lore's own body and
	// chunk decoding (wire.go).
	var raw *http.Response
	err = m.client.Post(ctx, "chat/completions", body, &raw)
	stream := ssestream.NewStream[streamChunk](ssestream.NewDecoder(raw), err)
	defer stream.Close()

	var (
		content strings.Builder
		calls   = map[int64]*llm.ToolCall{}
		usage   llm.Usage
		finish  string
	)
	for stream.Next() {
		chunk := stream.Current()
		if chunk.hasUsage {
			usage = chunk.usage
		}
		for _, choice := range chunk.choices {
			if choice.index != 0 {
				continue // only one choice is requested
			}
			if choice.finish != "" {
				finish = choice.finish
			}
			if text := choice.content; text != "" {
				content.WriteString(text)
				if onDelta != nil {
					onDelta(llm.Delta{Text: text})
				}
			}
			for _, tc := range choice.toolCalls {
				call := calls[tc.index]
				if call == nil {
					call = &llm.ToolCall{}
					calls[tc.index] = call
				}
				if tc.id != "" {
					call.ID = tc.id
				}
				// Some servers repeat the name on every piece, others send
				// it once; only append when it is not a repeat.
				if tc.name != "" && tc.name != call.Name {
					call.Name += tc.name
				}
				call.Arguments += tc.arguments
				if onDelta != nil {
					onDelta(llm.Delta{ToolCall: &llm.ToolCallDelta{
						Index:     int(tc.index),
						ID:        tc.id,
						Name:      tc.name,
						Arguments: tc.arguments,
					}})
				}
			}
		}
	}
	if err := stream.Err(); err != nil {
		return llm.Result{}, classify(ctx, err)
	}
	if err := ctx.Err(); err != nil {
		return llm.Result{}, err
	}

	msg := llm.Message{Role: llm.RoleAssistant, Content: content.String()}
	indexes := make([]int64, 0, len(calls))
	for i := range calls {
		indexes = append(indexes, i)
	}
	sort.Slice(indexes, func(a, b int) bool { return indexes[a] < indexes[b] })
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

// classify turns a transport or API error into the error Generate returns:
// the context's error when the call was cancelled, ErrPermanent-wrapped for
// non-retryable HTTP statuses, otherwise the error as is.
func classify(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("oai: %w", ctxErr)
	}
	var apiErr *openai.Error
	if errors.As(err, &apiErr) && llm.IsPermanentStatus(apiErr.StatusCode) {
		return fmt.Errorf("oai: %w: %w", llm.ErrPermanent, err)
	}
	return fmt.Errorf("oai: %w", err)
}
