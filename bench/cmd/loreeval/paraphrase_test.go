package main

import (
	"strings"
	"testing"
)

// TestParaphraseQuestionsAvoidTheNames enforces the paraphrase sets' rule:
// a question uses no word of its relevant pages' titles, of their file
// names, or of the name its section gives the answer (the heading up to
// its parameter list: "path.basename" of "path.basename(path[, suffix])").
// Words are lower-cased runs of letters and digits, identifiers are also
// split at case changes and underscores (setInterval: set, interval,
// setinterval), and a word matches its plural or -ing/-ed form; the
// function words of paraphraseStop are ignored.
func TestParaphraseQuestionsAvoidTheNames(t *testing.T) {
	for name, set := range map[string][]question{"nodejsParaphrase": nodejsParaphrase, "sqliteParaphrase": sqliteParaphrase, "apacheParaphrase": apacheDef().paraphrase} {
		if len(set) < 25 {
			t.Errorf("%s: %d questions, want about 30", name, len(set))
		}
		for _, q := range set {
			banned := map[string]bool{}
			for i, f := range strings.Fields(q.file) {
				title, ok := pageTitles[f]
				if !ok {
					t.Errorf("%s: no pageTitles entry for %s", name, f)
				}
				names := []string{title, strings.TrimSuffix(strings.TrimSuffix(f[strings.LastIndex(f, "/")+1:], ".md"), ".html")}
				if i == 0 {
					names = append(names, strings.SplitN(q.section, "(", 2)[0])
				}
				for _, n := range names {
					for _, w := range nameWords(n) {
						banned[w] = true
					}
				}
			}
			var offenders []string
			for _, w := range words(q.q) {
				if paraphraseStop[w] {
					continue
				}
				for b := range banned {
					if sameWord(w, b) {
						offenders = append(offenders, w+" ("+b+")")
						break
					}
				}
			}
			if len(offenders) > 0 {
				t.Errorf("%s: %q (%s) uses %s", name, q.q, q.file, strings.Join(offenders, ", "))
			}
		}
	}
}

// paraphraseStop are the function words the paraphrase rule ignores (some
// titles hold them: "The WITH Clause", "In-Memory Databases").
var paraphraseStop = map[string]bool{
	"a": true, "an": true, "the": true, "of": true, "in": true, "on": true, "to": true, "for": true,
	"and": true, "or": true, "with": true, "by": true, "from": true, "at": true, "as": true, "is": true,
	"it": true, "its": true, "into": true, "how": true, "what": true, "do": true, "i": true, "my": true,
}

// words are the lower-cased runs of letters and digits of s.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127)
	})
}

// nameWords are the words of a title or an identifier: each word whole and
// its parts at case changes and underscores.
func nameWords(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r > 127)
	}) {
		out = append(out, words(f)...)
		var part []rune
		prev := rune(0)
		for _, r := range f {
			if r == '_' || (r >= 'A' && r <= 'Z' && prev >= 'a' && prev <= 'z') {
				if len(part) > 0 {
					out = append(out, strings.ToLower(string(part)))
				}
				part = part[:0]
			}
			if r != '_' {
				part = append(part, r)
			}
			prev = r
		}
		if len(part) > 0 {
			out = append(out, strings.ToLower(string(part)))
		}
	}
	return out
}

// sameWord reports whether a and b are one word up to a plural or an
// -ing/-ed ending.
func sameWord(a, b string) bool {
	sa, sb := stem(a), stem(b)
	return a == b || sa == b || a == sb || sa == sb
}

// stem drops one plural, -ing or -ed ending, and then a final e (write and
// writing both give writ).
func stem(w string) string {
	for _, suf := range []string{"ing", "ed", "es", "s"} {
		if strings.HasSuffix(w, suf) && len(w)-len(suf) >= 3 {
			w = strings.TrimSuffix(w, suf)
			break
		}
	}
	if len(w) > 3 {
		w = strings.TrimSuffix(w, "e")
	}
	return w
}

func TestParaphraseWordHelpers(t *testing.T) {
	got := strings.Join(nameWords("setInterval(callback)"), " ")
	if got != "setinterval set interval callback callback" {
		t.Errorf("nameWords = %q", got)
	}
	if got := strings.Join(nameWords("json_extract"), " "); got != "json extract json extract" {
		t.Errorf("nameWords = %q", got)
	}
	for _, c := range []struct {
		a, b string
		want bool
	}{{"threads", "threaded", true}, {"files", "file", true}, {"processes", "process", true}, {"time", "timers", false}, {"writing", "write", true}, {"use", "using", false}} {
		if sameWord(c.a, c.b) != c.want {
			t.Errorf("sameWord(%q, %q) = %v", c.a, c.b, !c.want)
		}
	}
}
