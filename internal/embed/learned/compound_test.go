package learned

import (
	"context"
	"testing"
)

// A toy model with a few words: compounds split into the fewest known
// words, preferring even cuts; anything else is left alone.
func TestCompoundSplitsIntoKnownWords(t *testing.T) {
	words := []string{"free", "mem", "tmp", "dir", "array", "buff", "read", "stream", "creat", "car", "ray", "arr"}
	vecs := make([][]float32, len(words))
	weights := make([]float32, len(words))
	for i := range words {
		vecs[i] = []float32{float32(i + 1), 1, 0, 0}
		weights[i] = 1
	}
	m, err := Build(Info{Name: "t", Version: 1, Dim: 4}, words, vecs, weights, []float32{0, 0, 0, 1})
	if err != nil {
		t.Fatal(err)
	}
	split := func(term string) []string {
		var out []string
		for _, i := range m.compound(term) {
			out = append(out, words[i])
		}
		return out
	}
	for term, want := range map[string][]string{
		"freemem":               {"free", "mem"},
		"tmpdir":                {"tmp", "dir"},
		"arraybuff":             {"array", "buff"},
		"readstream":            {"read", "stream"},
		"readfreestream":        {"read", "free", "stream"},
		"carray":                {"car", "ray"}, // the even cut: car+ray over nothing shorter
		"free":                  nil,            // known: not a compound
		"freem":                 nil,            // too short to hold two pieces
		"freexyz":               nil,            // xyz is no word
		"free-mem":              nil,            // not an identifier
		"mémfree":               nil,
		"freememfreememfreemem": nil, // more than four pieces
	} {
		got := split(term)
		if len(got) != len(want) {
			t.Errorf("%s: %v, want %v", term, got, want)
			continue
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s: %v, want %v", term, got, want)
			}
		}
	}
	if !m.Knows("freemem") || m.Knows("freexyz") || m.Has("freemem") {
		t.Fatal("Knows / Has")
	}
}

// With the embedded model, an identifier that runs words together meets
// the words: os.freemem() is about free memory.
func TestHybridReadsCompoundIdentifiers(t *testing.T) {
	m, err := English()
	if err != nil {
		t.Fatal(err)
	}
	if m.Has("freemem") || !m.Knows("freemem") {
		t.Fatal("freemem should be unknown as a word and read as a compound")
	}
	h := NewHybrid(m, 0)
	v, err := h.Embed(context.Background(), []string{"freemem", "free memory", "rename a directory"})
	if err != nil {
		t.Fatal(err)
	}
	if near, far := dot(v[0], v[1]), dot(v[0], v[2]); near < 0.5 || near < far+0.2 {
		t.Fatalf("freemem·free memory %.3f, freemem·rename a directory %.3f", near, far)
	}
	if c := h.Coverage("freemem"); c != 1 {
		t.Fatalf("coverage of a compound %.2f", c)
	}
}
