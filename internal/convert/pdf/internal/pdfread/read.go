// Copyright 2014 The Go Authors.  All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Package pdfread implements reading of PDF files. It is a copy of
// github.com/ledongthuc/pdf (v0.0.0-20260907135840-6c8c28e0e8a0, see
// LICENSE) hardened for hostile files: it reads under a context checked in
// every loop, walks the page tree with a visited set and a depth bound
// (Reader.Pages) instead of trusting /Count, bounds /Parent, /Prev and
// /Extends chains, object-stream nesting, the xref table, cmap and
// Differences sizes, graphics-state nesting and the glyphs of a page,
// charges every byte read from a stream to an unpacking budget, and parses
// each object and object stream once.
//
// # Overview
//
// PDF is Adobe's Portable Document Format, ubiquitous on the internet.
// A PDF document is a complex data format built on a fairly simple structure.
// This package exposes the simple structure along with some wrappers to
// extract basic information. If more complex information is needed, it is
// possible to extract that information by interpreting the structure exposed
// by this package.
//
// Specifically, a PDF is a data structure built from Values, each of which has
// one of the following Kinds:
//
//	Null, for the null object.
//	Integer, for an integer.
//	Real, for a floating-point number.
//	Bool, for a boolean value.
//	Name, for a name constant (as in /Helvetica).
//	String, for a string constant.
//	Dict, for a dictionary of name-value pairs.
//	Array, for an array of values.
//	Stream, for an opaque data stream and associated header dictionary.
//
// The accessors on Value—Int64, Float64, Bool, Name, and so on—return
// a view of the data as the given type. When there is no appropriate view,
// the accessor returns a zero result. For example, the Name accessor returns
// the empty string if called on a Value v for which v.Kind() != Name.
// Returning zero values this way, especially from the Dict and Array accessors,
// which themselves return Values, makes it possible to traverse a PDF quickly
// without writing any error checking. On the other hand, it means that mistakes
// can go unreported.
//
// The basic structure of the PDF file is exposed as the graph of Values.
//
// Most richer data structures in a PDF file are dictionaries with specific interpretations
// of the name-value pairs. The Font and Page wrappers make the interpretation
// of a specific Value as the corresponding type easier. They are only helpers, though:
// they are implemented only in terms of the Value API and could be moved outside
// the package. Equally important, traversal of other PDF data structures can be implemented
// in other packages as needed.
package pdfread

// BUG(rsc): The package is incomplete, although it has been used successfully on some
// large real-world PDF files.

// BUG(rsc): There is no support for closing open PDF files. If you drop all references to a Reader,
// the underlying reader will eventually be garbage collected.

// BUG(rsc): The library makes no attempt at efficiency. A value cache maintained in the Reader
// would probably help significantly.

// BUG(rsc): The support for reading encrypted files is weak.

// BUG(rsc): The Value API does not support error reporting. The intent is to allow users to
// set an error reporting callback in Reader, but that code has not been implemented.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
)

// debugOn prints what the reader skips.
var debugOn = false

// A Reader is a single PDF file open for reading.
type Reader struct {
	f          io.ReaderAt
	end        int64
	xref       []xref
	trailer    dict
	trailerptr objptr
	key        []byte
	useAES     bool

	ctx         context.Context
	ticks       uint
	unpacked    int64 // bytes read out of streams so far
	maxUnpacked int64
	objs        map[objptr]object  // objects already parsed
	objstms     map[objptr]*objStm // object streams already unpacked
	loading     int                // nested object loads
}

// Bounds on the structure of one file.
const (
	// maxObjects bounds the cross-reference table.
	maxObjects = 1 << 21
	// maxXrefSections bounds the /Prev chain of cross-reference sections.
	maxXrefSections = 1024
	// maxLoadDepth bounds objects whose loading needs other objects (an
	// object stream's /Length, its /Extends chain).
	maxLoadDepth = 32
	// DefaultMaxUnpacked is the default budget of bytes read out of streams.
	DefaultMaxUnpacked = 512 << 20
)

// ErrTooLarge: the file needs more than the reader's bounds allow.
var ErrTooLarge = errors.New("the PDF is over the reader's limits")

// stopError ends the reading at once, through the recovers that turn a
// malformed operand into a skipped one: the context is done or a budget is
// spent.
type stopError struct{ err error }

func (e stopError) Error() string { return e.err.Error() }
func (e stopError) Unwrap() error { return e.err }

// tick counts a unit of work and checks the context every so often.
func (r *Reader) tick() {
	r.ticks++
	if r.ticks&1023 == 0 && r.ctx != nil {
		if err := r.ctx.Err(); err != nil {
			panic(stopError{err})
		}
	}
}

// recoverErr turns a panic raised while reading into *err.
func recoverErr(err *error) {
	if x := recover(); x != nil {
		switch e := x.(type) {
		case stopError:
			*err = e.err
		case error:
			*err = fmt.Errorf("malformed PDF: %w", e)
		default:
			*err = fmt.Errorf("malformed PDF: %v", x)
		}
	}
}

// countingReader charges what is read from a stream to the reader's
// unpacking budget.
type countingReader struct {
	r  *Reader
	rd io.Reader
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.rd.Read(p)
	c.r.unpacked += int64(n)
	if c.r.unpacked > c.r.maxUnpacked {
		panic(stopError{fmt.Errorf("%w: its streams unpack to more than %d bytes", ErrTooLarge, c.r.maxUnpacked)})
	}
	c.r.tick()
	return n, err
}

type xref struct {
	ptr      objptr
	inStream bool
	stream   objptr
	offset   int64
}

// NewReader opens a file for reading, using the data in f with the given total size.
func NewReader(f io.ReaderAt, size int64) (*Reader, error) {
	return NewReaderContext(context.Background(), f, size, 0)
}

// NewReaderContext opens a file for reading under ctx: every loop of the
// reader checks it, including later reads of pages, and its streams may
// unpack to at most maxUnpacked bytes in all (0: DefaultMaxUnpacked).
func NewReaderContext(ctx context.Context, f io.ReaderAt, size int64, maxUnpacked int64) (*Reader, error) {
	if maxUnpacked <= 0 {
		maxUnpacked = DefaultMaxUnpacked
	}
	return newReader(ctx, f, size, maxUnpacked, nil)
}

// NewReaderEncrypted opens a file for reading, using the data in f with the given total size.
// If the PDF is encrypted, NewReaderEncrypted calls pw repeatedly to obtain passwords
// to try. If pw returns the empty string, NewReaderEncrypted stops trying to decrypt
// the file and returns an error.
func NewReaderEncrypted(f io.ReaderAt, size int64, pw func() string) (r *Reader, err error) {
	return newReader(context.Background(), f, size, DefaultMaxUnpacked, pw)
}

func newReader(ctx context.Context, f io.ReaderAt, size int64, maxUnpacked int64, pw func() string) (r *Reader, err error) {
	defer func() {
		if x := recover(); x != nil {
			r = nil
			switch e := x.(type) {
			case stopError:
				err = e.err
			case error:
				err = e
			default:
				err = fmt.Errorf("malformed PDF: %v", x)
			}
		}
	}()
	if size < 100 {
		return nil, fmt.Errorf("not a PDF file: %d bytes", size)
	}

	buf := make([]byte, 10)
	f.ReadAt(buf, 0)
	if !bytes.HasPrefix(buf, []byte("%PDF-1.")) || buf[7] < '0' || buf[7] > '7' || buf[8] != '\r' && buf[8] != '\n' {
		return nil, fmt.Errorf("not a PDF file: invalid header")
	}
	end := size
	const endChunk = 100
	buf = make([]byte, endChunk)
	f.ReadAt(buf, end-endChunk)
	for len(buf) > 0 && buf[len(buf)-1] == '\n' || buf[len(buf)-1] == '\r' {
		buf = buf[:len(buf)-1]
	}
	buf = bytes.TrimRight(buf, "\r\n\t ")
	if !bytes.HasSuffix(buf, []byte("%%EOF")) {
		return nil, fmt.Errorf("not a PDF file: missing %%%%EOF")
	}
	i := findLastLine(buf, "startxref")
	if i < 0 {
		return nil, fmt.Errorf("malformed PDF file: missing final startxref")
	}

	r = &Reader{
		f:           f,
		end:         end,
		ctx:         ctx,
		maxUnpacked: maxUnpacked,
		objs:        map[objptr]object{},
		objstms:     map[objptr]*objStm{},
	}
	pos := end - endChunk + int64(i)
	b := newBuffer(r, io.NewSectionReader(f, pos, end-pos), pos)
	if b.readToken() != keyword("startxref") {
		return nil, fmt.Errorf("malformed PDF file: missing startxref")
	}
	startxref, ok := b.readToken().(int64)
	if !ok {
		return nil, fmt.Errorf("malformed PDF file: startxref not followed by integer")
	}
	b = newBuffer(r, io.NewSectionReader(r.f, startxref, r.end-startxref), startxref)
	xref, trailerptr, trailer, err := readXref(r, b)
	if err != nil {
		return nil, err
	}
	r.xref = xref
	r.trailer = trailer
	r.trailerptr = trailerptr
	if trailer["Encrypt"] == nil {
		return r, nil
	}
	err = r.initEncrypt("")
	if err == nil {
		return r, nil
	}
	if pw == nil || err != ErrInvalidPassword {
		return nil, err
	}
	for {
		next := pw()
		if next == "" {
			break
		}
		if r.initEncrypt(next) == nil {
			return r, nil
		}
	}
	return nil, err
}

// Trailer returns the file's Trailer value.
func (r *Reader) Trailer() Value {
	return Value{r, r.trailerptr, r.trailer}
}
