package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// loreClient calls Lore's JSON API (enveloped responses).
type loreClient struct {
	base  string // http://127.0.0.1:port
	token string
	http  *http.Client
}

func newLoreClient(base string) *loreClient {
	return &loreClient{base: base, http: &http.Client{Timeout: 60 * time.Second}}
}

// call sends a request and decodes the envelope's data into out (when not
// nil); a non-2xx status is an error quoting the body.
func (c *loreClient) call(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 32<<20))
	if err != nil {
		return fmt.Errorf("%s %s: read body: %w", method, path, err)
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return fmt.Errorf("%s %s: HTTP %d: %s", method, path, res.StatusCode, snippet(raw))
	}
	if out == nil {
		return nil
	}
	var env struct {
		Code int             `json:"code"`
		Msg  string          `json:"msg"`
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return fmt.Errorf("%s %s: decode envelope: %w: %s", method, path, err, snippet(raw))
	}
	if err := json.Unmarshal(env.Data, out); err != nil {
		return fmt.Errorf("%s %s: decode data: %w: %s", method, path, err, snippet(raw))
	}
	return nil
}

func snippet(b []byte) string {
	if len(b) > 400 {
		return string(b[:400]) + "…"
	}
	return string(b)
}

func (c *loreClient) login(ctx context.Context, email, password string) error {
	var lr struct {
		Token string `json:"token"`
	}
	if err := c.call(ctx, http.MethodPost, "/admin/api/v1/users:login", map[string]string{"email": email, "password": password}, &lr); err != nil {
		return fmt.Errorf("login: %w", err)
	}
	if lr.Token == "" {
		return fmt.Errorf("login: no token in the answer")
	}
	c.token = lr.Token
	return nil
}

func (c *loreClient) createSite(ctx context.Context, name string) (int64, error) {
	var s struct {
		ID int64 `json:"id"`
	}
	if err := c.call(ctx, http.MethodPost, "/admin/api/v1/sites", map[string]any{"name": name}, &s); err != nil {
		return 0, fmt.Errorf("create site: %w", err)
	}
	if s.ID == 0 {
		return 0, fmt.Errorf("create site: no id in the answer")
	}
	return s.ID, nil
}
