package pdfread

import (
	_ "embed"
	"strconv"
	"strings"
	"sync"
)

// glyphNames is the table of glyph names a font's /Differences may use,
// kept as data (one "name hex" line each) rather than a map literal.
//
//go:embed glyphnames.txt
var glyphNames string

// glyphRune maps a glyph name to its rune, parsed from glyphNames on first
// use.
var glyphRune = sync.OnceValue(func() map[string]rune {
	m := make(map[string]rune, 4400)
	for _, line := range strings.Split(glyphNames, "\n") {
		name, hex, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		if r, err := strconv.ParseUint(hex, 16, 32); err == nil {
			m[name] = rune(r)
		}
	}
	return m
})
