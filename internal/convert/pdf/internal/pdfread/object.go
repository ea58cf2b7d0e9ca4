// Copyright 2014 The Go Authors.  All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Resolving indirect references and loading objects, from the file or from object streams.

package pdfread

import (
	"bytes"
	"fmt"
	"io"
)

func (r *Reader) resolve(parent objptr, x interface{}) Value {
	if ptr, ok := x.(objptr); ok {
		if r == nil || r.objs == nil { // a Value made outside a reader (Interpret's dicts)
			return Value{}
		}
		r.tick()
		obj, ok := r.objs[ptr]
		if !ok {
			obj = r.load(ptr)
			r.objs[ptr] = obj
		}
		x, parent = obj, ptr
	}

	switch x := x.(type) {
	case nil, bool, int64, float64, name, dict, array, stream:
		return Value{r, parent, x}
	case string:
		return Value{r, parent, x}
	default:
		panic(fmt.Errorf("unexpected value type %T in resolve", x))
	}
}

// load parses the object ptr refers to (nil when there is none).
func (r *Reader) load(ptr objptr) object {
	if ptr.id >= uint32(len(r.xref)) {
		return nil
	}
	xref := r.xref[ptr.id]
	if xref.ptr != ptr || !xref.inStream && xref.offset == 0 {
		return nil
	}
	r.loading++
	defer func() { r.loading-- }()
	if r.loading > maxLoadDepth {
		panic(fmt.Errorf("objects refer to each other deeper than %d while loading %v", maxLoadDepth, ptr))
	}
	if xref.inStream {
		return r.loadFromStream(ptr, xref.stream)
	}
	b := newBuffer(r, io.NewSectionReader(r.f, xref.offset, r.end-xref.offset), xref.offset)
	b.key = r.key
	b.useAES = r.useAES
	obj := b.readObject()
	def, ok := obj.(objdef)
	if !ok {
		panic(fmt.Errorf("loading %v: found %T instead of objdef", ptr, obj))
	}
	if def.ptr != ptr {
		panic(fmt.Errorf("loading %v: found %v", ptr, def.ptr))
	}
	if _, ok := def.obj.(objptr); ok {
		panic(fmt.Errorf("loading %v: a reference to a reference", ptr))
	}
	return def.obj
}

// An objStm is an unpacked object stream: its data and where each of its
// objects starts.
type objStm struct {
	data    []byte
	offsets map[uint32]int64
	extends Value
}

// loadFromStream reads the object ptr from the object stream at sp,
// following at most maxLoadDepth /Extends links.
func (r *Reader) loadFromStream(ptr, sp objptr) object {
	for i := 0; i < maxLoadDepth; i++ {
		st := r.objStream(sp)
		if off, ok := st.offsets[ptr.id]; ok {
			if off < 0 || off > int64(len(st.data)) {
				panic(fmt.Errorf("object %v outside its object stream", ptr))
			}
			b := newBuffer(r, bytes.NewReader(st.data[off:]), 0)
			b.allowEOF = true
			return b.readObject()
		}
		if st.extends.Kind() != Stream || st.extends.ptr == (objptr{}) {
			panic("cannot find object in stream")
		}
		sp = st.extends.ptr
	}
	panic("object stream /Extends chain too long")
}

// objStream unpacks an object stream once.
func (r *Reader) objStream(sp objptr) *objStm {
	if st, ok := r.objstms[sp]; ok {
		if st == nil {
			panic(fmt.Errorf("object stream %v needs itself", sp))
		}
		return st
	}
	r.objstms[sp] = nil // loading: a reference back to it fails
	if sp.id >= uint32(len(r.xref)) || r.xref[sp.id].inStream {
		panic(fmt.Errorf("object stream %v is missing or inside another object stream", sp))
	}
	strm := r.resolve(objptr{}, sp)
	if strm.Kind() != Stream {
		panic("not a stream")
	}
	if strm.Key("Type").Name() != "ObjStm" {
		panic("not an object stream")
	}
	n := strm.Key("N").Int64()
	first := strm.Key("First").Int64()
	if first <= 0 {
		panic("missing First")
	}
	rd := strm.Reader()
	data, err := io.ReadAll(rd)
	if err != nil {
		panic(err)
	}
	st := &objStm{data: data, offsets: map[uint32]int64{}, extends: strm.Key("Extends")}
	b := newBuffer(r, bytes.NewReader(data), 0)
	b.allowEOF = true
	for i := int64(0); i < n; i++ {
		id, ok1 := b.readToken().(int64)
		off, ok2 := b.readToken().(int64)
		if !ok1 || !ok2 || b.eof {
			break
		}
		if _, dup := st.offsets[uint32(id)]; !dup {
			st.offsets[uint32(id)] = first + off
		}
	}
	r.objstms[sp] = st
	return st
}
