// Package text converts Markdown and plain-text files: Markdown passes
// through (its front-matter title is kept as the title; convert.Run
// sanitizes it like every converter's output), plain text becomes
// paragraphs of escaped text.
package text

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/lorekb/lore/internal/convert"
)

// Converter reads .md, .markdown and .txt files.
type Converter struct{}

// Name implements convert.Converter.
func (Converter) Name() string { return "text" }

// Formats implements convert.Converter.
func (Converter) Formats() []string { return []string{"md", "markdown", "txt"} }

var frontMatterRe = regexp.MustCompile(`(?s)\A---\n(.*?)\n---\n`)
var fmTitleRe = regexp.MustCompile(`(?m)^title:\s*(.+?)\s*$`)

// Convert implements convert.Converter.
func (Converter) Convert(_ context.Context, in convert.Input) (*convert.Result, error) {
	data := bytes.TrimPrefix(in.Data, []byte("\ufeff"))
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, fmt.Errorf("%w: %s holds binary data, not text", convert.ErrCorrupt, in.Name)
	}
	s := string(data)
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	res := &convert.Result{Meta: map[string]any{}}
	if in.Ext() == "txt" {
		res.Markdown = convert.EscapeText(s) // plain text: nothing in it is markup
		return res, nil
	}
	if m := frontMatterRe.FindStringSubmatch(s); m != nil {
		if t := fmTitleRe.FindStringSubmatch(m[1]); t != nil {
			res.Title = strings.Trim(t[1], `"'`)
		}
		s = s[len(m[0]):]
	}
	res.Markdown = s
	return res, nil
}
