package api

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/models"
	"github.com/lorekb/lore/workflows"
)

// ChatCompletionRequest is the chat-completions request (strict: unknown
// fields are refused). filter and include_internal_events are extensions.
type ChatCompletionRequest struct {
	Model         string                  `json:"model" validate:"max=200"`
	Messages      []ChatCompletionMessage `json:"messages" validate:"required,min=1,max=500,dive"`
	Stream        bool                    `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Temperature           *float64          `json:"temperature" validate:"omitempty,min=0,max=2"`
	TopP                  *float64          `json:"top_p"`
	MaxTokens             *int              `json:"max_tokens"`
	MaxCompletionTokens   *int              `json:"max_completion_tokens"`
	N                     *int              `json:"n" validate:"omitempty,eq=1"`
	Stop                  json.RawMessage   `json:"stop"`
	PresencePenalty       *float64          `json:"presence_penalty"`
	FrequencyPenalty      *float64          `json:"frequency_penalty"`
	User                  string            `json:"user" validate:"max=64"`
	Seed                  *int64            `json:"seed"`
	Metadata              map[string]string `json:"metadata"`
	ServiceTier           *string           `json:"service_tier"`
	Store                 *bool             `json:"store"`
	Filter                *ChatFilter       `json:"filter"`
	IncludeInternalEvents *bool             `json:"include_internal_events"`
}

// ChatCompletionMessage is one message of the request.
type ChatCompletionMessage struct {
	Role       string          `json:"role" validate:"required,oneof=system developer user assistant tool"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCalls  json.RawMessage `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

// CompletionsQuery lets callers pick the site by query parameter.
type CompletionsQuery struct {
	SiteID int64 `query:"site_id" validate:"min=0"`
}

// ModelList is the result of GET /bot/models.
type ModelList struct {
	Object string      `json:"object"`
	Data   []ModelInfo `json:"data"`
}

// ModelInfo is one model of the list.
type ModelInfo struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func (s *Server) completionRoutes() []Route {
	return []Route{
		{Surface: Client, Method: http.MethodPost, Path: "/chat/completions", Tag: "chat", Perm: Public, Raw: "text/event-stream",
			Summary:     "OpenAI-compatible chat completions over the same chat core (site by filter.site_id, metadata.site_id or ?site_id=)",
			Description: "Set include_internal_events to receive tool and source events as extra data lines without choices.",
			Query:       CompletionsQuery{}, Body: ChatCompletionRequest{}, Handler: s.chatCompletions},
		{Surface: Client, Method: http.MethodPost, Path: "/bot/chat/completions", Tag: "bot", Perm: Public, Raw: "text/event-stream",
			Summary: "EE: site chat completions with Authorization: Bearer <site API key>", Body: ChatCompletionRequest{}, Handler: s.botChatCompletions},
		{Surface: Client, Method: http.MethodGet, Path: "/bot/models", Tag: "bot", Perm: Public,
			Summary: "EE: models available to the site (API key optional)", Raw: "application/json", Handler: s.botModels},
	}
}

// HashAPIKey is how site API keys are stored and looked up.
func HashAPIKey(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:])
}

// siteFromAPIKey resolves the bearer site API key; required says whether a
// missing key is an error.
func (s *Server) siteFromAPIKey(c *fiber.Ctx, required bool) (*models.Site, error) {
	key, found := strings.CutPrefix(c.Get(fiber.HeaderAuthorization), "Bearer ")
	key = strings.TrimSpace(key)
	if !found || key == "" {
		if required {
			return nil, Errf(http.StatusUnauthorized, "a site API key is required (Authorization: Bearer <API_KEY>)")
		}
		return nil, nil
	}
	site, err := s.d.DB.SiteByAPIKeyHash(c.UserContext(), HashAPIKey(key))
	if errors.Is(err, db.ErrNotFound) {
		return nil, Errf(http.StatusUnauthorized, "invalid or revoked API key")
	}
	if err != nil {
		return nil, err
	}
	if site.Status != models.SiteActive || site.Deleting {
		return nil, NotFound("site")
	}
	return site, nil
}

func (s *Server) chatCompletions(c *fiber.Ctx) error {
	var q CompletionsQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	var req ChatCompletionRequest
	if err := bindJSON(c, &req); err != nil {
		return err
	}
	siteID := q.SiteID
	if req.Filter != nil && req.Filter.SiteID != nil {
		siteID = *req.Filter.SiteID
	}
	if v := req.Metadata["site_id"]; siteID == 0 && v != "" {
		if _, err := fmt.Sscan(v, &siteID); err != nil {
			return Invalid("metadata.site_id: must be an integer")
		}
	}
	if siteID == 0 {
		return Invalid("site_id: field required (filter.site_id, metadata.site_id or ?site_id=)")
	}
	site, err := s.clientSite(c, siteID)
	if err != nil {
		return err
	}
	return s.completions(c, site, req, "api")
}

func (s *Server) botChatCompletions(c *fiber.Ctx) error {
	site, err := s.siteFromAPIKey(c, true)
	if err != nil {
		return err
	}
	var req ChatCompletionRequest
	if err := bindJSON(c, &req); err != nil {
		return err
	}
	return s.completions(c, site, req, "bot_api")
}

func (s *Server) botModels(c *fiber.Ctx) error {
	site, err := s.siteFromAPIKey(c, false)
	if err != nil {
		return err
	}
	tenant := int64(1)
	if site != nil {
		tenant = site.TenantID
	}
	ai, err := s.d.AIConfig(c.UserContext(), tenant)
	if err != nil {
		return err
	}
	id := ai.Chat.Model
	if id == "" {
		id = ai.Chat.Provider
	}
	return c.JSON(ModelList{Object: "list", Data: []ModelInfo{{ID: id, Object: "model", Created: time.Now().Unix(), OwnedBy: "lore"}}})
}

// completions runs one turn from chat-completion messages: system messages
// become instructions, earlier user/assistant messages seed a new thread,
// the last user message is the input.
func (s *Server) completions(c *fiber.Ctx, site *models.Site, req ChatCompletionRequest, source string) error {
	var instructions []string
	var hist []db.HistoryMessage
	last := -1
	for i, m := range req.Messages {
		if m.Role == "user" {
			last = i
		}
	}
	if last < 0 {
		return Invalid("messages: no user message")
	}
	for i, m := range req.Messages[:last] {
		text := contentText(m.Content)
		switch m.Role {
		case "system", "developer":
			instructions = append(instructions, text)
		case "user", "assistant":
			if text != "" {
				hist = append(hist, db.HistoryMessage{Role: m.Role, Content: text})
			}
		}
		_ = i
	}
	text := contentText(req.Messages[last].Content)
	if strings.TrimSpace(text) == "" {
		return Invalid("messages: the last user message is empty")
	}
	turn := chatTurn{Site: site, MemberID: req.User, Source: source, Text: text,
		History: hist, Instructions: strings.Join(instructions, "\n\n"), Model: req.Model, Temperature: req.Temperature}
	if !req.Stream {
		st, err := s.startChatTurn(c.UserContext(), turn)
		if err != nil {
			return err
		}
		return s.completionJSON(c, st, "chatcmpl-"+uuid.NewString(), st.CreatedAt.Unix())
	}
	st, err := s.prepareChatTurn(c.UserContext(), turn)
	if err != nil {
		return err
	}
	id := "chatcmpl-" + uuid.NewString()
	created := st.CreatedAt.Unix()
	internal := req.IncludeInternalEvents != nil && *req.IncludeInternalEvents
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	chunk := func(delta map[string]any, finish any) []byte {
		b, _ := json.Marshal(map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": st.Model,
			"choices": []map[string]any{{"index": 0, "delta": delta, "finish_reason": finish}}})
		return b
	}
	var usage map[string]int
	s.pumpSSE(c, st.WorkflowID, 0, st.launch, func(w *bufio.Writer, ev *workflows.ChatEvent, done bool) {
		switch {
		case ev == nil && !done:
			fmt.Fprintf(w, "data: %s\n\n", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
		case ev != nil:
			if line := completionLine(ev.Data, chunk, internal, &usage); line != nil {
				fmt.Fprintf(w, "data: %s\n\n", line)
			}
		case done:
			fmt.Fprintf(w, "data: %s\n\n", chunk(map[string]any{}, "stop"))
			if includeUsage && usage != nil {
				b, _ := json.Marshal(map[string]any{"id": id, "object": "chat.completion.chunk", "created": created,
					"model": st.Model, "choices": []any{}, "usage": usage})
				fmt.Fprintf(w, "data: %s\n\n", b)
			}
			fmt.Fprint(w, "data: [DONE]\n\n")
		}
	}, func(w *bufio.Writer, err error) {
		fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", chunk(map[string]any{"content": "⚠️ " + err.Error()}, "stop"))
	})
	return nil
}

// completionLine translates one Responses-style event into a chat-completion
// data line (nil when the event has no counterpart).
func completionLine(data []byte, chunk func(map[string]any, any) []byte, internal bool, usage *map[string]int) []byte {
	var e struct {
		Type     string          `json:"type"`
		Delta    string          `json:"delta"`
		Tool     string          `json:"tool"`
		Sources  json.RawMessage `json:"sources"`
		Trace    json.RawMessage `json:"trace"`
		Response struct {
			Usage map[string]int `json:"usage"`
		} `json:"response"`
	}
	if json.Unmarshal(data, &e) != nil {
		return nil
	}
	switch e.Type {
	case "response.output_text.delta":
		return chunk(map[string]any{"content": e.Delta}, nil)
	case "response.completed":
		u := e.Response.Usage
		*usage = map[string]int{"prompt_tokens": u["input_tokens"], "completion_tokens": u["output_tokens"], "total_tokens": u["total_tokens"]}
	}
	if !internal {
		return nil
	}
	var raw map[string]any
	_ = json.Unmarshal(data, &raw)
	var out any
	switch e.Type {
	case "response.tool_call.started":
		out = map[string]any{"status": "tool_calling", "tool": e.Tool}
	case "response.tool_call.completed":
		m := map[string]any{"status": "tool_completed"}
		for _, k := range []string{"tool", "tool_call_id", "chunk_count", "elapsed_ms"} {
			if v, ok := raw[k]; ok {
				m[k] = v
			}
		}
		out = m
	case "response.knowledge_sources":
		out = map[string]any{"sources": e.Sources}
	case "response.pipeline_trace":
		out = map[string]any{"pipeline_trace": e.Trace}
	default:
		return nil
	}
	b, _ := json.Marshal(out)
	return b
}

// completionJSON waits for the run's last event and returns a
// chat.completion object.
func (s *Server) completionJSON(c *fiber.Ctx, st *startedTurn, id string, created int64) error {
	var text strings.Builder
	var usage map[string]int
	ctx, cancel := context.WithTimeout(c.UserContext(), s.d.Cfg.ChatStreamTimeout()+time.Minute)
	defer cancel()
	err := s.followRun(ctx, st.WorkflowID, 0, func(ev workflows.ChatEvent) {
		completionLine(ev.Data, func(d map[string]any, _ any) []byte {
			if v, ok := d["content"].(string); ok {
				text.WriteString(v)
			}
			return nil
		}, false, &usage)
	}, nil, nil)
	if err != nil {
		return Unavailable("chat run: %v", err)
	}
	return c.JSON(map[string]any{"id": id, "object": "chat.completion", "created": created, "model": st.Model,
		"choices": []map[string]any{{"index": 0, "message": map[string]any{"role": "assistant", "content": text.String()},
			"finish_reason": "stop"}}, "usage": usage})
}
