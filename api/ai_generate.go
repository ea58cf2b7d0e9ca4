package api

import (
	"context"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/internal/enrich"
)

// maxGenerateContent bounds the content of documents:aiGenerate (runes):
// the reference's editor sends the leading part of the article; the local
// generator reads all of it, a model its first enrich.MaxModelInput runes.
const maxGenerateContent = enrich.MaxContent

// aiGenerateTimeout bounds one model call of documents:aiGenerate.
const aiGenerateTimeout = 90 * time.Second

// AIGenerateRequest is the body of documents:aiGenerate (the reference's
// AiGenerateRequest, plus title and the choice of generator).
type AIGenerateRequest struct {
	Content          string   `json:"content" validate:"required" doc:"the document's Markdown (at most 100000 characters)"`
	Fields           []string `json:"fields" validate:"required,min=1,max=3,dive,oneof=summary tags title"`
	SummaryMaxLength *int     `json:"summary_max_length" required:"false" validate:"omitempty,min=20,max=2000" doc:"characters, default 150"`
	TagsMaxCount     *int     `json:"tags_max_count" required:"false" validate:"omitempty,min=1,max=20" doc:"default 8"`
	Method           string   `json:"method" required:"false" validate:"omitempty,oneof=auto extractive model" doc:"auto (default): the tenant's chat model, or the extractive generator when the chat provider is the built-in one; extractive: always local; model: the chat model or 422"`
}

// AIGenerateResponse is the generated fields (the reference's
// AiGenerateResponse, plus title); a field not asked for is null.
type AIGenerateResponse struct {
	Summary   *string  `json:"summary"`
	Tags      []string `json:"tags"`
	Title     *string  `json:"title"`
	Generator string   `json:"generator" enum:"extractive,model" doc:"extractive: leading sentences and salient terms, computed locally; model: the tenant's chat model"`
	Model     string   `json:"model" doc:"the chat model's name (generator model)"`
}

func (s *Server) aiGenerateRoutes() []Route {
	return []Route{
		{Surface: Admin, Method: http.MethodPost, Path: "/documents:aiGenerate", Tag: "documents", Perm: EditorUp,
			Summary: "Generate a summary, tags and a title for given content",
			Description: "With the tenant's chat model (ai-config chat), or locally when the chat provider is the built-in extractive one " +
				"(or method=extractive): the summary is the leading sentences of the prose within summary_max_length characters, the tags the " +
				"most salient terms (headings weigh more than body text), the title the front matter title or first heading. " +
				"A model that fails or answers without a JSON object gives 502 with its error (secrets removed); nothing is stored.",
			Body: AIGenerateRequest{}, Response: AIGenerateResponse{}, Handler: s.aiGenerate},
	}
}

func (s *Server) aiGenerate(c *fiber.Ctx) error {
	var in AIGenerateRequest
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	if strings.TrimSpace(in.Content) == "" {
		return Invalid("content: must not be blank")
	}
	if !utf8.ValidString(in.Content) {
		return Invalid("content: not valid UTF-8")
	}
	if n := utf8.RuneCountInString(in.Content); n > maxGenerateContent {
		return Invalid("content: at most %d characters (got %d); send the leading part", maxGenerateContent, n)
	}
	req := enrich.Request{Content: in.Content, Fields: in.Fields}
	if in.SummaryMaxLength != nil {
		req.SummaryMax = *in.SummaryMaxLength
	}
	if in.TagsMaxCount != nil {
		req.TagsMax = *in.TagsMaxCount
	}
	ctx := c.UserContext()
	ai, err := s.d.AIConfig(ctx, cfgTenant(c))
	if err != nil {
		return err
	}
	local := deps.LocalChat(ai.Chat)
	switch {
	case in.Method == "model" && local:
		return Invalid("method: model, but the chat provider is the built-in %q (set ai-config chat, or use auto or extractive)", ai.Chat.Provider)
	case in.Method == "extractive" || local:
		return ok(c, generated(enrich.Extractive(req), "extractive", ""))
	}
	m, _, err := s.d.ChatModel(ctx, cfgTenant(c))
	if err != nil {
		return Invalid("chat.provider: %v", err)
	}
	mctx, cancel := context.WithTimeout(ctx, aiGenerateTimeout)
	defer cancel()
	res, err := enrich.WithModel(mctx, m, req)
	if err != nil {
		return Errf(http.StatusBadGateway, "the chat model failed: %s", providerError(err, ai.Chat))
	}
	return ok(c, generated(res, "model", ai.Chat.Model))
}

func generated(r enrich.Result, generator, model string) AIGenerateResponse {
	return AIGenerateResponse{Summary: r.Summary, Tags: r.Tags, Title: r.Title, Generator: generator, Model: model}
}

// providerError is a provider's error as shown to an administrator: the
// section's key (and its masked form's clear parts) removed, one line, at
// most 300 characters.
func providerError(err error, m deps.ModelConfig) string {
	msg := strings.Join(strings.Fields(redact(err.Error(), m.APIKey)), " ")
	return enrich.Cut(msg, 300)
}
