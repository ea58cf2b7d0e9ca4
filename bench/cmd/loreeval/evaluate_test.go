package main

import (
	"strings"
	"testing"
)

func TestScoreCountsTheFirstCitation(t *testing.T) {
	var a answerFigures
	files := map[int]string{1: "a.html", 2: "b.html", 3: "c.html"}
	a.score(question{q: "q1", file: "b.html"}, "From b [2], also a [1] and b again [2].", files)
	a.score(question{q: "q2", file: "b.html c.html"}, "See [3].", files)
	a.score(question{q: "q3", file: "b.html"}, "See [1], then [2].", files)
	a.score(question{q: "q4", file: "b.html"}, "The documentation does not cover this.", files)
	a.score(question{q: "off"}, "No idea.", files)
	a.score(question{q: "off2"}, "Paris [1].", files)
	if a.answerable != 4 || a.firstRelevant != 2 || a.falseAbstained != 1 || a.seen != 4 {
		t.Errorf("answerable %d firstRelevant %d falseAbstained %d seen %d, want 4 2 1 4", a.answerable, a.firstRelevant, a.falseAbstained, a.seen)
	}
	if a.cited != 5 || a.citedRelevant != 3 {
		t.Errorf("cited %d/%d, want 3/5", a.citedRelevant, a.cited)
	}
	if a.offTopic != 2 || a.abstainedOff != 1 {
		t.Errorf("off-topic %d/%d, want 1/2", a.abstainedOff, a.offTopic)
	}
}

func TestTargetsAndSummary(t *testing.T) {
	r := results{
		sets: []evalSet{{name: "en", lang: "English", questions: make([]question, 20)}, {name: "en paraphrase", lang: "English", paraphrase: true, questions: make([]question, 10)},
			{name: "zh", lang: "Chinese", questions: make([]question, 5)}},
		rows: []row{
			{"en", configs[0].name, metrics{hit1: 0.5, hit5: 0.8}}, {"en", configs[1].name, metrics{hit1: 0.7, hit5: 0.95}},
			{"en paraphrase", configs[0].name, metrics{hit1: 0.3}}, {"en paraphrase", configs[1].name, metrics{hit1: 0.4}},
			{"zh", configs[1].name, metrics{hit1: 0.64, hit5: 0.8, mrr: 0.724}},
		},
		answers: []answerFigures{{set: "en", offTopic: 10, abstainedOff: 10, answerable: 20, firstRelevant: 17, falseAbstained: 1}, {set: "en paraphrase", answerable: 10}, {set: "zh", answerable: 5}},
	}
	got := map[string]bool{}
	for _, tg := range r.targets() {
		got[tg.name] = tg.ok
	}
	for name, want := range map[string]bool{
		"en paraphrase: hit@1 ≥ BM25 + 0.15": false, "en: hit@5 ≥ 0.95": true,
		"en: the answer's first citation is from a relevant file ≥ 0.85": true, "off-topic abstention ≥ 0.95 (all corpora)": true,
		"false abstention ≤ 0.05 (every answerable question, paraphrases included)": true, "zh: hit@1/hit@5/MRR@10 not below 0.640/0.800/0.724": true,
	} {
		if ok, found := got[name]; !found || ok != want {
			t.Errorf("target %q: ok %v (found %v), want %v", name, ok, found, want)
		}
	}
	s := r.summary()
	for _, want := range []string{"en paraphrase", "0.300", "MISS  en paraphrase: hit@1", "17/20", "10/10"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	if n := strings.Count(s, "\n"); n > 24 {
		t.Errorf("summary has %d lines, want one screen", n)
	}
}

// A man page's title is its name with its NAME line, whichever way the
// Chinese pages write the NAME heading.
func TestManPageTitleFromNameSection(t *testing.T) {
	for _, heading := range []string{"NAME", "名称", "NAME(名称)", "NAME (名称)", "NAME 名称", "NAME[名字]", "NAME(名称）", "命令名"} {
		page := "UPTIME(1)\n" + heading + "\n       uptime - 告知系统运行了多久时间.\n\nDESCRIPTION\n       text\nfooter\n"
		if _, title := manToMarkdown(page, "man1/uptime.1"); title != "uptime - 告知系统运行了多久时间." {
			t.Errorf("heading %q: title %q", heading, title)
		}
	}
	if _, title := manToMarkdown("X(1)\n总览\n       uptime [-V]\nfooter\n", "man1/uptime.1"); title != "uptime" {
		t.Errorf("a page without a NAME section: title %q", title)
	}
}
