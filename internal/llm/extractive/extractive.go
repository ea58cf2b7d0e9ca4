// Package extractive is the built-in [llm.Model] that needs no network and
// no model weights. It makes a fresh install give a working, cited chat: on a
// new question it calls the knowledge-base search tool with the question, and
// once the search results are in it answers with the sentences of the
// returned passages that best support the question, each cited as [n] with
// the number of the passage it comes from.
//
// Whether it answers: the chat's search heads each passage with its
// relevance, the share of the question's term weight (idf over the whole
// site) that the passage's section holds. When no passage reaches
// AbstainBelow it answers NotFoundAnswer and cites nothing. A question
// written in two scripts (a Chinese question naming English commands) is
// judged by the terms a passage could hold: an English passage cannot hold
// the question's Chinese words, so its relevance is the share of the
// question's other terms it holds (see relevanceOf).
//
// What it quotes: every sentence of every passage the search judged relevant
// is scored by its support for the question (see support), the search's
// order being a mild prior; each part of a question that asks several
// things ("How do I X, and how do I Y?") gets its best-supported sentence,
// and a few more are added while they add to the answer. Headings are read
// as what the sentences under them are about, never quoted; code is quoted
// as a bounded block after the sentence that introduces it, for a question
// that asks how to do something.
//
// Everything it does is deterministic, so its output is reproducible in
// tests and safe to replay in Temporal workflows.
package extractive

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"github.com/lorekb/lore/internal/analyze"
	"github.com/lorekb/lore/internal/llm"
)

// NotFoundAnswer is the reply when the search returned no passages. It is
// exported so callers and tests can recognise it.
const NotFoundAnswer = "I could not find this in the documentation of this site."

// SummaryPrefix starts every summary, marking it as a summary when it is
// later fed back to the model as context.
const SummaryPrefix = "Summary of earlier conversation: "

const (
	maxSummaryRunes = 600
	argsPieceRunes  = 16 // size of streamed tool-call argument pieces
)

// Model is the extractive responder. The zero value is ready to use.
type Model struct{}

var _ llm.Model = (*Model)(nil)

// New returns an extractive Model. It exists for symmetry with the network
// backends' constructors.
func New() *Model { return &Model{} }

// Generate answers one turn as described in the package documentation. It
// never fails on unusual input; it only returns an error when ctx is done.
func (m *Model) Generate(ctx context.Context, req llm.Request, onDelta func(llm.Delta)) (llm.Result, error) {
	if err := ctx.Err(); err != nil {
		return llm.Result{}, err
	}
	emit := func(d llm.Delta) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if onDelta != nil {
			onDelta(d)
		}
		return nil
	}
	usage := llm.Usage{InputTokens: inputTokens(req.Messages)}

	if req.Purpose == llm.PurposeSummarize {
		return streamText(summarize(req.Messages), usage, emit)
	}

	lastUser := -1
	for i, msg := range req.Messages {
		if msg.Role == llm.RoleUser {
			lastUser = i
		}
	}
	query := ""
	if lastUser >= 0 {
		query = strings.TrimSpace(req.Messages[lastUser].Content)
	}
	var toolResults []string
	for _, msg := range req.Messages[lastUser+1:] {
		if msg.Role == llm.RoleTool {
			toolResults = append(toolResults, msg.Content)
		}
	}

	if offersSearch(req.Tools) && len(toolResults) == 0 && query != "" {
		return callSearch(query, len(req.Messages), usage, emit)
	}

	var passages []passage
	for _, content := range toolResults {
		passages = append(passages, parsePassages(content)...)
	}
	return streamText(answer(query, passages), usage, emit)
}

// Answer is the reply Generate gives to query once the search tool has
// returned toolResult (the text the chat's search hands the model), for
// tools that replay stored search results, such as make eval's calibration
// (loreeval -replay).
func Answer(query, toolResult string) string {
	return answer(strings.TrimSpace(query), parsePassages(toolResult))
}

// offersSearch reports whether the knowledge-base search tool is available.
func offersSearch(tools []llm.ToolDef) bool {
	for _, t := range tools {
		if t.Name == llm.SearchToolName {
			return true
		}
	}
	return false
}

// callSearch returns (and streams) a single search tool call for query. The
// ID depends only on the query and the conversation length, so a replayed
// turn produces the same call.
func callSearch(query string, msgCount int, usage llm.Usage, emit func(llm.Delta) error) (llm.Result, error) {
	sum := sha256.Sum256([]byte(query + "\x00" + strconv.Itoa(msgCount)))
	id := "call_" + hex.EncodeToString(sum[:6])

	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(map[string]string{"query": query}) // cannot fail for a string map
	args := strings.TrimSuffix(buf.String(), "\n")

	if err := emit(llm.Delta{ToolCall: &llm.ToolCallDelta{Index: 0, ID: id, Name: llm.SearchToolName}}); err != nil {
		return llm.Result{}, err
	}
	for _, piece := range runeChunks(args, argsPieceRunes) {
		if err := emit(llm.Delta{ToolCall: &llm.ToolCallDelta{Index: 0, Arguments: piece}}); err != nil {
			return llm.Result{}, err
		}
	}
	usage.OutputTokens = llm.EstimateTokens(llm.SearchToolName + args)
	return llm.Result{
		Message: llm.Message{
			Role:      llm.RoleAssistant,
			ToolCalls: []llm.ToolCall{{ID: id, Name: llm.SearchToolName, Arguments: args}},
		},
		Usage:        usage,
		FinishReason: llm.FinishToolCalls,
	}, nil
}

// streamText emits text as word-sized deltas and returns it as the
// assistant message.
func streamText(text string, usage llm.Usage, emit func(llm.Delta) error) (llm.Result, error) {
	for _, w := range words(text) {
		if err := emit(llm.Delta{Text: w}); err != nil {
			return llm.Result{}, err
		}
	}
	usage.OutputTokens = llm.EstimateTokens(text)
	return llm.Result{
		Message:      llm.Message{Role: llm.RoleAssistant, Content: text},
		Usage:        usage,
		FinishReason: llm.FinishStop,
	}, nil
}

func inputTokens(msgs []llm.Message) int {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(m.Content)
		for _, tc := range m.ToolCalls {
			b.WriteString(tc.Name)
			b.WriteString(tc.Arguments)
		}
	}
	return llm.EstimateTokens(b.String())
}

// --- summary ---

var citationRe = regexp.MustCompile(`\s*\[\d+\]`)

// summarize keeps the first sentence of each user and assistant message, in
// order, labelled by speaker, within maxSummaryRunes. Citation markers are
// dropped because passage numbers do not carry over to later turns.
func summarize(msgs []llm.Message) string {
	var parts []string
	for _, msg := range msgs {
		var who string
		switch msg.Role {
		case llm.RoleUser:
			who = "User: "
		case llm.RoleAssistant:
			who = "Assistant: "
		default:
			continue
		}
		text := citationRe.ReplaceAllString(msg.Content, "")
		first := ""
		for _, block := range blocks(text) {
			if s := analyze.Sentences(block); len(s) > 0 {
				first = s[0]
				break
			}
		}
		if first == "" {
			continue
		}
		parts = append(parts, who+first)
	}
	if len(parts) == 0 {
		return SummaryPrefix + "(nothing to summarize)"
	}
	return SummaryPrefix + truncateRunes(strings.Join(parts, " "), maxSummaryRunes)
}
