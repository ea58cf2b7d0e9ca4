package api

import (
	"fmt"
	"strings"
	"testing"
)

func numbered(n int, change map[int]string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if s, ok := change[i]; ok {
			b.WriteString(s + "\n")
			continue
		}
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// TestLineDiffHunks: changes further apart than two contexts make separate
// hunks with their own line numbers, nearer ones one hunk; a text without a
// final line break diffs like one with it.
func TestLineDiffHunks(t *testing.T) {
	a := numbered(30, nil)
	var far RevisionDiff
	lineDiff(&far, a, numbered(30, map[int]string{3: "three", 25: "twenty-five"}), "a", "b")
	if len(far.Hunks) != 2 || far.Added != 2 || far.Removed != 2 {
		t.Fatalf("far changes: %+v", far)
	}
	if h := far.Hunks[1]; h.OldStart != 22 || h.OldLines != 7 || h.NewStart != 22 || h.NewLines != 7 {
		t.Fatalf("second hunk %+v", h)
	}
	if !strings.Contains(far.Unified, "@@ -1,6 +1,6 @@\n line 1\n line 2\n-line 3\n+three\n line 4\n") {
		t.Fatalf("unified:\n%s", far.Unified)
	}
	var near RevisionDiff
	lineDiff(&near, a, numbered(30, map[int]string{3: "three", 9: "nine"}), "a", "b")
	if len(near.Hunks) != 1 || near.Hunks[0].OldStart != 1 || near.Hunks[0].OldLines != 12 {
		t.Fatalf("near changes: %+v", near.Hunks)
	}
	var same RevisionDiff
	lineDiff(&same, a, a, "a", "b")
	if len(same.Hunks) != 0 || same.Unified != "" || same.Added+same.Removed != 0 {
		t.Fatalf("no change: %+v", same)
	}
	var tail RevisionDiff
	lineDiff(&tail, "x\ny", "x\nz", "a", "b")
	if tail.Added != 1 || tail.Removed != 1 || tail.Unified != "--- a\n+++ b\n@@ -1,2 +1,2 @@\n x\n-y\n+z\n" {
		t.Fatalf("no final break: %+v", tail)
	}
}
