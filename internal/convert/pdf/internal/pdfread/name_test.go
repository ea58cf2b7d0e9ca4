package pdfread

import (
	"strings"
	"testing"
)

// Every line of the glyph table is read, and names map to their runes.
func TestGlyphNames(t *testing.T) {
	m := glyphRune()
	lines := 0
	for _, l := range strings.Split(strings.TrimSpace(glyphNames), "\n") {
		if !strings.HasPrefix(l, "#") {
			lines++
		}
	}
	if len(m) != lines || lines < 4000 {
		t.Fatalf("%d names from %d lines", len(m), lines)
	}
	for name, want := range map[string]rune{"nbspace": 0xA0, "sterling": 0xA3, "wonmonospace": 0xFFE6} {
		if got := m[name]; got != want {
			t.Errorf("%s: %U, want %U", name, got, want)
		}
	}
	if m["notaglyph"] != 0 {
		t.Error("an unknown name has a rune")
	}
}
