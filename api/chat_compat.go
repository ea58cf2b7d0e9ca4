package api

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/activities"
	"github.com/lorekb/lore/models"
)

// The search tool's result as the reference's client reads it (the
// role:"tool" message of a thread and GET …/tool-result/{id} data.content):
// a JSON array of passages, numbered as the answer cites them. Lore stores
// {query, passages} and gives the model numbered text; both are turned into
// this shape on read.

// ToolPassage is one passage of a tool result in the reference's shape.
type ToolPassage struct {
	SourceIndex int             `json:"source_index"`
	Title       string          `json:"title"`
	Content     string          `json:"content"`
	Metadata    ToolPassageMeta `json:"metadata"`
}

// ToolPassageMeta is the metadata of a passage.
type ToolPassageMeta struct {
	DocumentID int64   `json:"document_id"`
	Title      string  `json:"title"`
	Score      float64 `json:"score"`
	SiteID     int64   `json:"site_id"`
	Fragments  int     `json:"fragments"`
}

// sourceStartRe finds the first passage number of a tool message as the
// model saw it ("[3] Title…").
var sourceStartRe = regexp.MustCompile(`^\[(\d+)\] `)

// sourceStart is the number of the first passage of a stored tool message
// (1 when it has none).
func sourceStart(toolMessage string) int {
	if m := sourceStartRe.FindStringSubmatch(toolMessage); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil {
			return n
		}
	}
	return 1
}

// toolPassages renders a stored search result ({query, passages}) as the
// reference's array, numbering passages from start; "[]" when it found
// nothing, and the stored text unchanged when it is not a search result.
func toolPassages(stored string, start int) string {
	var r struct {
		Passages *[]activities.Passage `json:"passages"`
	}
	if json.Unmarshal([]byte(stored), &r) != nil || r.Passages == nil {
		return stored
	}
	out := make([]ToolPassage, len(*r.Passages))
	for i, p := range *r.Passages {
		out[i] = ToolPassage{SourceIndex: start + i, Title: p.Title, Content: p.Content,
			Metadata: ToolPassageMeta{DocumentID: p.DocumentID, Title: p.Title, Score: p.Score, SiteID: p.SiteID, Fragments: p.Fragments}}
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// toolRowsAsPassages replaces the content of a thread's tool messages with
// their search results in the reference's shape (rows whose call has no
// stored result keep their text).
func (s *Server) toolRowsAsPassages(ctx context.Context, threadID string, rows []models.ChatMessage) error {
	var ids []string
	for _, m := range rows {
		if m.Role == "tool" && m.ToolCallID != "" {
			ids = append(ids, m.ToolCallID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	stored, err := s.d.DB.ToolResultContents(ctx, threadID, ids)
	if err != nil {
		return err
	}
	for i, m := range rows {
		if res, ok := stored[m.ToolCallID]; ok && m.Role == "tool" {
			rows[i].Content = toolPassages(res, sourceStart(m.Content))
		}
	}
	return nil
}

// toolResultContent is the data.content of GET …/tool-result/{id}: the
// result in the reference's shape, numbered as the thread's tool message.
func (s *Server) toolResultContent(ctx context.Context, threadID string, r *models.ToolResult) (string, error) {
	rows, err := s.d.DB.ChatThreadMessages(ctx, threadID)
	if err != nil {
		return "", err
	}
	start := 1
	for _, m := range rows {
		if m.Role == "tool" && m.ToolCallID == r.ToolCallID {
			start = sourceStart(m.Content)
		}
	}
	return toolPassages(r.Content, start), nil
}

// OpenAIError is the error body of the OpenAI-compatible routes, in OpenAI's
// format: official OpenAI SDKs read error.message (an envelope made them
// show "401 status code (no body)").
type OpenAIError struct {
	Error OpenAIErrorBody `json:"error"`
	Code  int             `json:"code" doc:"the HTTP status, as in Lore's envelope"`
}

// OpenAIErrorBody is the inner object of an OpenAIError.
type OpenAIErrorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// openAIErrors answers a handler's errors (before its stream starts) in
// OpenAI's error format with the same HTTP status.
func openAIErrors(h fiber.Handler) fiber.Handler {
	return func(c *fiber.Ctx) error {
		err := h(c)
		if err == nil {
			return nil
		}
		status, msg := classify(err)
		typ := map[int]string{401: "authentication_error", 403: "permission_error", 404: "not_found_error",
			429: "rate_limit_error"}[status]
		switch {
		case typ != "":
		case status >= 500:
			typ = "api_error"
		default:
			typ = "invalid_request_error"
		}
		code := strings.ToLower(strings.ReplaceAll(http.StatusText(status), " ", "_"))
		return c.Status(status).JSON(OpenAIError{Code: status, Error: OpenAIErrorBody{Message: msg, Type: typ, Code: &code}})
	}
}
