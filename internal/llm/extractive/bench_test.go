package extractive

import (
	"os"
	"strings"
	"testing"
)

// benchPages are five passages of this repository's documentation, a
// section of 1–2 KB of Markdown from each of five pages, as the search
// hands them to the chat: what a turn answers from.
func benchPages(b *testing.B) (titles, contents []string) {
	b.Helper()
	for _, name := range []string{"chat", "mcp", "retrieval", "sync", "security"} {
		raw, err := os.ReadFile("../../../docs/" + name + ".md")
		if err != nil {
			b.Skip(err)
		}
		for _, s := range strings.Split(string(raw), "\n## ")[1:] {
			if len(s) < 1000 {
				continue
			}
			if len(s) > 2000 {
				s = s[:strings.LastIndexByte(s[:2000], '\n')]
			}
			heading, body, _ := strings.Cut(s, "\n")
			titles = append(titles, name+" > "+heading)
			contents = append(contents, "# "+heading+"\n"+body)
			break
		}
	}
	return titles, contents
}

// benchQuestions ask how and what, so both kinds of corpus are built.
var benchQuestions = []string{
	"How do I add Lore to an agent?",
	"What does the search tool return?",
	"How does a chat turn search the documentation?",
	"Which secrets are stored encrypted?",
}

// BenchmarkSupport is the source scores of one chat turn: cold analyzes
// every passage (a cache emptied before each turn), warm finds them cached,
// as popular passages are.
func BenchmarkSupport(b *testing.B) {
	titles, contents := benchPages(b)
	for _, warm := range []bool{false, true} {
		b.Run(map[bool]string{false: "cold", true: "warm"}[warm], func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if !warm {
					resetAnalyses()
				}
				Support(benchQuestions[i%len(benchQuestions)], titles, contents)
			}
		})
	}
}

// BenchmarkAnswer is the responder's answer to one turn from the search
// tool's result, cold and warm as in BenchmarkSupport.
func BenchmarkAnswer(b *testing.B) {
	titles, contents := benchPages(b)
	var tool strings.Builder
	for i := range titles {
		tool.WriteString("[" + string(rune('1'+i)) + "] " + titles[i] + " (relevance 0.80)\n" + contents[i] + "\n\n")
	}
	for _, warm := range []bool{false, true} {
		b.Run(map[bool]string{false: "cold", true: "warm"}[warm], func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if !warm {
					resetAnalyses()
				}
				Answer(benchQuestions[i%len(benchQuestions)], tool.String())
			}
		})
	}
}
