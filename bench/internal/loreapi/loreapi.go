// Package loreapi is the benchmarks' client of Lore's enveloped JSON API.
package loreapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Client calls Lore's JSON API (enveloped responses); the benchmarks
// (lorebench, loreeval) share it.
type Client struct {
	Base  string // http://127.0.0.1:port
	Token string
	HTTP  *http.Client
}

// New is a client of the API at base whose requests time out after timeout.
func New(base string, timeout time.Duration) *Client {
	return &Client{Base: base, HTTP: &http.Client{Timeout: timeout}}
}

// Call sends a request and decodes the envelope's data into out (when not
// nil); a non-2xx status is an error quoting the body.
func (c *Client) Call(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	res, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 32<<20))
	if err != nil {
		return fmt.Errorf("%s %s: read body: %w", method, path, err)
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return fmt.Errorf("%s %s: HTTP %d: %s", method, path, res.StatusCode, Snippet(raw))
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
		return fmt.Errorf("%s %s: decode envelope: %w: %s", method, path, err, Snippet(raw))
	}
	if err := json.Unmarshal(env.Data, out); err != nil {
		return fmt.Errorf("%s %s: decode data: %w: %s", method, path, err, Snippet(raw))
	}
	return nil
}

// Snippet is the first 400 bytes of a body, for error messages.
func Snippet(b []byte) string {
	if len(b) > 400 {
		return string(b[:400]) + "…"
	}
	return string(b)
}

// Login signs in as an admin and keeps the token for later calls.
func (c *Client) Login(ctx context.Context, email, password string) error {
	var lr struct {
		Token string `json:"token"`
	}
	if err := c.Call(ctx, http.MethodPost, "/admin/api/v1/users:login", map[string]string{"email": email, "password": password}, &lr); err != nil {
		return fmt.Errorf("login: %w", err)
	}
	if lr.Token == "" {
		return fmt.Errorf("login: no token in the answer")
	}
	c.Token = lr.Token
	return nil
}
