package analyze

import (
	"unicode"
	"unicode/utf8"
)

// ReadingTime estimates minutes at 200 words per minute, at least 1. A word
// is a run of letters or digits, except that each CJK character counts as a
// word of its own (those scripts do not separate words with spaces).
func ReadingTime(content string) int {
	return max(1, countWords(content)/200)
}

// asciiWordByte is 1 for the ASCII bytes that continue a word: letters,
// digits, ' and _ (the rune rule below, for bytes under 0x80).
var asciiWordByte = func() (t [128]uint8) {
	for c := range 128 {
		r := rune(c)
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\'' || r == '_' {
			t[c] = 1
		}
	}
	return t
}()

// countWords counts the words ReadingTime reads: ASCII bytes through a table
// (a word starts where a word byte follows a non-word one), other characters
// by the rune rule (most documents are mostly ASCII).
func countWords(content string) int {
	words, in := 0, uint8(0)
	for i := 0; i < len(content); {
		if c := content[i]; c < utf8.RuneSelf {
			w := asciiWordByte[c]
			words += int(w &^ in)
			in = w
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(content[i:])
		i += size
		switch {
		case IsCJK(r):
			words++
			in = 0
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			words += int(1 &^ in)
			in = 1
		default:
			in = 0
		}
	}
	return words
}
