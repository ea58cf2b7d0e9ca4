package extractive

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/lorekb/lore/internal/lru"
)

// resetAnalyses empties the process's cache of passage analyses.
func resetAnalyses() { analyses = lru.New[passageKey, *analysis](maxCachedPassages, maxCachedBytes) }

// uncached runs f with an empty cache of its own, so that every analysis
// it reads is fresh, and puts the shared cache back.
func uncached[T any](f func() T) T {
	shared := analyses
	defer func() { analyses = shared }()
	resetAnalyses()
	return f()
}

// Answers, source scores and the corpora they come from are the same from
// cached analyses as from fresh ones: cold, warm, and after another
// question, one that asks how (whose corpus quotes code and adds its terms
// to the sentence introducing it) or one that does not, used the same
// passages; and while other turns read the same passages at once.
func TestCachedAnalysesAnswerAsFresh(t *testing.T) {
	resetAnalyses()
	tools := []string{installPage, twoPages, rebasePage,
		"[1] Setup (relevance 0.90)\n# Setup\nTo install Lore, run these commands:\n```\nmake install\n```\nThen start it.\n```\nlore serve\n```\n\n" +
			"[2] Setup (relevance 0.90)\n# Setup\nTo install Lore, run these commands:\n```\nmake install\n```\nThen start it.\n```\nlore serve\n```"}
	questions := []string{
		"How do I install Lore on Linux?", "Lore Linux installer archive", "How do I install Lore?",
		"Lore install commands", "How do I back up the database, and how do I install Lore?",
		"git rebase 的时候遇到冲突怎么办?", "What is the capital of France?", "",
	}
	titles := []string{"Upgrading", "Release notes", "Dark mode", "Contact", "t"}
	contents := []string{
		"# Upgrading\nTo upgrade Lore, replace the binary and restart the service.\n```\nlore upgrade\n```",
		"Lore 2.1 adds dark mode.", "# Dark mode\nSwitch themes in Settings.", "Write to the team by email.",
		installPage,
	}
	check := func(q string) error {
		for _, tool := range tools {
			if got, want := Answer(q, tool), uncached(func() string { return Answer(q, tool) }); got != want {
				return fmt.Errorf("%q: answer %q, %q from fresh analyses", q, got, want)
			}
			got := newCorpus(q, parsePassages(tool))
			want := uncached(func() *corpus { return newCorpus(q, parsePassages(tool)) })
			if !reflect.DeepEqual(got.units, want.units) || !reflect.DeepEqual(got.pterms, want.pterms) ||
				!reflect.DeepEqual(got.weight, want.weight) {
				return fmt.Errorf("%q: the corpus of %.20q differs from the one of fresh analyses", q, tool)
			}
		}
		got := Support(q, titles, contents)
		if want := uncached(func() []float64 { return Support(q, titles, contents) }); !reflect.DeepEqual(got, want) {
			return fmt.Errorf("%q: support %v, %v from fresh analyses", q, got, want)
		}
		return nil
	}
	for round := range 3 {
		for i := range questions {
			// Forwards, then backwards: each question after one that asks
			// how and after one that does not.
			q := questions[i]
			if round == 1 {
				q = questions[len(questions)-1-i]
			}
			if err := check(q); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
	// Concurrent turns share the analyses (go test -race sees a write).
	var wg sync.WaitGroup
	for _, q := range questions {
		wg.Go(func() {
			for range 20 {
				Answer(q, tools[0])
				Support(q, titles, contents)
			}
		})
	}
	wg.Wait()
}

// The cache holds no more than its bound in bytes, however many passages
// go through it, and does not keep a passage that would take a sixteenth of
// it (internal/lru tests the counting itself).
func TestAnalysisCacheBound(t *testing.T) {
	const maxBytes = 64 << 10
	shared := analyses
	defer func() { analyses = shared }()
	analyses = lru.New[passageKey, *analysis](1000, maxBytes)
	for i := range 200 {
		analysisOf(fmt.Sprint("Page ", i), fmt.Sprintf("# Part %d\nTo set up part %d, run the tool with its number %d.\n```\ntool %d\n```", i, i, i, i))
		if analyses.Used() > maxBytes {
			t.Fatalf("after %d passages the cache holds %d bytes, over %d", i+1, analyses.Used(), maxBytes)
		}
	}
	if n := analyses.Len(); n == 0 || n == 200 {
		t.Errorf("%d entries of 200 passages within %d bytes", n, maxBytes)
	}
	huge := strings.Repeat("A long sentence of the huge page, one of many. ", 200)
	if analysisOf("Huge", huge); func() bool { _, ok := analyses.Get(passageKey{"Huge", huge}); return ok }() {
		t.Errorf("a passage of over a sixteenth of the bound was cached")
	}
}

// A code block's terms count (half, as context) for the sentences of the
// paragraph that introduces it when the question asks how, and never when
// it does not, whichever kind of question read the passage first: the how
// corpus's contexts are its own, not the cached ones both kinds share.
func TestCodeTermsCountOnlyForHowQuestions(t *testing.T) {
	resetAnalyses()
	titles := []string{"Setup", "Other"}
	withCode := []string{"To set up Lore, open a shell. Then run the tool:\n```\nmake quokka\n```", "Quokka is an animal."}
	without := []string{"To set up Lore, open a shell. Then run the tool:", "Quokka is an animal."}
	for _, q := range []string{"How do I quokka Lore?", "Lore quokka", "How do I quokka Lore?", "Lore quokka"} {
		got, plain := Support(q, titles, withCode), Support(q, titles, without)
		if how := howRe.MatchString(q); how && got[0] <= plain[0] || !how && got[0] != plain[0] {
			t.Errorf("%q: support %v with the code block, %v without", q, got, plain)
		}
	}
}
