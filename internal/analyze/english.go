package analyze

import (
	"strings"
	"sync"

	"github.com/kljensen/snowball/english"
)

// englishStop are the English words too common to say what a passage is
// about: articles, pronouns, auxiliaries, prepositions, conjunctions and the
// words questions are built from ("how do I …", "what is the …"). Left in,
// they decide rankings by sheer frequency.
var englishStop = toSet(`a about above after again against all am an and any are aren as at
be because been before being below between both but by can cannot could couldn
did didn do does doesn doing don down during each few for from further
had hadn has hasn have haven having he her here hers herself him himself his how
i if in into is isn it its itself just let me more most mustn my myself
no nor not of off on once only or other ought our ours ourselves out over own
please same shan she should shouldn so some such than that the their theirs them themselves
then there these they this those through to too under until up very
was wasn we were weren what when where which while who whom why will with won would wouldn
you your yours yourself yourselves s t d ll m re ve
want wants need needs get gets tell way ways possible anyone someone something thing things
also etc e g ie eg`)

// IsStopWord reports whether the lower-cased word w is dropped from terms:
// an English stop word, or a Chinese function word.
func IsStopWord(w string) bool {
	return englishStop[w] || chineseStop[w]
}

// englishTerm returns the term for the lower-cased word w, or false when w
// is a stop word.
func englishTerm(w string) (string, bool) {
	if englishStop[w] {
		return "", false
	}
	return stem(w), true
}

// stem reduces a lower-cased English word to its Snowball stem ("restoring"
// and "restores" to "restor"). Words with digits or letters outside a-z are
// identifiers or other languages and are kept whole.
func stem(w string) string {
	if len(w) <= 2 {
		return w
	}
	for i := 0; i < len(w); i++ {
		if c := w[i]; c < 'a' || c > 'z' {
			return w
		}
	}
	stemMu.RLock()
	st, ok := stemCache[w]
	stemMu.RUnlock()
	if ok {
		return st
	}
	st = english.Stem(w, true)
	stemMu.Lock()
	if len(stemCache) >= maxStemCache {
		clear(stemCache) // a crude bound; the working vocabulary refills it
	}
	stemCache[strings.Clone(w)] = st
	stemMu.Unlock()
	return st
}

// maxStemCache bounds the stem cache: a documentation site's vocabulary is
// tens of thousands of words, and the Snowball stemmer costs microseconds a
// word, which dominates analysis of long texts without the cache.
const maxStemCache = 1 << 17

var (
	stemMu    sync.RWMutex
	stemCache = make(map[string]string)
)

// toSet makes a lookup set of the space-separated words of s.
func toSet(s string) map[string]bool {
	set := make(map[string]bool)
	start := -1
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ' ' || s[i] == '\n' || s[i] == '\t' {
			if start >= 0 {
				set[s[start:i]] = true
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	return set
}
