package activities

import (
	"context"
	"encoding/json"
	"time"

	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/internal/enrich"
)

// generateTimeout bounds the chat model's call for one imported file.
const generateTimeout = 90 * time.Second

// generate fills the fields the import asks for (spec.Generate) from the
// converted Markdown: with the tenant's chat model when one is configured,
// else (or when the model fails: the file still imports) extractively. It
// returns the summary and the tags as stored (a JSON array) and notes in
// meta what generated them.
func (a *Import) generate(ctx context.Context, spec ImportSpec, md string, meta map[string]any) (string, string) {
	if len(spec.Generate) == 0 {
		return "", "[]"
	}
	req := enrich.Request{Content: enrich.Lead(md), Fields: spec.Generate}
	res, by := enrich.Result{}, "extractive"
	done := false
	if ai, err := a.Models.AIConfig(ctx, spec.TenantID); err == nil && !deps.LocalChat(ai.Chat) {
		m, _, err := a.Models.ChatModel(ctx, spec.TenantID)
		if err == nil {
			mctx, cancel := context.WithTimeout(ctx, generateTimeout)
			res, err = enrich.WithModel(mctx, m, req)
			cancel()
		}
		if err == nil {
			by, done = "model", true
		} else {
			meta["generate_error"] = enrich.Cut(err.Error(), 300)
		}
	}
	if !done {
		res = enrich.Extractive(req)
	}
	meta["generated_by"] = by
	summary, tags := "", "[]"
	if res.Summary != nil {
		summary = *res.Summary
	}
	if res.Tags != nil {
		b, _ := json.Marshal(res.Tags)
		tags = string(b)
	}
	return summary, tags
}
