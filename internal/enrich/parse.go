package enrich

import (
	"regexp"
	"strings"

	"github.com/lorekb/lore/internal/analyze"
)

// parsed is the text of a Markdown document by role: what a summary may
// quote (paragraphs, else list items), what names the document (front
// matter title, headings) and everything readable (for the tags).
type parsed struct {
	metaTitle  string
	headings   []string
	paragraphs []string
	items      []string // list items, quotes and table cells
}

var (
	imageRe      = regexp.MustCompile(`!\[([^\]]*)\]\([^)]*\)`)
	linkRe       = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	refLinkRe    = regexp.MustCompile(`\[([^\]]+)\]\[[^\]]*\]`)
	autoLinkRe   = regexp.MustCompile(`<(https?://[^>]+)>`)
	htmlTagRe    = regexp.MustCompile(`</?[a-zA-Z][^>]*>`)
	emphasisRe   = regexp.MustCompile(`(\*\*|__|~~)(.+?)(\*\*|__|~~)`)
	listMarkRe   = regexp.MustCompile(`^(?:[-*+•]|\d{1,3}[.)])\s+`)
	headingRe    = regexp.MustCompile(`^(#{1,6})\s+(.*?)[\s#]*$`)
	setextRe     = regexp.MustCompile(`^(=+|-+)\s*$`)
	linkDefRe    = regexp.MustCompile(`^\[[^\]]+\]:\s`)
	frontTitleRe = regexp.MustCompile(`(?m)^title:\s*["']?(.+?)["']?\s*$`)
)

// inline removes Markdown inline syntax, keeping the words.
func inline(s string) string {
	s = imageRe.ReplaceAllString(s, "$1")
	s = linkRe.ReplaceAllString(s, "$1")
	s = refLinkRe.ReplaceAllString(s, "$1")
	s = autoLinkRe.ReplaceAllString(s, "$1")
	s = htmlTagRe.ReplaceAllString(s, "")
	for i := 0; i < 3 && emphasisRe.MatchString(s); i++ {
		s = emphasisRe.ReplaceAllString(s, "$2")
	}
	s = strings.ReplaceAll(s, "`", "")
	return strings.Join(strings.Fields(s), " ")
}

// parse splits Markdown into headings, paragraphs and items. Fenced code,
// HTML comments and link definitions are left out.
func parse(md string) *parsed {
	md = strings.ReplaceAll(strings.ReplaceAll(md, "\r\n", "\n"), "\r", "\n")
	md = strings.TrimPrefix(md, "\ufeff")
	d := &parsed{}
	if strings.HasPrefix(md, "---\n") {
		if end := strings.Index(md[4:], "\n---"); end >= 0 {
			if m := frontTitleRe.FindStringSubmatch(md[4 : 4+end]); m != nil {
				d.metaTitle = inline(m[1])
			}
			md = md[4+end+4:]
		}
	}
	var para []string
	flush := func() {
		if len(para) > 0 {
			if t := inline(strings.Join(para, " ")); t != "" {
				d.paragraphs = append(d.paragraphs, t)
			}
			para = nil
		}
	}
	fence := ""
	comment := false
	for _, line := range strings.Split(md, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case fence != "":
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			continue
		case comment:
			comment = !strings.Contains(t, "-->")
			continue
		case strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~"):
			flush()
			fence = t[:3]
			continue
		case strings.HasPrefix(t, "<!--"):
			flush()
			comment = !strings.Contains(t, "-->")
			continue
		}
		if m := headingRe.FindStringSubmatch(t); m != nil {
			flush()
			if h := inline(m[2]); h != "" {
				d.headings = append(d.headings, h)
			}
			continue
		}
		if setextRe.MatchString(t) && len(para) == 1 {
			// "Title\n=====": the paragraph line above was a heading.
			if h := inline(para[0]); h != "" {
				d.headings = append(d.headings, h)
			}
			para = nil
			continue
		}
		switch {
		case t == "" || linkDefRe.MatchString(t) || strings.Trim(t, "-*_ ") == "":
			flush()
		case strings.HasPrefix(t, "|"):
			flush()
			for _, cell := range strings.Split(strings.Trim(t, "|"), "|") {
				if c := inline(cell); c != "" && strings.Trim(c, "-: ") != "" {
					d.items = append(d.items, c)
				}
			}
		case listMarkRe.MatchString(t) || strings.HasPrefix(t, ">"):
			flush()
			t = strings.TrimSpace(strings.TrimLeft(listMarkRe.ReplaceAllString(t, ""), "> "))
			if it := inline(t); it != "" {
				d.items = append(d.items, it)
			}
		case strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "\t"):
			if len(para) == 0 {
				continue // an indented code block
			}
			para = append(para, t)
		default:
			para = append(para, t)
		}
	}
	flush()
	return d
}

// title is the front matter title, else the first heading, else the first
// sentence, cut to MaxTitleRunes.
func (d *parsed) title() string {
	if d.metaTitle != "" {
		return Cut(d.metaTitle, MaxTitleRunes)
	}
	if len(d.headings) > 0 {
		return Cut(d.headings[0], MaxTitleRunes)
	}
	for _, group := range [][]string{d.paragraphs, d.items} {
		for _, p := range group {
			if ss := analyze.Sentences(p); len(ss) > 0 {
				return Cut(strings.TrimRight(ss[0], ".!?。！？"), MaxTitleRunes)
			}
		}
	}
	return ""
}
