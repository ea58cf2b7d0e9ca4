package corpus

import (
	"fmt"
	"strings"
)

// Split cuts the files into at least minDocs documents where the corpus
// allows it: sections (heading boundaries) are packed into documents of
// about total/minDocs bytes, and sections bigger than that are cut on
// paragraph boundaries (never inside a fenced code block). It returns fewer
// documents only when paragraphs cannot be cut finer.
func Split(files []File, minDocs int) []Doc {
	total := 0
	for _, f := range files {
		total += len(f.Text)
	}
	minDocs = max(minDocs, 1)
	target := max(total/minDocs, 200)
	var docs []Doc
	for range 40 {
		docs = docs[:0]
		for _, f := range files {
			docs = append(docs, packFile(f, target)...)
		}
		if len(docs) >= minDocs || target <= 200 {
			break
		}
		target = max(200, int(float64(target)*float64(len(docs))/float64(minDocs)*0.95))
	}
	return docs
}

// Pick returns n documents spread evenly over docs (all when n <= 0 or n
// >= len(docs)), so a capped run still samples every source file.
func Pick(docs []Doc, n int) []Doc {
	if n <= 0 || n >= len(docs) {
		return docs
	}
	out := make([]Doc, 0, n)
	for i := range n {
		out = append(out, docs[i*len(docs)/n])
	}
	return out
}

func packFile(f File, target int) []Doc {
	var units []string
	for _, sec := range sections(f.Text) {
		if len(sec) <= target {
			units = append(units, sec)
			continue
		}
		units = append(units, paragraphs(sec)...)
	}
	var docs []Doc
	var cur strings.Builder
	flush := func() {
		text := strings.TrimSpace(cur.String())
		cur.Reset()
		if text == "" {
			return
		}
		title := f.Title
		if h := firstHeading(text); h != "" && h != f.Title {
			title = f.Title + " — " + h
		}
		docs = append(docs, Doc{Title: clip(fmt.Sprintf("%s (%d)", title, len(docs)+1), 200), Content: text})
	}
	for _, u := range units {
		if cur.Len() > 0 && cur.Len()+len(u)+2 > target {
			flush()
		}
		if cur.Len() > 0 {
			cur.WriteString("\n\n")
		}
		cur.WriteString(u)
	}
	flush()
	return docs
}

func isFence(line string) bool {
	t := strings.TrimSpace(line)
	return strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")
}

func isHeading(line string) bool {
	if !strings.HasPrefix(line, "#") {
		return false
	}
	t := strings.TrimLeft(line, "#")
	return len(line)-len(t) <= 6 && (t == "" || t[0] == ' ')
}

// sections splits Markdown before every heading outside fenced code.
func sections(text string) []string {
	var out []string
	for _, s := range fencedParts(text, isHeading, false) {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// paragraphs splits on blank lines outside fenced code.
func paragraphs(text string) []string {
	return fencedParts(text, func(line string) bool { return strings.TrimSpace(line) == "" }, true)
}

// fencedParts cuts text before every line outside fenced code for which cut
// holds; with drop that line belongs to neither part (a blank line between
// paragraphs), else it opens the next one (a heading). Empty parts are left
// out.
func fencedParts(text string, cut func(string) bool, drop bool) []string {
	var out, cur []string
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.Join(cur, "\n"))
			cur = cur[:0]
		}
	}
	fence := false
	for _, line := range strings.Split(text, "\n") {
		if isFence(line) {
			fence = !fence
		}
		if !fence && cut(line) {
			flush()
			if drop {
				continue
			}
		}
		cur = append(cur, line)
	}
	flush()
	return out
}

func firstHeading(text string) string {
	for _, line := range strings.SplitN(text, "\n", 40) {
		if isHeading(line) {
			if h := strings.TrimSpace(strings.TrimLeft(line, "#")); h != "" {
				return clip(h, 120)
			}
		}
	}
	return ""
}
