package workflows

import (
	"testing"

	"github.com/lorekb/lore/activities"
)

// The sources list marks what the answer does not cite as related, so an
// answer that says the docs do not cover the question lists no source as
// its support; a document cited at a later number of a second search is
// not related.
func TestCitedSourcesMarkRelated(t *testing.T) {
	a := activities.KnowledgeSource{DocumentID: 10, SourceIndex: 1}
	b := activities.KnowledgeSource{DocumentID: 20, SourceIndex: 2}
	numbered := map[int]activities.KnowledgeSource{1: a, 2: b, 3: {DocumentID: 10, SourceIndex: 3}}
	related := func(srcs []activities.KnowledgeSource) map[int]bool {
		out := map[int]bool{}
		for _, s := range srcs {
			out[s.SourceIndex] = s.Related
		}
		return out
	}

	got := citedSources([]activities.KnowledgeSource{a, b}, numbered, "Quoted. [2]")
	if r := related(got); len(got) != 2 || !r[1] || r[2] {
		t.Errorf("cited [2]: %+v", got)
	}
	got = citedSources([]activities.KnowledgeSource{a, b}, numbered, "I could not find this in the documentation of this site.")
	if r := related(got); len(got) != 2 || !r[1] || !r[2] {
		t.Errorf("abstention: %+v", got)
	}
	got = citedSources([]activities.KnowledgeSource{a, b}, numbered, "Said again. [3]")
	if r := related(got); len(got) != 3 || r[1] || r[3] || !r[2] {
		t.Errorf("document 10 cited at [3]: %+v", got)
	}
}
