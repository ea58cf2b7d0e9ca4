package extractive

import (
	"regexp"
	"strings"

	"github.com/lorekb/lore/internal/analyze"
)

// --- the question ---

// stopwords are question and function words that would otherwise make any
// sentence look relevant (analyze.Terms already drops English stop words;
// these are the ones a question adds).
var stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an the is are was were be been being am do does did done
		how what when where which who whom why whose can could should would will shall may might must
		i me my mine we us our you your it its he she they them their this that these those there here
		to of in on at for with by from as about into onto over under and or but not no nor if then so
		than too very just also any some all each every please tell explain show know want need
		have has had get got let s t
		如何 怎么 怎样 怎么办 怎 么 什么 为什么 为什 什 哪里 哪些 是否 可以 请问 能否`) {
		stopwords[w] = true
	}
}

// partSplitRe finds where a question that asks several things starts its
// next part: a question mark that ends a sentence (not one inside a URL's
// "?id=42") or a semicolon, ", and how …", " or ", and their Chinese forms.
var partSplitRe = regexp.MustCompile(`(?i)\?+(?:\s|$)|[？;；]+|,?\s+(?:and|also)\s+(?:how|what|where|when|why|which|who|can|could|should|do|does|did|is|are|will|would)\b|\s+or\s+|还是|以及|另外|[，,]\s*(?:如何|怎么|怎样|为什么|是否|能否|可以|又)`)

// howRe recognises a question that asks how to do something, whose answer
// may be a command.
var howRe = regexp.MustCompile(`(?i)\bhow\b|\bsteps?\b|\bcommand|如何|怎么|怎样|怎麼|步骤|命令`)

// part is one thing the question asks: its distinct content terms.
type part []string

// questionParts splits query into the parts it asks, each with its content
// terms; parts with no content term are dropped. A question made only of
// stop words gives none.
//
// An "or" starts a part of its own only between two pieces that each have
// two content terms or more ("Should I use WAL or a rollback journal?"); a
// shorter side is an alternative inside one ask ("add or remove a header",
// "exists or is accessible") and stays with the other side.
func questionParts(query string) []part {
	var out []part
	seen := map[string]bool{} // a term belongs to the first part that says it
	last, afterOr := 0, false
	add := func(piece string) {
		var p part
		for _, t := range analyze.Terms(piece) {
			if !stopwords[t] && !seen[t] {
				seen[t] = true
				p = append(p, t)
			}
		}
		switch {
		case len(p) == 0:
		case afterOr && len(out) > 0 && (len(p) < 2 || len(out[len(out)-1]) < 2):
			out[len(out)-1] = append(out[len(out)-1], p...)
		default:
			out = append(out, p)
		}
	}
	for _, m := range partSplitRe.FindAllStringIndex(query, -1) {
		add(query[last:m[0]])
		afterOr, last = orRe.MatchString(query[m[0]:m[1]]), m[1]
	}
	add(query[last:])
	return out
}

// orRe is the separator of partSplitRe that joins alternatives.
var orRe = regexp.MustCompile(`(?i)^\s+or\s+$|^还是$`)

func isCJKTerm(t string) bool {
	for _, r := range t {
		return analyze.IsCJK(r)
	}
	return false
}
