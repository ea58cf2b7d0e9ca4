// Package cohere is a [rerank.Reranker] that calls a Cohere-compatible
// rerank endpoint (POST {BaseURL}/v2/rerank, or /v1/rerank for a base URL
// ending in /v1) through cohere-go. Cohere itself and servers that speak the
// same shape (vLLM's /v2/rerank, Jina's /v1/rerank) can be used, so operators
// can trade the free lexical reranker for a cross-encoder without code
// changes.
package cohere

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	cohere "github.com/cohere-ai/cohere-go/v2"
	"github.com/cohere-ai/cohere-go/v2/core"
	"github.com/cohere-ai/cohere-go/v2/option"
	cov2 "github.com/cohere-ai/cohere-go/v2/v2"

	"github.com/lorekb/lore/internal/rerank"
)

// DefaultBaseURL is Cohere's API root, used when Config.BaseURL is empty.
const DefaultBaseURL = "https://api.cohere.com"

// DefaultModel is used when Config.Model is empty, so a bare API key works.
const DefaultModel = "rerank-v3.5"

// Config selects the server and model. BaseURL is the root that "/v2/rerank"
// is appended to (a trailing "/" or "/v2" is tolerated); a BaseURL ending in
// "/v1" (https://api.jina.ai/v1) selects "/v1/rerank", whose request and
// response carry the same fields. HTTPClient is optional.
type Config struct {
	BaseURL    string
	APIKey     string
	Model      string
	HTTPClient *http.Client
}

// Reranker calls the remote rerank endpoint. It uses cohere-go's v2
// sub-client directly: the umbrella client package also pulls in the AWS SDK
// (for Bedrock), which Lore does not need.
type Reranker struct {
	client *cov2.Client
	model  string
}

var _ rerank.Reranker = (*Reranker)(nil)

// New builds a Reranker from cfg. Settings come only from cfg (never from
// CO_API_KEY), and cohere-go's retries are effectively disabled: the caller
// runs inside a Temporal activity that already retries, and the SDK's retry
// sleeps ignore context cancellation.
func New(cfg Config) *Reranker {
	base := strings.TrimSuffix(strings.TrimRight(cfg.BaseURL, "/"), "/v2")
	v1 := strings.HasSuffix(base, "/v1")
	base = strings.TrimSuffix(base, "/v1")
	if base == "" {
		base = DefaultBaseURL
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	opts := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithMaxAttempts(1),
		// cohere-go falls back to CO_API_KEY when no token is given; the
		// doer strips that so an unkeyed local server never receives it.
		option.WithHTTPClient(&doer{c: hc, noAuth: cfg.APIKey == "", v1: v1}),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithToken(cfg.APIKey))
	}
	model := cfg.Model
	if model == "" {
		model = DefaultModel
	}
	return &Reranker{client: cov2.NewClient(opts...), model: model}
}

// Rerank sends query and docs to the server and returns its results sorted
// by relevance score (highest first, ties by index), at most topN (all when
// topN <= 0). Errors for HTTP 4xx other than 408/429 wrap
// [rerank.ErrPermanent].
func (r *Reranker) Rerank(ctx context.Context, query string, docs []string, topN int) ([]rerank.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		return []rerank.Result{}, nil
	}
	req := &cohere.V2RerankRequest{Model: r.model, Query: query, Documents: docs}
	if topN > 0 {
		n := topN
		req.TopN = &n
	}
	resp, err := r.client.Rerank(ctx, req)
	if err != nil {
		return nil, classify(ctx, err)
	}
	results := make([]rerank.Result, 0, len(resp.Results))
	seen := make(map[int]bool, len(resp.Results))
	for _, item := range resp.Results {
		if item == nil {
			continue
		}
		if item.Index < 0 || item.Index >= len(docs) {
			return nil, fmt.Errorf("cohere rerank: result index %d out of range for %d documents", item.Index, len(docs))
		}
		if seen[item.Index] {
			continue
		}
		seen[item.Index] = true
		results = append(results, rerank.Result{Index: item.Index, Score: item.RelevanceScore})
	}
	return rerank.Top(results, topN), nil
}

// statusError is an HTTP error response captured before cohere-go's retrier
// sees it. It carries the status and a prefix of the body for diagnosis.
type statusError struct {
	code int
	body string
}

// Error reports the status and the start of the response body.
func (e *statusError) Error() string {
	if e.body == "" {
		return fmt.Sprintf("HTTP %d", e.code)
	}
	return fmt.Sprintf("HTTP %d: %s", e.code, e.body)
}

// doer sits between cohere-go and the HTTP client. It turns error responses
// into Go errors: cohere-go's retrier, even when limited to one attempt,
// sleeps at least 500ms (ignoring the context) after a 408/429/5xx before
// returning, whereas an error from Do makes it give up immediately. With
// noAuth it removes the Authorization header.
type doer struct {
	c      *http.Client
	noAuth bool
	v1     bool // send to /v1/rerank instead of /v2/rerank
}

// Do sends req, returning a *statusError instead of any 4xx/5xx response.
func (d *doer) Do(req *http.Request) (*http.Response, error) {
	if d.noAuth && req.Header.Get("Authorization") != "" {
		req = req.Clone(req.Context())
		req.Header.Del("Authorization")
	}
	if d.v1 && strings.HasSuffix(req.URL.Path, "/v2/rerank") {
		req = req.Clone(req.Context())
		req.URL.Path = strings.TrimSuffix(req.URL.Path, "/v2/rerank") + "/v1/rerank"
	}
	res, err := d.c.Do(req)
	if err != nil || res.StatusCode < 400 {
		return res, err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 2048))
	return nil, &statusError{code: res.StatusCode, body: string(bytes.TrimSpace(b))}
}

// classify wraps err, marking non-retryable HTTP statuses as permanent and
// preferring the context's error when the call was cancelled.
func classify(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("cohere rerank: %w", ctxErr)
	}
	code := 0
	var se *statusError
	var ae *core.APIError
	switch {
	case errors.As(err, &se):
		code = se.code
	case errors.As(err, &ae):
		code = ae.StatusCode
	}
	if code >= 400 && code < 500 && code != http.StatusRequestTimeout && code != http.StatusTooManyRequests {
		return fmt.Errorf("cohere rerank: %w: %w", rerank.ErrPermanent, err)
	}
	return fmt.Errorf("cohere rerank: %w", err)
}
