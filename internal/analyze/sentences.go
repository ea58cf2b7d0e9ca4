package analyze

import (
	"strings"
	"unicode"
)

// abbreviations do not end a sentence.
var abbreviations = map[string]bool{
	"e.g.": true, "i.e.": true, "etc.": true, "vs.": true, "cf.": true,
	"mr.": true, "mrs.": true, "dr.": true, "no.": true, "fig.": true,
}

// Sentences splits one segment into sentences at ".", "!", "?" and "…"
// followed by a space, and right after the CJK full stop, exclamation and
// question marks and the full-width semicolon (Chinese documentation chains
// independent clauses with "；", so a clause is the unit an answer quotes).
// Whitespace inside a sentence is collapsed.
func Sentences(segment string) []string {
	segment = strings.Join(strings.Fields(segment), " ")
	var (
		out   []string
		start int
	)
	runes := []rune(segment)
	for i, r := range runes {
		end := false
		switch r {
		case '。', '！', '？', '；':
			end = true
		case '.', '!', '?', '…':
			next := i + 1
			for next < len(runes) && strings.ContainsRune(`"')]”’`, runes[next]) {
				next++
			}
			if next == len(runes) || unicode.IsSpace(runes[next]) {
				end = r != '.' || !isAbbreviation(runes[start:i+1])
			}
		}
		if end {
			// Keep closing quotes and brackets with their sentence.
			j := i + 1
			for j < len(runes) && strings.ContainsRune(`"')]”’」』）`, runes[j]) {
				j++
			}
			if s := strings.TrimSpace(string(runes[start:j])); s != "" {
				out = append(out, s)
			}
			start = j
		}
	}
	if start < len(runes) {
		if s := strings.TrimSpace(string(runes[start:])); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func isAbbreviation(sentence []rune) bool {
	s := string(sentence)
	if i := strings.LastIndexAny(s, " \t"); i >= 0 {
		s = s[i+1:]
	}
	return abbreviations[strings.ToLower(s)]
}
