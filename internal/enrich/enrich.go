// Package enrich derives a document's metadata fields (summary, tags, title)
// from its Markdown content: the reference's documents:aiGenerate.
//
// Two generators share one request and result shape. Extractive runs in
// process and needs no model: the summary is the leading sentences of the
// document's prose, the tags are its most salient terms (counted with the
// keyword analyzer of internal/analyze, the same terms the index stores,
// headings weighing more than body text), and the title is the first
// heading. WithModel asks the tenant's chat model for a JSON object with the
// requested fields and checks what comes back. Both bound their output the
// same way, so a caller cannot tell a long answer from a short one by size.
package enrich

import (
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/lorekb/lore/internal/analyze"
)

// Fields a request may ask for.
const (
	FieldSummary = "summary"
	FieldTags    = "tags"
	FieldTitle   = "title"
)

// Defaults and bounds (the reference's: a 150-character summary, 8 tags).
const (
	DefaultSummaryMax = 150
	DefaultTagsMax    = 8
	MaxTitleRunes     = 120
	MaxTagRunes       = 40
)

// MaxContent bounds the content generation reads (runes): the leading
// part carries the summary and the salient terms.
const MaxContent = 100000

// Lead is the first MaxContent runes of s.
func Lead(s string) string {
	if len(s) <= MaxContent {
		return s
	}
	n := 0
	for i := range s {
		if n == MaxContent {
			return s[:i]
		}
		n++
	}
	return s
}

// Request is what to generate from Content.
type Request struct {
	Content    string
	Fields     []string
	SummaryMax int // runes; 0 means DefaultSummaryMax
	TagsMax    int // 0 means DefaultTagsMax
}

// Result holds the requested fields; a field not requested is nil.
type Result struct {
	Summary *string
	Tags    []string // nil when not requested, empty when nothing was found
	Title   *string
}

// ErrNoJSON is a model answer without a JSON object in it.
var ErrNoJSON = errors.New("the chat model did not answer with a JSON object")

// Wants reports whether the request asks for the field.
func (r Request) Wants(field string) bool {
	for _, f := range r.Fields {
		if f == field {
			return true
		}
	}
	return false
}

func (r Request) summaryMax() int {
	if r.SummaryMax > 0 {
		return r.SummaryMax
	}
	return DefaultSummaryMax
}

func (r Request) tagsMax() int {
	if r.TagsMax > 0 {
		return r.TagsMax
	}
	return DefaultTagsMax
}

// Extractive generates the requested fields locally.
func Extractive(req Request) Result {
	doc := parse(req.Content)
	var res Result
	if req.Wants(FieldSummary) {
		s := summarize(doc, req.summaryMax())
		res.Summary = &s
	}
	if req.Wants(FieldTags) {
		res.Tags = salientTerms(doc, req.tagsMax())
	}
	if req.Wants(FieldTitle) {
		t := doc.title()
		res.Title = &t
	}
	return res
}

// Cut shortens s to at most max runes, at a word boundary when there is one
// in its second half, and marks the cut with "…".
func Cut(s string, max int) string {
	if max <= 0 || utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	end := max - 1
	for i := end; i > max/2; i-- {
		if unicode.IsSpace(r[i]) {
			end = i
			break
		}
	}
	return strings.TrimRightFunc(string(r[:end]), func(c rune) bool { return unicode.IsSpace(c) || unicode.IsPunct(c) }) + "…"
}

// summarize joins the leading sentences of the prose (list items when the
// document has no paragraphs) while they fit in max runes; a first
// sentence longer than that is cut.
func summarize(d *parsed, max int) string {
	paras := d.paragraphs
	if len(paras) == 0 {
		paras = d.items
	}
	var out []string
	used := 0
	for _, p := range paras {
		for _, s := range analyze.Sentences(p) {
			n := utf8.RuneCountInString(s)
			sep := 0
			if len(out) > 0 && !endsCJK(out[len(out)-1]) {
				sep = 1
			}
			if used+sep+n > max {
				if len(out) == 0 {
					return Cut(s, max)
				}
				return joinSentences(out)
			}
			out = append(out, s)
			used += sep + n
		}
	}
	if len(out) == 0 && len(d.headings) > 0 {
		return Cut(d.headings[0], max)
	}
	return joinSentences(out)
}

// joinSentences joins with a space, except after a CJK sentence.
func joinSentences(ss []string) string {
	var b strings.Builder
	for i, s := range ss {
		if i > 0 && !endsCJK(ss[i-1]) {
			b.WriteByte(' ')
		}
		b.WriteString(s)
	}
	return b.String()
}

func endsCJK(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return strings.ContainsRune("。！？；", r)
}
