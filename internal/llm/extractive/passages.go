package extractive

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/lorekb/lore/internal/analyze"
)

// --- passages ---

// passage is one search result: its citation number, title, the relevance
// its header gave and the analysis of its text (segments, units, whether it
// holds CJK text).
type passage struct {
	num   string
	title string
	// relevance is the search's share of the question's term weight found
	// in the passage (0..1), or -1 when the header did not say.
	relevance float64
	an        *analysis // the analysis of its title and text, from the cache
}

var headerRe = regexp.MustCompile(`^\[(\d+)\](?:\s(.*?))?(?:\s\(relevance ([0-9.]+)\))?$`)

// parsePassages reads the search tool's output format: passages separated
// by blank lines, each starting with a header line "[n] <title>
// (relevance r)", with a "[...]" line between non-adjacent fragments. Text
// before the first header (an instruction or "No relevant documents
// found.") yields no passages.
func parsePassages(content string) []passage {
	content = strings.ReplaceAll(strings.ReplaceAll(content, "\r\n", "\n"), "\r", "\n")
	var (
		out       []passage
		cur       *passage
		body      []string
		prevBlank = true
	)
	finish := func() {
		if cur != nil {
			cur.an = analysisOf(cur.title, strings.Join(body, "\n"))
			out = append(out, *cur)
		}
		cur, body = nil, nil
	}
	for _, line := range strings.Split(content, "\n") {
		trimmed := strings.TrimSpace(line)
		if prevBlank || cur == nil {
			if m := headerRe.FindStringSubmatch(trimmed); m != nil {
				finish()
				cur = &passage{num: m[1], title: strings.TrimSpace(m[2]), relevance: -1}
				if m[3] != "" {
					cur.relevance, _ = strconv.ParseFloat(m[3], 64)
				}
				prevBlank = false
				continue
			}
		}
		if cur != nil {
			body = append(body, line)
		}
		prevBlank = trimmed == ""
	}
	finish()
	return out
}

func hasCJK(s string) bool {
	for _, r := range s {
		if analyze.IsCJK(r) {
			return true
		}
	}
	return false
}
