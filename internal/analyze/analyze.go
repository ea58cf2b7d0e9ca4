// Package analyze is Lore's one keyword analyzer: it turns text into the
// terms that keyword indexes store and that rerankers and responders score.
// Every component that matches words (the embedded keyword index, the
// lexical reranker, the extractive responder, the local embedder, the Milvus
// full-text field) calls Terms, so what is indexed and what is scored always
// agree: a query for "restore backups" finds a page that says "restoring a
// backup", and a question written only in Chinese finds Chinese pages.
//
// Rules, in order: text is split into runs of letters and digits (any
// script) and runs of CJK characters. A Latin-script word is lower-cased,
// dropped when it is an English stop word, and stemmed with the Snowball
// English stemmer; a camelCase or snake-free identifier such as readFileSync
// also yields its parts (read, file, sync). A run of Han characters is
// segmented into words with the gse segmenter over a built-in dictionary (in
// search mode, so long words also yield the dictionary words inside them),
// and Chinese function words are dropped; each word of two or more
// characters also yields its characters, so a question that says 几行 ("how many lines") still
// matches a page that says 10行, and 归档 matches 档案 in part: Chinese
// paraphrases share characters more often than words. Kana and Hangul runs,
// and Han runs if the dictionary cannot load, fall back to overlapping
// character bigrams.
//
// Changing these rules changes what an index holds: bump Version, and stores
// that persist terms re-index when the version they were built with differs.
package analyze

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Version identifies the analysis rules. Stores that persist analyzed terms
// record it and rebuild their keyword index when it changes, so old and new
// terms are never mixed in one index.
const Version = 3

// MaxWordBytes bounds one word: longer runs (base64 blobs, hashes) are cut
// there, so a hostile document cannot make a term the size of the document.
const MaxWordBytes = 64

// Terms returns the terms of text in text order, for indexing and for
// scoring. The same text always gives the same terms. Stop words are not
// returned, so a query made only of stop words ("how do I") has no terms.
func Terms(text string) []string {
	var out []string
	Each(text, func(t string) { out = append(out, t) })
	return out
}

// Each calls emit for every term of text, in the order Terms returns them,
// without building a slice: indexes use it to count terms of long texts.
func Each(text string, emit func(term string)) { each(text, true, emit) }

// EachWord is Each without the characters of Chinese words: only whole
// words. Measures of how much of a question a passage covers use it, since a
// shared character alone is weak evidence that a passage is on topic
// (法国 and 法律 share 法).
func EachWord(text string, emit func(term string)) { each(text, false, emit) }

// Words returns the terms of EachWord in order.
func Words(text string) []string {
	var out []string
	EachWord(text, func(t string) { out = append(out, t) })
	return out
}

func each(text string, chars bool, emit func(term string)) {
	start := -1 // byte offset of the current run
	cjk := false
	flush := func(end int) {
		if start < 0 {
			return
		}
		if cjk {
			cjkTerms(text[start:end], chars, emit)
		} else {
			wordTerms(text[start:end], emit)
		}
		start = -1
	}
	for i := 0; i < len(text); {
		r, size := rune(text[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(text[i:])
		}
		switch {
		case IsCJK(r):
			if start >= 0 && !cjk {
				flush(i)
			}
			if start < 0 {
				start, cjk = i, true
			}
		case isWordRune(r):
			if start >= 0 && cjk {
				flush(i)
			}
			if start < 0 {
				start, cjk = i, false
			}
		default:
			flush(i)
		}
		i += size
	}
	flush(len(text))
}

// IsCJK reports whether r belongs to a script written without spaces between
// words (Han ideographs, Hiragana, Katakana, Hangul), which cannot be split
// into words at spaces. It is the one definition every package uses.
func IsCJK(r rune) bool {
	switch {
	case r < 0x3040:
		return false
	case r <= 0x30FF, // Hiragana, Katakana (with the prolonged sound mark)
		r >= 0x3400 && r <= 0x4DBF,   // CJK Extension A
		r >= 0x4E00 && r <= 0x9FFF,   // CJK Unified Ideographs
		r >= 0xAC00 && r <= 0xD7AF,   // Hangul syllables
		r >= 0xF900 && r <= 0xFAFF,   // CJK Compatibility Ideographs
		r >= 0x20000 && r <= 0x3134F: // CJK Extensions B..G
		return true
	}
	return false
}

// isHan reports whether r is a Chinese character (which the segmenter's
// dictionary covers), as opposed to kana or Hangul.
func isHan(r rune) bool {
	return IsCJK(r) && (r < 0x3040 || r > 0x30FF) && (r < 0xAC00 || r > 0xD7AF)
}

// isWordRune reports whether r continues a word in space-separated scripts.
func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
}

// wordTerms emits the terms of one run of letters and digits.
func wordTerms(w string, emit func(string)) {
	if len(w) > MaxWordBytes {
		cut := MaxWordBytes
		for cut > 0 && !utf8.RuneStart(w[cut]) {
			cut--
		}
		w = w[:cut]
	}
	if !mayHaveParts(w) {
		// Most words: no case change inside, so no parts (and for an
		// all-lower-case ASCII word, ToLower returns w without copying).
		if t, ok := englishTerm(strings.ToLower(w)); ok {
			emit(t)
		}
		return
	}
	lower := strings.ToLower(w)
	parts := camelParts(w)
	if len(parts) < 2 {
		if t, ok := englishTerm(lower); ok {
			emit(t)
		}
		return
	}
	// An identifier is one term as a whole (exact API names match best) and
	// one term per part (so words in a question match it too).
	emit(stem(lower))
	for _, p := range parts {
		if t, ok := englishTerm(strings.ToLower(p)); ok {
			emit(t)
		}
	}
}

// mayHaveParts is false when camelParts would surely give w whole: an ASCII
// word with no upper-case letter after its first byte. Analysis calls it on
// every word of every text it scores, so it answers without decoding runes
// or allocating; anything else (non-ASCII, inner capitals) goes to
// camelParts.
func mayHaveParts(w string) bool {
	for i := 0; i < len(w); i++ {
		c := w[i]
		if c >= utf8.RuneSelf || i > 0 && c >= 'A' && c <= 'Z' {
			return true
		}
	}
	return false
}

// camelParts splits an identifier where the case changes: "readFileSync"
// gives read, File, Sync and "HTTPServer" gives HTTP, Server. A word without
// such a change gives one part.
func camelParts(w string) []string {
	type at struct {
		r   rune
		off int
	}
	var rs [MaxWordBytes]at // w is at most MaxWordBytes long: no allocation
	n := 0
	for off, r := range w {
		rs[n] = at{r, off}
		n++
	}
	var parts []string
	start := 0
	for i := 1; i < n; i++ {
		prev, cur := rs[i-1].r, rs[i].r
		if unicode.IsLower(prev) && unicode.IsUpper(cur) ||
			unicode.IsUpper(prev) && unicode.IsUpper(cur) && i+1 < n && unicode.IsLower(rs[i+1].r) {
			parts = append(parts, w[start:rs[i].off])
			start = rs[i].off
		}
	}
	return append(parts, w[start:])
}
