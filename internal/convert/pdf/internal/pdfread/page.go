// Copyright 2014 The Go Authors.  All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

package pdfread

import (
	"fmt"
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
