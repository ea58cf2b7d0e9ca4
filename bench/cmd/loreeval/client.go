package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"time"

	"github.com/lorekb/lore/bench/internal/loreapi"
)

// client is the shared API client with the chat call the eval makes.
type client struct{ *loreapi.Client }

// newClient keeps one chat owner secret for every request, as a browser
// keeps Lore's lore_chat_secret cookie: the eval reads back the tool results
// of the threads it opened (-dump), which only their owner may.
func newClient(base string) *client {
	c := &client{loreapi.New(base, 2*time.Minute)}
	jar, _ := cookiejar.New(nil)
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	if u, err := url.Parse(base); err == nil {
		jar.SetCookies(u, []*http.Cookie{{Name: "lore_chat_secret", Value: base64.RawURLEncoding.EncodeToString(secret), Path: "/"}})
	}
	c.HTTP.Jar = jar
	return c
}

// chatReply is an answer and the numbered sources of its turn.
type chatReply struct {
	text     string
	sources  map[int]int64 // source number → document id
	threadID string
	toolCall string // id of the last search tool call
}

// chat asks one question on a new thread with stream=true and reads the
// answer text and the knowledge_sources event.
func (c *client) chat(ctx context.Context, siteID int64, q string) (chatReply, error) {
	body, _ := json.Marshal(map[string]any{"input": q, "stream": true, "filter": map[string]any{"site_id": siteID}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.Base+"/v1/chat/responses", bytes.NewReader(body))
	if err != nil {
		return chatReply{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := c.HTTP.Do(req)
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
			Type     string `json:"type"`
			Delta    string `json:"delta"`
			Response struct {
				ID string `json:"id"`
			} `json:"response"`
			ToolCallID string `json:"tool_call_id"`
			Sources    []struct {
				DocumentID  int64 `json:"documentId"`
				SourceIndex int   `json:"sourceIndex"`
			} `json:"sources"`
		}
		if json.Unmarshal([]byte(data), &ev) != nil {
			continue
		}
		switch ev.Type {
		case "response.created":
			out.threadID = ev.Response.ID
		case "response.tool_call.completed":
			out.toolCall = ev.ToolCallID
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

// retry503 runs fn again, up to three more times a second or two apart,
// while it fails with HTTP 503: on a loaded machine the Temporal dev server
// can miss its namespace for a moment ("Namespace default is not found"),
// which says nothing about retrieval quality.
func retry503(ctx context.Context, fn func() error) error {
	err := fn()
	for i := 1; i <= 3 && err != nil && strings.Contains(err.Error(), "HTTP 503"); i++ {
		logf("retrying after %v", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(i) * 1500 * time.Millisecond):
		}
		err = fn()
	}
	return err
}
