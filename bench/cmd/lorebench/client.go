package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/lorekb/lore/bench/internal/loreapi"
)

// loreClient is the shared API client with the calls only lorebench makes.
type loreClient struct{ *loreapi.Client }

func newLoreClient(base string) *loreClient {
	return &loreClient{loreapi.New(base, 60*time.Second)}
}

func (c *loreClient) createSite(ctx context.Context, name string) (int64, error) {
	var s struct {
		ID int64 `json:"id"`
	}
	if err := c.Call(ctx, http.MethodPost, "/admin/api/v1/sites", map[string]any{"name": name}, &s); err != nil {
		return 0, fmt.Errorf("create site: %w", err)
	}
	if s.ID == 0 {
		return 0, fmt.Errorf("create site: no id in the answer")
	}
	return s.ID, nil
}
