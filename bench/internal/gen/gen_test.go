package gen

import (
	"strings"
	"testing"
)

func TestKeywordOnlyWherePlanted(t *testing.T) {
	g := New(1)
	for i := range 300 {
		d := g.Document(g.Title(), 4096, i%100 == 7)
		if len(d) < 4096 || len(d) > 8192 {
			t.Fatalf("document %d has %d bytes", i, len(d))
		}
		if got, want := strings.Count(strings.ToLower(d), Keyword), map[bool]int{true: 1, false: 0}[i%100 == 7]; got != want {
			t.Fatalf("document %d holds the keyword %d times, want %d", i, got, want)
		}
	}
}
