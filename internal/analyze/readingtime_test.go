package analyze

import (
	"math/rand"
	"strings"
	"testing"
	"unicode"
)

// wordsByRune is the rule countWords implements, one rune at a time.
func wordsByRune(content string) int {
	words, inWord := 0, false
	for _, r := range content {
		switch {
		case IsCJK(r):
			words++
			inWord = false
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\'' || r == '_':
			if !inWord {
				words++
				inWord = true
			}
		default:
			inWord = false
		}
	}
	return words
}

func TestCountWordsFollowsTheRuneRule(t *testing.T) {
	pieces := []string{"word", " ", "it's", "snake_case", "42", "-", "\n", "数据库", "。", "Ünïcödé", "ß", "١٢٣",
		"\xff", "\xe6\x95", "😀", "\t", "Ω", "café", "x", "'", "_", "ｆｕｌｌ", "한국어", "カタカナ"}
	rng := rand.New(rand.NewSource(1))
	for i := range 2000 {
		var b strings.Builder
		for range rng.Intn(40) {
			b.WriteString(pieces[rng.Intn(len(pieces))])
		}
		s := b.String()
		if got, want := countWords(s), wordsByRune(s); got != want {
			t.Fatalf("case %d: countWords(%q) = %d, the rune rule gives %d", i, s, got, want)
		}
	}
	for in, want := range map[string]int{"": 0, "a b": 2, "数据库": 3, "it's fine": 2, "x\xffy": 2, "naïve café": 2} {
		if got := countWords(in); got != want {
			t.Errorf("countWords(%q) = %d, want %d", in, got, want)
		}
	}
}
