// Copyright 2014 The Go Authors.  All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Interpreting a page's content stream into positioned glyphs.

package pdfread

import (
	"fmt"
)

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

// moveLine starts a new line offset by (tx, ty) from the start of the
// current one.
func (g *gstate) moveLine(tx, ty float64) {
	g.Tlm = matrix{{1, 0, 0}, {0, 1, 0}, {tx, ty, 1}}.mul(g.Tlm)
	g.Tm = g.Tlm
}

// needArgs panics with msg (a malformed content stream) unless the
// operator has n operands.
func needArgs(args []Value, n int, msg string) {
	if len(args) != n {
		panic(msg)
	}
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
			needArgs(args, 6, "bad g.Tm")
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
			g.moveLine(0, -g.Tl)

		case "Tc": // set character spacing
			needArgs(args, 1, "bad g.Tc")
			g.Tc = args[0].Float64()

		case "TD": // move text position and set leading
			needArgs(args, 2, "bad Td")
			g.Tl = -args[1].Float64()
			fallthrough
		case "Td": // move text position
			needArgs(args, 2, "bad Td")
			g.moveLine(args[0].Float64(), args[1].Float64())

		case "Tf": // set text font and size
			needArgs(args, 2, "bad TL")
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
			needArgs(args, 3, "bad \" operator")
			g.Tw = args[0].Float64()
			g.Tc = args[1].Float64()
			args = args[2:]
			fallthrough
		case "'": // move to next line and show text
			needArgs(args, 1, "bad ' operator")
			g.moveLine(0, -g.Tl)
			fallthrough
		case "Tj": // show text
			needArgs(args, 1, "bad Tj operator")
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
			needArgs(args, 1, "bad TL")
			g.Tl = args[0].Float64()

		case "Tm": // set text matrix and line matrix
			needArgs(args, 6, "bad g.Tm")
			var m matrix
			for i := 0; i < 6; i++ {
				m[i/2][i%2] = args[i].Float64()
			}
			m[2][2] = 1
			g.Tm = m
			g.Tlm = m

		case "Tr": // set text rendering mode
			needArgs(args, 1, "bad Tr")
			g.Tmode = int(args[0].Int64())

		case "Ts": // set text rise
			needArgs(args, 1, "bad Ts")
			g.Trise = args[0].Float64()

		case "Tw": // set word spacing
			needArgs(args, 1, "bad g.Tw")
			g.Tw = args[0].Float64()

		case "Tz": // set horizontal text scaling
			needArgs(args, 1, "bad Tz")
			g.Th = args[0].Float64() / 100
		}
	})
	return Content{Text: text}
}
