package activities

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/lorekb/lore/internal/cache"
	"github.com/lorekb/lore/internal/chatbudget"
	"github.com/lorekb/lore/internal/chatevent"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/llm"
	"go.temporal.io/sdk/temporal"
)

// KnowledgeSource is one cited document as the knowledge_sources event and
// the stored final message show it.
type KnowledgeSource = chatevent.Source

// PersistInput is a finished turn to store.
type PersistInput struct {
	ThreadID     string
	Turn         int
	Messages     []TurnMessage // assistant and tool messages of the turn, in order
	Final        string        // the answer text shown to the user (with any notice)
	Sources      []KnowledgeSource
	Extra        map[string]any
	ToolElapsed  map[string]int64
	TotalMs      int64
	SourceOffset int
	// Tokens (the model tokens of the turn) count against the daily chat
	// budget of the site, or of the tenant for a turn of no site
	// (internal/chatbudget), once the turn is stored.
	SiteID   int64
	TenantID int64
	Tokens   int64
}

// PersistResult tells the run whether summarizing can be skipped.
type PersistResult struct {
	Messages int // the thread's messages after the write (-1: unknown)
}

// Persist writes the assistant turn in the flat OpenAI-style format:
// intermediate assistant rows with tool_calls, tool rows with tool_call_id,
// then the final content row. Idempotent (see db.PersistTurn).
func (a *Chat) Persist(ctx context.Context, in PersistInput) (PersistResult, error) {
	texts, err := a.toolResultTexts(ctx, in.ThreadID, in.Messages)
	if err != nil {
		return PersistResult{Messages: -1}, err
	}
	rows := make([]db.TurnRow, 0, len(in.Messages)+1)
	for i, m := range in.Messages {
		switch {
		case m.Role == llm.RoleAssistant && len(m.ToolCalls) > 0:
			calls := make([]map[string]any, len(m.ToolCalls))
			for j, tc := range m.ToolCalls {
				calls[j] = map[string]any{"id": tc.ID, "type": "function",
					"function": map[string]string{"name": tc.Name, "arguments": tc.Arguments}, "elapsed_ms": in.ToolElapsed[tc.ID]}
			}
			b, _ := json.Marshal(calls)
			rows = append(rows, db.TurnRow{Role: m.Role, Content: m.Content, ToolCalls: string(b)})
		case m.Role == llm.RoleTool:
			content := m.Content
			if m.ToolRef {
				content = texts[i]
			}
			if m.Notice != "" {
				content = strings.TrimSpace(content + "\n\n" + m.Notice)
			}
			rows = append(rows, db.TurnRow{Role: m.Role, Content: content, ToolCallID: m.ToolCallID, ElapsedMS: in.ToolElapsed[m.ToolCallID]})
		}
	}
	srcs := in.Sources
	if srcs == nil {
		srcs = []KnowledgeSource{}
	}
	sb, _ := json.Marshal(srcs)
	eb, _ := json.Marshal(in.Extra)
	rows = append(rows, db.TurnRow{Role: llm.RoleAssistant, Content: in.Final, Sources: string(sb), Extra: string(eb), ElapsedMS: in.TotalMs})
	n, err := a.DB.PersistTurn(ctx, in.ThreadID, in.Turn, rows, in.SourceOffset)
	if err == nil && n >= 0 {
		// Counted only by the attempt that stored the turn, so a retried
		// activity never counts it twice.
		if ctr, ok := a.Cache.(cache.Counter); ok {
			if berr := chatbudget.Add(ctx, ctr, chatbudget.Scope(in.SiteID, in.TenantID), in.Tokens, time.Now()); berr != nil {
				a.Log.Warn("count chat tokens against the site's budget", "site_id", in.SiteID, "err", berr)
			}
		}
	}
	return PersistResult{Messages: n}, err
}

// SummarizeInput asks for conversation memory maintenance.
type SummarizeInput struct {
	ThreadID string
	TenantID int64
	Trigger  int
	KeepLast int
}

// Summarize replaces all but the last KeepLast messages with a summary when
// the thread holds more than Trigger non-system messages after the current
// summary; it returns whether it summarized.
func (a *Chat) Summarize(ctx context.Context, in SummarizeInput) (bool, error) {
	conv, err := a.DB.LoadContext(ctx, in.ThreadID)
	if err != nil {
		return false, err
	}
	msgs := conv.Messages
	if len(msgs) <= in.Trigger || len(msgs) <= in.KeepLast {
		return false, nil
	}
	cut := len(msgs) - in.KeepLast
	older := msgs[:cut]
	model, _, err := a.Models.ChatModel(ctx, in.TenantID)
	if err != nil {
		return false, temporal.NewNonRetryableApplicationError(err.Error(), ErrConfig, err)
	}
	req := llm.Request{Purpose: llm.PurposeSummarize, Messages: []llm.Message{{Role: llm.RoleSystem,
		Content: "Summarize the conversation so far in a few sentences, keeping facts the user may refer to later."}}}
	if conv.Summary != "" {
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleSystem, Content: conv.Summary})
	}
	for _, m := range older {
		if (m.Role == "user" || m.Role == "assistant") && m.Content != "" {
			req.Messages = append(req.Messages, llm.Message{Role: m.Role, Content: m.Content})
		}
	}
	out, err := model.Generate(ctx, req, nil)
	if err != nil {
		return false, a.upstreamFailure(ctx, "summarize", modelFailedNotice, err)
	}
	return true, a.DB.SaveSummary(ctx, in.ThreadID, out.Message.Content, msgs[cut].Position)
}
