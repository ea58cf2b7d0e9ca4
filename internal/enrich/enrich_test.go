package enrich

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lorekb/lore/internal/analyze"
)

func TestSentences(t *testing.T) {
	got := analyze.Sentences("Use e.g. the CLI. Then restart! Is it up? 版本一。版本二！done")
	want := []string{"Use e.g. the CLI.", "Then restart!", "Is it up?", "版本一。", "版本二！", "done"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sentences %q", got)
	}
	if got := analyze.Sentences("Version 1.2.3 is out. See node.js docs."); len(got) != 2 {
		t.Errorf("dots inside words split: %q", got)
	}
}

func TestParseSkipsCodeAndMarkup(t *testing.T) {
	d := parse("Intro\n=====\n\nSee [the docs](http://x) and **bold** `code`.\n\n```\nnot prose.\n```\n\n    indented code\n\n| a | b |\n|---|---|\n| c | d |\n\n<!-- hidden\nnote -->\n> quoted line\n")
	if !reflect.DeepEqual(d.headings, []string{"Intro"}) || !reflect.DeepEqual(d.paragraphs, []string{"See the docs and bold code."}) {
		t.Errorf("headings %q paragraphs %q", d.headings, d.paragraphs)
	}
	if !reflect.DeepEqual(d.items, []string{"a", "b", "c", "d", "quoted line"}) {
		t.Errorf("items %q", d.items)
	}
}

func TestSummaryFallsBackToItemsAndHeadings(t *testing.T) {
	r := Extractive(Request{Content: "# Checklist\n\n- Back up the data.\n- Upgrade the server.\n", Fields: []string{FieldSummary}})
	if *r.Summary != "Back up the data. Upgrade the server." {
		t.Errorf("items summary %q", *r.Summary)
	}
	r = Extractive(Request{Content: "# Only a heading\n", Fields: []string{FieldSummary, FieldTitle, FieldTags}})
	if *r.Summary != "Only a heading" || *r.Title != "Only a heading" || r.Tags == nil {
		t.Errorf("heading only %+v", r)
	}
	r = Extractive(Request{Content: "plain words without a heading. more", Fields: []string{FieldTitle}})
	if *r.Title != "plain words without a heading" {
		t.Errorf("title from the first sentence %q", *r.Title)
	}
}

func TestTagsSpellingAndBounds(t *testing.T) {
	md := "# Configuring readFileSync\n\nThe readFileSync call reads files. Node.js reads files with readFileSync too. Using 2024 and 42 examples.\n"
	tags := Extractive(Request{Content: md, Fields: []string{FieldTags}, TagsMax: 3}).Tags
	if len(tags) != 3 || tags[0] != "readFileSync" || !contains(tags, "files") && !contains(tags, "reads") {
		t.Errorf("tags %q", tags)
	}
	for _, tg := range tags {
		if tg == "2024" || tg == "using" || tg == "examples" || tg == "readfilesync" {
			t.Errorf("tag %q: a number, a generic word or a lower-cased identifier", tg)
		}
	}
	if got := Extractive(Request{Content: "# Install\n\ninstall it. Install again.", Fields: []string{FieldTags}}).Tags; len(got) == 0 || got[0] != "install" {
		t.Errorf("capitalised spellings fold to lower case: %q", got)
	}
}

func TestCut(t *testing.T) {
	if got := Cut("alpha beta gamma delta", 12); got != "alpha beta…" {
		t.Errorf("Cut %q", got)
	}
	if got := Cut("短文本", 10); got != "短文本" {
		t.Errorf("Cut %q", got)
	}
	if got := Cut(strings.Repeat("长", 30), 10); utf8.RuneCountInString(got) != 10 {
		t.Errorf("Cut CJK %q", got)
	}
}

func TestParseAnswer(t *testing.T) {
	req := Request{Fields: []string{FieldSummary, FieldTags}, TagsMax: 2, SummaryMax: 20}
	for _, text := range []string{
		`{"summary":"A short summary.","tags":["x","y","z"]}`,
		"Sure!\n```json\n{\"summary\": \"A short summary.\", \"tags\": [\"x\", \"y\"]}\n```",
		`Some {braces} first, then {"summary":"A short summary.","tags":"x, y"}`,
	} {
		r, err := ParseAnswer(text, req)
		if err != nil || *r.Summary != "A short summary." || !reflect.DeepEqual(r.Tags, []string{"x", "y"}) {
			t.Errorf("%q: %+v %v", text, r, err)
		}
	}
	r, err := ParseAnswer(`{"summary":"`+strings.Repeat("word ", 20)+`"}`, req)
	if err != nil || utf8.RuneCountInString(*r.Summary) > 20 || len(r.Tags) != 0 || r.Title != nil {
		t.Errorf("bounded: %+v %v", r, err)
	}
	if _, err := ParseAnswer("no json here", req); !errors.Is(err, ErrNoJSON) {
		t.Errorf("no JSON: %v", err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
