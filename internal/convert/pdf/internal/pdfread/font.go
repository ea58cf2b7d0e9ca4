// Copyright 2014 The Go Authors.  All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Fonts and their text encodings: built-in encodings, Differences and ToUnicode cmaps.

package pdfread

import (
	"sort"
	"strings"
)

// A Font represent a font in a PDF file.
// The methods interpret a Font dictionary stored in V.
type Font struct {
	V Value
}

// BaseFont returns the font's name (BaseFont property).
func (f Font) BaseFont() string {
	return f.V.Key("BaseFont").Name()
}

// FirstChar returns the code point of the first character in the font.
func (f Font) FirstChar() int {
	return int(f.V.Key("FirstChar").Int64())
}

// LastChar returns the code point of the last character in the font.
func (f Font) LastChar() int {
	return int(f.V.Key("LastChar").Int64())
}

// pageFont is a font as one content stream uses it: its name, encoding and
// widths read once.
type pageFont struct {
	base        string
	enc         TextEncoding
	first, last int
	widths      Value
}

func newPageFont(f Font) *pageFont {
	pf := &pageFont{base: f.BaseFont(), enc: f.getEncoder(), first: f.FirstChar(), last: f.LastChar(),
		widths: f.V.Key("Widths")}
	if i := strings.Index(pf.base, "+"); i >= 0 {
		pf.base = pf.base[i+1:]
	}
	if pf.enc == nil {
		pf.enc = &nopEncoder{}
	}
	return pf
}

func (f *pageFont) width(code int) float64 {
	if code < f.first || f.last < code {
		return 0
	}
	return f.widths.Index(code - f.first).Float64()
}

func (f Font) getEncoder() TextEncoding {
	enc := f.V.Key("Encoding")
	switch enc.Kind() {
	case Name:
		switch enc.Name() {
		case "WinAnsiEncoding":
			return &byteEncoder{&winAnsiEncoding}
		case "MacRomanEncoding":
			return &byteEncoder{&macRomanEncoding}
		case "Identity-H":
			return f.charmapEncoding()
		case "UniGB-UCS2-H":
			return &ucs2Encoder{}
		default:
			return &nopEncoder{}
		}
	case Dict:
		return newDictEncoder(enc.Key("Differences"))
	case Null:
		return f.charmapEncoding()
	default:
		return &nopEncoder{}
	}
}

func (f Font) charmapEncoding() TextEncoding {
	toUnicode := f.V.Key("ToUnicode")
	if toUnicode.Kind() == Stream {
		m := readCmap(toUnicode)
		if m == nil {
			return &nopEncoder{}
		}
		return m
	}

	return &byteEncoder{&pdfDocEncoding}
}

// newDictEncoder turns a /Differences array into a byte table once, so
// decoding costs the same whatever the array's length. The first name
// given to a code wins.
func newDictEncoder(diff Value) *byteEncoder {
	t := new([256]rune)
	var set [256]bool
	for i := range t {
		t[i] = rune(i)
	}
	n := -1
	for j := 0; j < diff.Len(); j++ {
		if diff.r != nil {
			diff.r.tick()
		}
		x := diff.Index(j)
		switch x.Kind() {
		case Integer:
			n = int(x.Int64())
		case Name:
			if n >= 0 && n < 256 && !set[n] {
				if r := glyphRune()[x.Name()]; r != 0 {
					t[n], set[n] = r, true
				}
			}
			n++
		}
	}
	return &byteEncoder{t}
}

// A TextEncoding represents a mapping between
// font code point sequences and UTF-8 text.
type TextEncoding interface {
	// Decode returns the UTF-8 text corresponding to
	// the sequence of code points in raw.
	Decode(raw string) (text string)
}

type nopEncoder struct {
}

func (e *nopEncoder) Decode(raw string) (text string) {
	return raw
}

type ucs2Encoder struct{}

func (e *ucs2Encoder) Decode(raw string) (text string) {
	return utf16Decode(raw)
}

type byteEncoder struct {
	table *[256]rune
}

func (e *byteEncoder) Decode(raw string) (text string) {
	r := make([]rune, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		r = append(r, e.table[raw[i]])
	}
	return string(r)
}

type byteRange struct {
	low  string
	high string
}

type bfrange struct {
	lo  string
	hi  string
	dst Value
}

// A cmap maps character codes to text: single codes by a map, ranges
// (kept disjoint and sorted by their first code) by binary search, so a
// large cmap does not make every glyph scan all of it.
type cmap struct {
	space  [4][]byteRange // codespace range
	bfchar map[string]string
	ranges [4][]bfrange
}

// find returns the range holding the code, or nil.
func (m *cmap) find(code string) *bfrange {
	rs := m.ranges[len(code)-1]
	i := sort.Search(len(rs), func(i int) bool { return rs[i].lo > code }) - 1
	if i >= 0 && code <= rs[i].hi {
		return &rs[i]
	}
	return nil
}

func (m *cmap) Decode(raw string) (text string) {
	var r []rune
Parse:
	for len(raw) > 0 {
		for n := 1; n <= 4 && n <= len(raw); n++ { // number of digits in character replacement (1-4 possible)
			for _, space := range m.space[n-1] { // find matching codespace Ranges for number of digits
				if space.low <= raw[:n] && raw[:n] <= space.high { // see if value is in range
					text := raw[:n]
					raw = raw[n:]
					if repl, ok := m.bfchar[text]; ok {
						r = append(r, []rune(utf16Decode(repl))...)
						continue Parse
					}
					if bfrange := m.find(text); bfrange != nil {
						if bfrange.dst.Kind() == String {
							s := bfrange.dst.RawString()
							if bfrange.lo != text && len(s) > 0 { // value isn't at the beginning of the range so scale result
								b := []byte(s)
								b[len(b)-1] += text[len(text)-1] - bfrange.lo[len(bfrange.lo)-1] // increment last byte by difference
								s = string(b)
							}
							r = append(r, []rune(utf16Decode(s))...)
							continue Parse
						}
						if bfrange.dst.Kind() == Array {
							n := text[len(text)-1] - bfrange.lo[len(bfrange.lo)-1]
							v := bfrange.dst.Index(int(n))
							if v.Kind() == String {
								s := v.RawString()
								r = append(r, []rune(utf16Decode(s))...)
								continue Parse
							}
						}
						r = append(r, noRune)
						continue Parse
					}
					r = append(r, noRune)
					continue Parse
				}
			}
		}
		r = append(r, noRune)
		raw = raw[1:]
	}
	return string(r)
}

func readCmap(toUnicode Value) *cmap {
	n := -1
	m := cmap{bfchar: map[string]string{}}
	var ranges []bfrange
	entries := 0
	ok := true
	Interpret(toUnicode, func(stk *Stack, op string) {
		if !ok {
			return
		}
		switch op {
		case "findresource":
			stk.Pop() // category
			stk.Pop() // key
			stk.Push(newDict())
		case "begincmap":
			stk.Push(newDict())
		case "endcmap":
			stk.Pop()
		case "begincodespacerange":
			n = int(stk.Pop().Int64())
		case "endcodespacerange":
			if n < 0 {
				ok = false
				return
			}
			for i := 0; i < min(n, stk.Len()/2); i++ {
				hi, lo := stk.Pop().RawString(), stk.Pop().RawString()
				if len(lo) == 0 || len(lo) != len(hi) || len(lo) > 4 {
					ok = false
					return
				}
				if len(m.space[len(lo)-1]) < maxCodeSpaces {
					m.space[len(lo)-1] = append(m.space[len(lo)-1], byteRange{lo, hi})
				}
			}
			n = -1
		case "beginbfchar":
			n = int(stk.Pop().Int64())
		case "endbfchar":
			if n < 0 {
				panic("missing beginbfchar")
			}
			for i := 0; i < min(n, stk.Len()/2); i++ {
				repl, orig := stk.Pop().RawString(), stk.Pop().RawString()
				if _, dup := m.bfchar[orig]; !dup && entries < maxCmapEntries {
					m.bfchar[orig] = repl
					entries++
				}
			}
		case "beginbfrange":
			n = int(stk.Pop().Int64())
		case "endbfrange":
			if n < 0 {
				panic("missing beginbfrange")
			}
			for i := 0; i < min(n, stk.Len()/3); i++ {
				dst, srcHi, srcLo := stk.Pop(), stk.Pop().RawString(), stk.Pop().RawString()
				if len(srcLo) >= 1 && len(srcLo) <= 4 && srcLo <= srcHi && entries < maxCmapEntries {
					ranges = append(ranges, bfrange{srcLo, srcHi, dst})
					entries++
				}
			}
		case "defineresource":
			stk.Pop().Name() // category
			value := stk.Pop()
			stk.Pop().Name() // key
			stk.Push(value)
		}
	})
	if !ok {
		return nil
	}
	// Ranges in the order they were read, then sorted by first code: an
	// overlapping range loses to the one before it.
	sort.SliceStable(ranges, func(i, j int) bool { return ranges[i].lo < ranges[j].lo })
	for _, br := range ranges {
		k := len(br.lo) - 1
		if rs := m.ranges[k]; len(rs) > 0 && br.lo <= rs[len(rs)-1].hi {
			continue
		}
		m.ranges[k] = append(m.ranges[k], br)
	}
	return &m
}
