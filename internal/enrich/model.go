package enrich

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/lorekb/lore/internal/llm"
)

// MaxModelInput bounds the content sent to a chat model (runes): the
// leading part carries what a summary and tags need, and the prompt stays
// within any model's context.
const MaxModelInput = 12000

// maxAnswerTokens bounds the model's answer: a summary, a title and a few
// tags fit well within it.
const maxAnswerTokens = 1024

// Prompt builds the messages that ask a chat model for the fields.
func Prompt(req Request) []llm.Message {
	var lines []string
	if req.Wants(FieldSummary) {
		lines = append(lines, fmt.Sprintf(`- "summary": a plain, objective summary of the content in at most %d characters, in the content's language; do not begin with "This document" or "This article".`, req.summaryMax()))
	}
	if req.Wants(FieldTags) {
		lines = append(lines, fmt.Sprintf(`- "tags": a JSON array of at most %d short keyword tags (one to three words each) naming the content's main topics.`, req.tagsMax()))
	}
	if req.Wants(FieldTitle) {
		lines = append(lines, fmt.Sprintf(`- "title": a short title for the content, at most %d characters.`, MaxTitleRunes))
	}
	content := req.Content
	if utf8.RuneCountInString(content) > MaxModelInput {
		content = string([]rune(content)[:MaxModelInput])
	}
	return []llm.Message{
		{Role: llm.RoleSystem, Content: "You are an editor of documentation. From the content the user gives, produce the requested fields.\n" +
			"Answer with one JSON object holding only these fields and nothing else:\n" + strings.Join(lines, "\n")},
		{Role: llm.RoleUser, Content: "Content:\n\n" + content},
	}
}

// WithModel asks the chat model m for the requested fields. The answer must
// hold a JSON object; its fields are checked and bounded like Extractive's
// (a missing field is an empty summary or title, no tags).
func WithModel(ctx context.Context, m llm.Model, req Request) (Result, error) {
	temp := 0.3
	out, err := m.Generate(ctx, llm.Request{Messages: Prompt(req), Temperature: &temp, MaxTokens: maxAnswerTokens}, nil)
	if err != nil {
		return Result{}, err
	}
	return ParseAnswer(out.Message.Content, req)
}

// ParseAnswer reads a model's answer: the JSON object in it (bare, in a
// code fence, or after some prose).
func ParseAnswer(text string, req Request) (Result, error) {
	obj, err := firstObject(text)
	if err != nil {
		return Result{}, err
	}
	var res Result
	str := func(key string, max int) *string {
		s, _ := obj[key].(string)
		s = Cut(strings.Join(strings.Fields(s), " "), max)
		return &s
	}
	if req.Wants(FieldSummary) {
		res.Summary = str("summary", req.summaryMax())
	}
	if req.Wants(FieldTitle) {
		res.Title = str("title", MaxTitleRunes)
	}
	if req.Wants(FieldTags) {
		res.Tags = []string{}
		seen := map[string]bool{}
		var raw []any
		switch v := obj["tags"].(type) {
		case []any:
			raw = v
		case string: // "a, b, c"
			for _, t := range strings.Split(v, ",") {
				raw = append(raw, t)
			}
		}
		for _, v := range raw {
			t, ok := v.(string)
			t = strings.Trim(strings.Join(strings.Fields(t), " "), `#"'`)
			if !ok || t == "" || utf8.RuneCountInString(t) > MaxTagRunes || seen[strings.ToLower(t)] {
				continue
			}
			seen[strings.ToLower(t)] = true
			res.Tags = append(res.Tags, t)
			if len(res.Tags) == req.tagsMax() {
				break
			}
		}
	}
	return res, nil
}

// firstObject decodes the whole text as a JSON object, else the first
// balanced {...} in it (after a code fence opening, if any).
func firstObject(text string) (map[string]any, error) {
	text = strings.TrimSpace(text)
	var obj map[string]any
	if json.Unmarshal([]byte(text), &obj) == nil && obj != nil {
		return obj, nil
	}
	from := 0
	if i := strings.Index(text, "```"); i >= 0 {
		from = i + 3
	}
	for from < len(text) {
		i := strings.IndexByte(text[from:], '{')
		if i < 0 {
			break
		}
		start := from + i
		obj = nil
		if json.NewDecoder(strings.NewReader(text[start:])).Decode(&obj) == nil && obj != nil {
			return obj, nil
		}
		from = start + 1
	}
	return nil, ErrNoJSON
}
