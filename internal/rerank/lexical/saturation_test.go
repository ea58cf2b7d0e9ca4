package lexical

import (
	"strings"
	"testing"
)

// TestRepeatsSaturate: twenty repeats of a query term in a passage score
// less than 1.95 times one occurrence in a passage of the same length (k1
// 0.9 caps repeats at 1.9 times; the usual 1.2 would allow 2.2), so a
// passage that repeats a topic many times (an overview, a list of links)
// gains less over one that names it once than covering another of the
// question's terms is worth.
func TestRepeatsSaturate(t *testing.T) {
	once := "restore" + strings.Repeat(" filler", 19)
	many := strings.TrimSpace(strings.Repeat("restore ", 20))
	s := Score("restore", []string{once, many})
	if s[0] <= 0 || s[1] <= s[0] {
		t.Fatalf("scores %v: repeats should still count for something", s)
	}
	if r := s[1] / s[0]; r >= 1.95 {
		t.Errorf("20 repeats score %.3f times one occurrence, want under 1.95", r)
	}
	// Coverage beats repetition: a passage with both of the question's terms
	// once outranks one with one of them twenty times, at equal length.
	both := "restore backup" + strings.Repeat(" filler", 18)
	s = Score("restore backup", []string{many, both, "backup" + strings.Repeat(" filler", 19)})
	if s[1] <= s[0] {
		t.Errorf("both terms once %.3f, one term twenty times %.3f: want coverage first", s[1], s[0])
	}
}
