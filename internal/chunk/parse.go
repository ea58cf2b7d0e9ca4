package chunk

import (
	"strings"
)

// heading is one level of the current heading path.
type heading struct {
	level int
	title string
}

// parse splits a document into sections of blocks. It recognises ATX
// headings (# to ######), single-line setext headings (=== and --- under a
// line), fenced code blocks (``` and ~~~, inside which nothing is a heading)
// and YAML front matter, which is kept as a block of its own.
func parse(doc string) []section {
	lines := strings.Split(doc, "\n")
	var (
		secs  []section
		cur   section
		stack []heading
		para  []string
	)
	flushPara := func() {
		if len(para) > 0 {
			cur.blocks = append(cur.blocks, block{text: strings.Join(para, "\n")})
			para = para[:0]
		}
	}
	startSection := func(level int, title string) {
		flushPara()
		if len(cur.blocks) > 0 {
			secs = append(secs, cur)
		}
		for len(stack) > 0 && stack[len(stack)-1].level >= level {
			stack = stack[:len(stack)-1]
		}
		if title != "" {
			stack = append(stack, heading{level: level, title: title})
		}
		cur = section{heading: headingPath(stack)}
	}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if i == 0 && strings.TrimRight(line, " \t") == "---" {
			if end := frontMatterEnd(lines); end > 0 {
				cur.blocks = append(cur.blocks, block{
					text:   strings.Join(lines[:end+1], "\n"),
					fenced: true, open: lines[0], shut: lines[end], inner: lines[1:end],
				})
				i = end
				continue
			}
		}
		if ch, n, ok := openFence(line); ok {
			flushPara()
			j := i + 1
			for j < len(lines) && !closesFence(lines[j], ch, n) {
				j++
			}
			b := block{fenced: true, open: line}
			if j < len(lines) {
				b.shut = lines[j]
				b.inner = lines[i+1 : j]
				b.text = strings.Join(lines[i:j+1], "\n")
			} else {
				b.inner = lines[i+1:]
				b.text = strings.Join(lines[i:], "\n")
			}
			cur.blocks = append(cur.blocks, b)
			i = j
			continue
		}
		if level, title, ok := atxHeading(line); ok {
			startSection(level, title)
			continue
		}
		if level, ok := setextUnderline(line); ok && len(para) == 1 && !startsContainer(para[0]) {
			title := strings.TrimSpace(para[0])
			para = para[:0]
			startSection(level, title)
			continue
		}
		if strings.TrimSpace(line) == "" || isThematicBreak(line) {
			flushPara()
			continue
		}
		para = append(para, line)
	}
	flushPara()
	if len(cur.blocks) > 0 {
		secs = append(secs, cur)
	}
	return secs
}

// headingPath joins the titles of the heading stack.
func headingPath(stack []heading) string {
	titles := make([]string, len(stack))
	for i, h := range stack {
		titles[i] = h.title
	}
	return strings.Join(titles, headingSep)
}

// frontMatterEnd returns the index of the line closing YAML front matter
// opened on line 0, or 0 when there is none.
func frontMatterEnd(lines []string) int {
	for j := 1; j < len(lines); j++ {
		if t := strings.TrimRight(lines[j], " \t"); t == "---" || t == "..." {
			return j
		}
	}
	return 0
}

// leadingSpaces counts the spaces that indent line.
func leadingSpaces(line string) int {
	n := 0
	for n < len(line) && line[n] == ' ' {
		n++
	}
	return n
}

// atxHeading parses "# Title" style headings (up to three spaces of indent,
// one to six '#', then a space or the end of the line; a closing run of '#'
// is dropped).
func atxHeading(line string) (level int, title string, ok bool) {
	ind := leadingSpaces(line)
	if ind > 3 {
		return 0, "", false
	}
	rest := line[ind:]
	for level < len(rest) && rest[level] == '#' {
		level++
	}
	if level == 0 || level > 6 {
		return 0, "", false
	}
	rest = rest[level:]
	if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
		return 0, "", false
	}
	title = strings.TrimSpace(rest)
	if t := strings.TrimRight(title, "#"); t == "" {
		title = ""
	} else if t != title && (strings.HasSuffix(t, " ") || strings.HasSuffix(t, "\t")) {
		title = strings.TrimSpace(t)
	}
	return level, title, true
}

// setextUnderline recognises a line of '=' (level 1) or '-' (level 2), at
// least two long, that turns the single line before it into a heading.
func setextUnderline(line string) (int, bool) {
	if leadingSpaces(line) > 3 {
		return 0, false
	}
	t := strings.TrimSpace(line)
	if len(t) < 2 {
		return 0, false
	}
	switch {
	case strings.Trim(t, "=") == "":
		return 1, true
	case strings.Trim(t, "-") == "":
		return 2, true
	}
	return 0, false
}

// startsContainer reports whether line begins a list item or block quote,
// which a setext underline cannot turn into a heading.
func startsContainer(line string) bool {
	t := strings.TrimLeft(line, " \t")
	if t == "" {
		return false
	}
	switch t[0] {
	case '>':
		return true
	case '-', '*', '+':
		return len(t) == 1 || t[1] == ' ' || t[1] == '\t'
	}
	i := 0
	for i < len(t) && i < 9 && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	return i > 0 && i < len(t) && (t[i] == '.' || t[i] == ')')
}

// isThematicBreak recognises ---, *** and ___ rules (spaces allowed between).
func isThematicBreak(line string) bool {
	if leadingSpaces(line) > 3 {
		return false
	}
	var ch byte
	n := 0
	for i := 0; i < len(line); i++ {
		switch c := line[i]; c {
		case ' ', '\t':
		case '-', '*', '_':
			if ch != 0 && c != ch {
				return false
			}
			ch = c
			n++
		default:
			return false
		}
	}
	return n >= 3
}

// openFence recognises the opening line of a fenced code block and returns
// its fence character and length. Any indentation is accepted so that fences
// nested in list items still protect their content from heading detection.
func openFence(line string) (byte, int, bool) {
	t := strings.TrimLeft(line, " \t")
	if len(t) < 3 || (t[0] != '`' && t[0] != '~') {
		return 0, 0, false
	}
	ch := t[0]
	n := 0
	for n < len(t) && t[n] == ch {
		n++
	}
	if n < 3 {
		return 0, 0, false
	}
	if ch == '`' && strings.IndexByte(t[n:], '`') >= 0 {
		return 0, 0, false // inline code such as ```x``` is not a fence
	}
	return ch, n, true
}

// closesFence reports whether line closes a fence of n ch characters.
func closesFence(line string, ch byte, n int) bool {
	t := strings.TrimSpace(line)
	if len(t) < n {
		return false
	}
	for i := 0; i < len(t); i++ {
		if t[i] != ch {
			return false
		}
	}
	return true
}
