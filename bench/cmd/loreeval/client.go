package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// client speaks Lore's enveloped JSON API.
type client struct {
	base, token string
	http        *http.Client
}

func newClient(base string) *client {
	return &client{base: base, http: &http.Client{Timeout: 2 * time.Minute}}
}

func (c *client) call(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
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
		return err
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(res.Body, 32<<20))
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: HTTP %d: %.300s", method, path, res.StatusCode, raw)
	}
	if out == nil {
		return nil
	}
	var env struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	return json.Unmarshal(env.Data, out)
}

func (c *client) login(ctx context.Context, email, password string) error {
	var lr struct {
		Token string `json:"token"`
	}
	if err := c.call(ctx, http.MethodPost, "/admin/api/v1/users:login", map[string]string{"email": email, "password": password}, &lr); err != nil {
		return err
	}
	c.token = lr.Token
	return nil
}

// chatReply is an answer and the numbered sources of its turn.
type chatReply struct {
	text    string
	sources map[int]int64 // source number → document id
}

// chat asks one question on a new thread with stream=true and reads the
// answer text and the knowledge_sources event.
func (c *client) chat(ctx context.Context, siteID int64, q string) (chatReply, error) {
	body, _ := json.Marshal(map[string]any{"input": q, "stream": true, "filter": map[string]any{"site_id": siteID}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/v1/chat/responses", bytes.NewReader(body))
	if err != nil {
		return chatReply{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := c.http.Do(req)
	if err != nil {
		return chatReply{}, err
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		raw, _ := io.ReadAll(io.LimitReader(res.Body, 2000))
		return chatReply{}, fmt.Errorf("chat: HTTP %d: %s", res.StatusCode, raw)
	}
	out := chatReply{sources: map[int]int64{}}
	var text strings.Builder
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		data := strings.TrimPrefix(line, "data: ")
		if data == "[DONE]" {
			break
		}
		var ev struct {
			Type    string `json:"type"`
			Delta   string `json:"delta"`
			Sources []struct {
				DocumentID  int64 `json:"documentId"`
				SourceIndex int   `json:"sourceIndex"`
			} `json:"sources"`
		}
		if json.Unmarshal([]byte(data), &ev) != nil {
			continue
		}
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.knowledge_sources":
			for _, s := range ev.Sources {
				out.sources[s.SourceIndex] = s.DocumentID
			}
		}
	}
	out.text = text.String()
	return out, sc.Err()
}
