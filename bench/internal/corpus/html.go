package corpus

import (
	"html"
	"regexp"
	"strconv"
	"strings"
)

var (
	reTitle     = regexp.MustCompile(`(?is)<title\b[^>]*>(.*?)</title>`)
	reDropMore  = regexp.MustCompile(`(?is)<(script|style|head|title|nav|svg|button|form|noscript)\b.*?</(script|style|head|title|nav|svg|button|form|noscript)>`)
	reComment   = regexp.MustCompile(`(?s)<!--.*?-->`)
	rePre       = regexp.MustCompile(`(?is)<pre\b[^>]*>(.*?)</pre>`)
	reListItem  = regexp.MustCompile(`(?i)<li\b[^>]*>`)
	reCell      = regexp.MustCompile(`(?i)</?(td|th)\b[^>]*>`)
	reChromeDiv = regexp.MustCompile(`(?i)<div\b[^>]*\bclass\s*=\s*["']?(nosearch|menu|searchmenu|tagline)\b[^>]*>`)
	reDivTag    = regexp.MustCompile(`(?i)<(/?)div\b[^>]*>`)
	reFenceOut  = regexp.MustCompile("\x00(\\d+)\x00")
	reRow       = regexp.MustCompile(`(?i)</?tr\b[^>]*>`)
	rePipes     = regexp.MustCompile(`[ \t]*\|[ \t|]*`)
	reBullet    = regexp.MustCompile(`(?m)^-\n+`)
	reSecNum    = regexp.MustCompile(`^\d+(\.\d+)*\.?\s+`)
)

// HTMLToMarkdown converts one HTML page to Markdown with a plain, robust
// conversion: the page's <title> is its title; scripts, styles, the head,
// navigation, inline SVG (syntax diagrams), forms and the site chrome
// (div blocks of class nosearch, menu, searchmenu or tagline, as the
// SQLite pages mark theirs) go; headings become "#" headings, <pre> blocks
// fenced code, list items "- " lines, table cells are separated by " | ",
// other block elements paragraph breaks, every other tag is dropped and
// entities are decoded.
func HTMLToMarkdown(page string) (title, md string) {
	if m := reTitle.FindStringSubmatch(page); m != nil {
		title = strings.TrimSpace(reSpaces.ReplaceAllString(html.UnescapeString(reTags.ReplaceAllString(m[1], "")), " "))
		title = strings.ReplaceAll(title, "\n", " ")
	}
	s := reComment.ReplaceAllString(page, "")
	s = reDropMore.ReplaceAllString(s, "\n")
	s = dropChrome(s)
	var fences []string
	s = rePre.ReplaceAllStringFunc(s, func(p string) string {
		body := rePre.FindStringSubmatch(p)[1]
		body = html.UnescapeString(reTags.ReplaceAllString(body, ""))
		body = strings.Trim(body, "\n")
		fences = append(fences, "```\n"+body+"\n```")
		return "\n\n\x00" + strconv.Itoa(len(fences)-1) + "\x00\n\n"
	})
	// The page's title heads the document; when the page's own first <h1>
	// is not that title (SQLite's pages number their sections as <h1>),
	// every heading moves one level down under it.
	shift := 0
	if m := reHeading.FindStringSubmatch(s); title != "" && (m == nil || m[1] != "1" || !strings.EqualFold(headingText(m[2]), title)) {
		shift = 1
	}
	s = reHeading.ReplaceAllStringFunc(s, func(h string) string {
		m := reHeading.FindStringSubmatch(h)
		level := min(6, int(m[1][0]-'0')+shift)
		t := headingText(m[2])
		if t == "" {
			return "\n\n"
		}
		return "\n\n" + strings.Repeat("#", level) + " " + t + "\n\n"
	})
	s = reListItem.ReplaceAllString(s, "\n\n- ")
	s = reRow.ReplaceAllString(s, "\n")
	s = reCell.ReplaceAllString(s, " | ")
	s = reBlockTags.ReplaceAllString(s, "\n\n")
	s = reTags.ReplaceAllString(s, "")
	s = html.UnescapeString(s)
	s = reSpaces.ReplaceAllString(s, " ")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.Contains(l, "|") {
			l = strings.Trim(rePipes.ReplaceAllString(l, " | "), " |")
		}
		lines[i] = strings.TrimSpace(l)
	}
	s = strings.Join(lines, "\n")
	s = reBlankRuns.ReplaceAllString(s, "\n\n")
	s = reBullet.ReplaceAllString(s, "- ")
	s = reFenceOut.ReplaceAllStringFunc(s, func(m string) string {
		n, _ := strconv.Atoi(strings.Trim(m, "\x00"))
		return fences[n]
	})
	s = strings.TrimSpace(s)
	if shift == 1 {
		s = "# " + title + "\n\n" + s
	}
	return title, s
}

// headingText is a heading's text on one line, without tags or a leading
// section number ("2.1. ").
func headingText(inner string) string {
	t := html.UnescapeString(reTags.ReplaceAllString(inner, ""))
	t = strings.TrimSpace(reSpaces.ReplaceAllString(strings.ReplaceAll(t, "\n", " "), " "))
	return reSecNum.ReplaceAllString(t, "")
}

// dropChrome removes the site-chrome div blocks, nested divs included.
func dropChrome(s string) string {
	for {
		loc := reChromeDiv.FindStringIndex(s)
		if loc == nil {
			return s
		}
		depth, end := 1, len(s)
		for _, m := range reDivTag.FindAllStringSubmatchIndex(s[loc[1]:], -1) {
			if m[3] > m[2] { // closing tag
				depth--
			} else {
				depth++
			}
			if depth == 0 {
				end = loc[1] + m[1]
				break
			}
		}
		s = s[:loc[0]] + "\n" + s[end:]
	}
}
