package main

import (
	"math"
	"sort"
	"strings"
	"unicode"
)

// bm25 is the baseline: a plain BM25 (k1 1.2, b 0.75) over the sections of
// the same files (split at every Markdown heading, the heading line kept in
// its section), with the plainest tokenizer: lower-cased runs of letters and
// digits, and character bigrams for CJK text. No stemming, no stop words,
// no fields: what a team gets from a search library's defaults.
type bm25 struct {
	secs   []section
	df     map[string]int
	avgLen float64
}

type section struct {
	file string
	tf   map[string]int
	len  int
}

func newBM25(files []file) *bm25 {
	ix := &bm25{df: map[string]int{}}
	total := 0
	for _, f := range files {
		for _, text := range splitSections(f.text) {
			s := section{file: f.rel, tf: map[string]int{}}
			for _, t := range plainTerms(f.title + "\n" + text) {
				s.tf[t]++
				s.len++
			}
			for t := range s.tf {
				ix.df[t]++
			}
			total += s.len
			ix.secs = append(ix.secs, s)
		}
	}
	ix.avgLen = float64(total) / float64(max(1, len(ix.secs)))
	return ix
}

// search returns the files of the k best sections, best first.
func (ix *bm25) search(q string, k int) []string {
	n := float64(len(ix.secs))
	type hit struct {
		i int
		s float64
	}
	var hits []hit
	terms := plainTerms(q)
	for i, s := range ix.secs {
		var score float64
		for _, t := range terms {
			tf := float64(s.tf[t])
			if tf == 0 {
				continue
			}
			df := float64(ix.df[t])
			idf := math.Log(1 + (n-df+0.5)/(df+0.5))
			score += idf * tf * 2.2 / (tf + 1.2*(0.25+0.75*float64(s.len)/ix.avgLen))
		}
		if score > 0 {
			hits = append(hits, hit{i, score})
		}
	}
	sort.SliceStable(hits, func(a, b int) bool { return hits[a].s > hits[b].s })
	var out []string
	for _, h := range hits {
		if len(out) == k {
			break
		}
		out = append(out, ix.secs[h.i].file)
	}
	return out
}

func splitSections(md string) []string {
	var out []string
	var cur strings.Builder
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "#") && cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
		}
		cur.WriteString(l + "\n")
	}
	return append(out, cur.String())
}

func plainTerms(s string) []string {
	var out []string
	var word []rune
	var prevCJK rune
	flush := func() {
		if len(word) > 0 {
			out = append(out, string(word))
			word = word[:0]
		}
	}
	for _, r := range strings.ToLower(s) {
		switch {
		case unicode.Is(unicode.Han, r):
			flush()
			if prevCJK != 0 {
				out = append(out, string([]rune{prevCJK, r}))
			} else {
				out = append(out, string(r))
			}
			prevCJK = r
			continue
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			word = append(word, r)
		default:
			flush()
		}
		prevCJK = 0
	}
	flush()
	return out
}
