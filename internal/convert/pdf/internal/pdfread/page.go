// Copyright 2014 The Go Authors.  All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package pdfread

import (
	"fmt"
	"sort"
	"strings"
)

// Bounds on the work one file may cause, whatever its structure claims.
const (
	// MaxPageGlyphs bounds the characters drawn on one page.
	MaxPageGlyphs = 1 << 20
	// maxTreeDepth bounds the page tree's nesting and a page's /Parent
	// chain (real files nest a handful of levels).
	maxTreeDepth = 64
	// maxTreeNodes bounds the nodes of the page tree walked.
	maxTreeNodes = 1 << 20
	// maxGStack bounds nested graphics states (q ... Q).
	maxGStack = 1024
	// maxCmapEntries bounds the mappings kept from one ToUnicode cmap, and
	// maxCodeSpaces the code-space ranges of one code length.
	maxCmapEntries = 1 << 17
	maxCodeSpaces  = 64
)

// A Page represent a single page in a PDF file.
// The methods interpret a Page dictionary stored in V.
type Page struct {
	V Value
}

// Pages walks the page tree in document order and returns its pages. A
// node met twice (a /Kids loop or a shared subtree) is skipped, a tree
// nested deeper than maxTreeDepth is malformed, and more than max pages is
// ErrTooLarge: the /Count entries are not trusted.
func (r *Reader) Pages(max int) (pages []Page, err error) {
	defer recoverErr(&err)
	root := r.Trailer().Key("Root").Key("Pages")
	if root.Key("Type").Name() == "Page" {
		return []Page{{root}}, nil
	}
	visited := map[objptr]bool{}
	if root.ptr != (objptr{}) {
		visited[root.ptr] = true
	}
	type frame struct {
		kids Value
		i    int
	}
	stack := []frame{{kids: root.Key("Kids")}}
	nodes := 0
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		if top.i >= top.kids.Len() {
			stack = stack[:len(stack)-1]
			continue
		}
		i := top.i
		top.i++
		if raw, ok := top.kids.data.(array); ok {
			if ptr, ok := raw[i].(objptr); ok {
				if visited[ptr] {
					continue
				}
				visited[ptr] = true
			}
		}
		r.tick()
		if nodes++; nodes > maxTreeNodes {
			return nil, fmt.Errorf("%w: the page tree has more than %d nodes", ErrTooLarge, maxTreeNodes)
		}
		kid := top.kids.Index(i)
		typ := kid.Key("Type").Name()
		switch {
		case typ == "Pages" || typ == "" && kid.Key("Kids").Kind() == Array:
			if len(stack) >= maxTreeDepth {
				return nil, fmt.Errorf("malformed PDF: the page tree is nested deeper than %d levels", maxTreeDepth)
			}
			stack = append(stack, frame{kids: kid.Key("Kids")})
		case typ == "Page" || typ == "" && kid.Kind() == Dict && !kid.Key("Contents").IsNull():
			if len(pages) >= max {
				return nil, fmt.Errorf("%w: more than %d pages", ErrTooLarge, max)
			}
			pages = append(pages, Page{kid})
		}
	}
	return pages, nil
}

// findInherited looks key up on the page and its ancestors, following at
// most maxTreeDepth /Parent links (a /Parent loop ends there).
func (p Page) findInherited(key string) Value {
	v := p.V
	for i := 0; i < maxTreeDepth && !v.IsNull(); i++ {
		if r := v.Key(key); !r.IsNull() {
			return r
		}
		v = v.Key("Parent")
	}
	return Value{}
}

// Resources returns the resources dictionary associated with the page.
func (p Page) Resources() Value {
	return p.findInherited("Resources")
}

// Font returns the font with the given name associated with the page.
func (p Page) Font(name string) Font {
	return Font{p.Resources().Key("Font").Key(name)}
}

// Texts returns the glyphs of the page, or why they cannot be read (a
// malformed stream, ErrTooLarge, or the reader's context error).
func (p Page) Texts() (text []Text, err error) {
	defer recoverErr(&err)
	return p.Content().Text, nil
}

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
				if r := nameToRune[x.Name()]; r != 0 {
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

type matrix [3][3]float64

var ident = matrix{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}

func (x matrix) mul(y matrix) matrix {
	var z matrix
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			for k := 0; k < 3; k++ {
				z[i][j] += x[i][k] * y[k][j]
			}
		}
	}
	return z
}

// A Text represents a single piece of text drawn on a page.
type Text struct {
	Font     string  // the font used
	FontSize float64 // the font size, in points (1/72 of an inch)
	X        float64 // the X coordinate, in points, increasing left to right
	Y        float64 // the Y coordinate, in points, increasing bottom to top
	W        float64 // the width of the text, in points
	S        string  // the actual UTF-8 text
}

// Content describes the basic content on a page: its text.
type Content struct {
	Text []Text
}

type gstate struct {
	Tc    float64
	Tw    float64
	Th    float64
	Tl    float64
	Tf    *pageFont
	Tfs   float64
	Tmode int
	Trise float64
	Tm    matrix
	Tlm   matrix
	Trm   matrix
	CTM   matrix
}

// popArgs pops every value currently on the stack and returns them with the
// bottom of the stack at args[0], matching the operand order expected by PDF
// content-stream operators.
func popArgs(stk *Stack) []Value {
	n := stk.Len()
	args := make([]Value, n)
	for i := n - 1; i >= 0; i-- {
		args[i] = stk.Pop()
	}
	return args
}

// Content returns the page's text, glyph by glyph. Fonts are looked up
// once per name (a content stream may switch fonts for every glyph), the
// graphics-state stack and the glyphs of one page are bounded, and the
// stream is read under the reader's context and unpacking budget.
func (p Page) Content() Content {
	if p.V.IsNull() || p.V.Key("Contents").Kind() == Null {
		return Content{}
	}
	r := p.V.r
	strm := p.V.Key("Contents")
	var enc TextEncoding = &nopEncoder{}

	var g = gstate{
		Th:  1,
		CTM: ident,
	}
	fonts := map[string]*pageFont{}

	var text []Text
	showText := func(s string) {
		n := 0
		decoded := enc.Decode(s)
		f := ""
		if g.Tf != nil {
			f = g.Tf.base
		}
		for _, ch := range decoded {
			var w0 float64
			if n < len(s) && g.Tf != nil {
				w0 = g.Tf.width(int(s[n]))
			}
			n++
			if len(text) >= MaxPageGlyphs {
				panic(stopError{fmt.Errorf("%w: a page draws more than %d characters", ErrTooLarge, MaxPageGlyphs)})
			}
			if r != nil {
				r.tick()
			}

			Trm := matrix{{g.Tfs * g.Th, 0, 0}, {0, g.Tfs, 0}, {0, g.Trise, 1}}.mul(g.Tm).mul(g.CTM)
			text = append(text, Text{f, Trm[0][0], Trm[2][0], Trm[2][1], w0 / 1000 * Trm[0][0], string(ch)})

			tx := w0/1000*g.Tfs + g.Tc
			tx *= g.Th
			g.Tm = matrix{{1, 0, 0}, {0, 1, 0}, {tx, 0, 1}}.mul(g.Tm)
		}
	}

	var gstack []gstate
	Interpret(strm, func(stk *Stack, op string) {
		args := popArgs(stk)
		switch op {
		default:
			// if debugOn {
			// 	fmt.Println(op, args)
			// }
			return

		case "cm": // update g.CTM
			if len(args) != 6 {
				panic("bad g.Tm")
			}
			var m matrix
			for i := 0; i < 6; i++ {
				m[i/2][i%2] = args[i].Float64()
			}
			m[2][2] = 1
			g.CTM = m.mul(g.CTM)

		case "gs": // set parameters from graphics state resource
			//gs := p.Resources().Key("ExtGState").Key(args[0].Name())
			//font := gs.Key("Font")
			//if font.Kind() == Array && font.Len() == 2 {
			// if debugOn {
			// 	fmt.Println("FONT", font)
			// }
			//}

		case "f": // fill
		case "g": // setgray
		case "l": // lineto
		case "m": // moveto

		case "cs": // set colorspace non-stroking
		case "scn": // set color non-stroking

		case "re": // append rectangle to path

		case "q": // save graphics state
			if len(gstack) >= maxGStack {
				panic(fmt.Errorf("graphics states nested deeper than %d", maxGStack))
			}
			gstack = append(gstack, g)

		case "Q": // restore graphics state (an unbalanced Q is ignored)
			if n := len(gstack) - 1; n >= 0 {
				g = gstack[n]
				gstack = gstack[:n]
			}

		case "BT": // begin text (reset text matrix and line matrix)
			g.Tm = ident
			g.Tlm = g.Tm

		case "ET": // end text

		case "T*": // move to start of next line
			x := matrix{{1, 0, 0}, {0, 1, 0}, {0, -g.Tl, 1}}
			g.Tlm = x.mul(g.Tlm)
			g.Tm = g.Tlm

		case "Tc": // set character spacing
			if len(args) != 1 {
				panic("bad g.Tc")
			}
			g.Tc = args[0].Float64()

		case "TD": // move text position and set leading
			if len(args) != 2 {
				panic("bad Td")
			}
			g.Tl = -args[1].Float64()
			fallthrough
		case "Td": // move text position
			if len(args) != 2 {
				panic("bad Td")
			}
			tx := args[0].Float64()
			ty := args[1].Float64()
			x := matrix{{1, 0, 0}, {0, 1, 0}, {tx, ty, 1}}
			g.Tlm = x.mul(g.Tlm)
			g.Tm = g.Tlm

		case "Tf": // set text font and size
			if len(args) != 2 {
				panic("bad TL")
			}
			f := args[0].Name()
			pf := fonts[f]
			if pf == nil {
				pf = newPageFont(p.Font(f))
				fonts[f] = pf
			}
			g.Tf = pf
			enc = pf.enc
			g.Tfs = args[1].Float64()

		case "\"": // set spacing, move to next line, and show text
			if len(args) != 3 {
				panic("bad \" operator")
			}
			g.Tw = args[0].Float64()
			g.Tc = args[1].Float64()
			args = args[2:]
			fallthrough
		case "'": // move to next line and show text
			if len(args) != 1 {
				panic("bad ' operator")
			}
			x := matrix{{1, 0, 0}, {0, 1, 0}, {0, -g.Tl, 1}}
			g.Tlm = x.mul(g.Tlm)
			g.Tm = g.Tlm
			fallthrough
		case "Tj": // show text
			if len(args) != 1 {
				panic("bad Tj operator")
			}
			showText(args[0].RawString())

		case "TJ": // show text, allowing individual glyph positioning
			v := args[0]
			for i := 0; i < v.Len(); i++ {
				x := v.Index(i)
				if x.Kind() == String {
					showText(x.RawString())
				} else {
					tx := -x.Float64() / 1000 * g.Tfs * g.Th
					g.Tm = matrix{{1, 0, 0}, {0, 1, 0}, {tx, 0, 1}}.mul(g.Tm)
				}
			}
			showText("\n")

		case "TL": // set text leading
			if len(args) != 1 {
				panic("bad TL")
			}
			g.Tl = args[0].Float64()

		case "Tm": // set text matrix and line matrix
			if len(args) != 6 {
				panic("bad g.Tm")
			}
			var m matrix
			for i := 0; i < 6; i++ {
				m[i/2][i%2] = args[i].Float64()
			}
			m[2][2] = 1
			g.Tm = m
			g.Tlm = m

		case "Tr": // set text rendering mode
			if len(args) != 1 {
				panic("bad Tr")
			}
			g.Tmode = int(args[0].Int64())

		case "Ts": // set text rise
			if len(args) != 1 {
				panic("bad Ts")
			}
			g.Trise = args[0].Float64()

		case "Tw": // set word spacing
			if len(args) != 1 {
				panic("bad g.Tw")
			}
			g.Tw = args[0].Float64()

		case "Tz": // set horizontal text scaling
			if len(args) != 1 {
				panic("bad Tz")
			}
			g.Th = args[0].Float64() / 100
		}
	})
	return Content{Text: text}
}
