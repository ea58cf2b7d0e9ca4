// Package oai embeds text through an OpenAI-compatible /embeddings endpoint
// (OpenAI itself, Azure-style gateways, vLLM, Ollama, LiteLLM, ...), using
// the official openai-go SDK.
//
// The SDK's own retries are turned off: ingest runs inside Temporal
// activities, which already retry with backoff, and two layers of retries
// multiply load on a struggling provider. Instead, errors that no retry can
// fix are marked with embed.ErrPermanent so the activity can fail fast.
package oai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/openai/openai-go"

	"github.com/lorekb/lore/internal/embed"
	llmoai "github.com/lorekb/lore/internal/llm/oai"
)

// DefaultModel is used when Config.Model is empty.
const DefaultModel = "text-embedding-3-small"

// DefaultBatchSize is the number of texts per request when Config.BatchSize
// is zero: big enough to amortise round trips, small enough to stay under
// providers' per-request token limits with 800-rune chunks.
const DefaultBatchSize = 64

// maxBatchSize is OpenAI's limit on inputs per request.
const maxBatchSize = 2048

// Config says where and how to embed.
type Config struct {
	// BaseURL of the API, e.g. "https://api.openai.com/v1" or
	// "http://localhost:11434/v1" (the SDK default when empty).
	BaseURL string
	// APIKey is sent as a bearer token.
	APIKey string
	// Model is the embedding model (DefaultModel when empty).
	Model string
	// Dimension, when positive, is requested from the model (the
	// "dimensions" parameter) and enforced on every returned vector; zero
	// leaves the model's native size and omits the parameter, which models
	// without variable dimensions reject.
	Dimension int
	// BatchSize is the number of texts per request (DefaultBatchSize when
	// zero or negative, at most 2048).
	BatchSize int
	// HTTPClient, when set, carries the requests (timeouts, proxies, tests).
	HTTPClient *http.Client
}

// Embedder calls the embeddings endpoint. It is safe for concurrent use.
type Embedder struct {
	client    openai.Client
	model     string
	dimension int // requested, 0 = native
	batchSize int
	learned   atomic.Int64 // vector length seen in the last answer
}

// knownDimensions are the native sizes of OpenAI's models, so Dimension can
// answer before the first request.
var knownDimensions = map[string]int{
	"text-embedding-3-small": 1536,
	"text-embedding-3-large": 3072,
	"text-embedding-ada-002": 1536,
}

// New returns an embedder for cfg. It makes no request; its settings come
// only from cfg (llmoai.ClientOptions).
func New(cfg Config) *Embedder {
	e := &Embedder{
		client:    openai.NewClient(llmoai.ClientOptions(cfg.BaseURL, cfg.APIKey, cfg.HTTPClient)...),
		model:     cfg.Model,
		dimension: max(cfg.Dimension, 0),
		batchSize: cfg.BatchSize,
	}
	if e.model == "" {
		e.model = DefaultModel
	}
	if e.batchSize <= 0 {
		e.batchSize = DefaultBatchSize
	}
	e.batchSize = min(e.batchSize, maxBatchSize)
	return e
}

// Model returns the configured model name.
func (e *Embedder) Model() string { return e.model }

// Dimension returns the configured dimension, else the length of the vectors
// last returned, else the native size of a known OpenAI model, else 0.
func (e *Embedder) Dimension() int {
	if e.dimension > 0 {
		return e.dimension
	}
	if d := e.learned.Load(); d > 0 {
		return int(d)
	}
	return knownDimensions[e.model]
}

// Embed returns one vector per text, in the order of texts, sending
// BatchSize texts per request. Errors wrapping embed.ErrPermanent will fail
// again if retried: the API answered 4xx other than 408 and 429 (bad input,
// bad key, unknown model), or the vectors do not have the configured
// dimension.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for start := 0; start < len(texts); start += e.batchSize {
		end := min(start+e.batchSize, len(texts))
		if err := e.embedBatch(ctx, texts[start:end], out[start:end]); err != nil {
			return nil, fmt.Errorf("oai: embed texts %d-%d of %d with %s: %w", start, end-1, len(texts), e.model, err)
		}
	}
	return out, nil
}

// embedBatch embeds one request's worth of texts into out.
func (e *Embedder) embedBatch(ctx context.Context, texts []string, out [][]float32) error {
	params := openai.EmbeddingNewParams{
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts},
		Model: openai.EmbeddingModel(e.model),
	}
	if e.dimension > 0 {
		params.Dimensions = openai.Int(int64(e.dimension))
	}
	resp, err := e.client.Embeddings.New(ctx, params)
	if err != nil {
		return classify(err)
	}
	if len(resp.Data) != len(texts) {
		return fmt.Errorf("got %d embeddings for %d inputs", len(resp.Data), len(texts))
	}
	want := e.dimension
	for _, d := range resp.Data {
		i := d.Index
		if i < 0 || i >= int64(len(texts)) {
			return fmt.Errorf("embedding index %d out of range [0,%d)", i, len(texts))
		}
		if out[i] != nil {
			return fmt.Errorf("embedding index %d returned twice", i)
		}
		if want == 0 {
			want = len(d.Embedding) // all vectors of one answer must agree
		}
		if len(d.Embedding) != want || want == 0 {
			return fmt.Errorf("%w: model returned a vector of %d dimensions, want %d", embed.ErrPermanent, len(d.Embedding), want)
		}
		v := make([]float32, len(d.Embedding))
		for j, x := range d.Embedding {
			v[j] = float32(x)
		}
		out[i] = v
	}
	e.learned.Store(int64(want))
	return nil
}

// classify marks API errors that a retry cannot fix as permanent. 408
// (timeout) and 429 (rate limit or quota) are transient, as are 5xx and
// transport errors.
func classify(err error) error {
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		code := apiErr.StatusCode
		if code >= 400 && code < 500 && code != http.StatusRequestTimeout && code != http.StatusTooManyRequests {
			return fmt.Errorf("%w: %w", embed.ErrPermanent, err)
		}
	}
	return err
}
