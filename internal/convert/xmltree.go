package convert

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
)

// Node is one element of a parsed Office XML part, with namespaces dropped
// (w:p and a:p are both "p": each format knows which one it reads).
type Node struct {
	Name     string
	Attr     map[string]string
	Children []*Node
	// Text is the character data directly inside the element.
	Text string
}

// maxDepth bounds element nesting, so a hostile part cannot exhaust the stack.
const maxDepth = 256

// ParseXML parses an XML part into a tree of Nodes. An element's text is
// gathered in a buffer of its own and set when the element ends, so text
// split into many pieces (whitespace between thousands of runs) costs its
// length, not its length squared.
func ParseXML(data []byte) (*Node, error) { return ParseXMLContext(context.Background(), data) }

// ParseXMLContext is ParseXML stopping when ctx is done.
func ParseXMLContext(ctx context.Context, data []byte) (*Node, error) {
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = false
	root := &Node{Name: "#root"}
	stack := []*Node{root}
	texts := [][]byte{nil} // the text so far of each element on the stack
	setText := func(i int) {
		if len(texts[i]) > 0 {
			stack[i].Text = string(texts[i])
		}
	}
	for n := 0; ; n++ {
		if n&4095 == 4095 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		top := stack[len(stack)-1]
		switch t := tok.(type) {
		case xml.StartElement:
			if len(stack) > maxDepth {
				return nil, fmt.Errorf("%w: elements nested deeper than %d", ErrCorrupt, maxDepth)
			}
			n := &Node{Name: t.Name.Local}
			if len(t.Attr) > 0 {
				n.Attr = make(map[string]string, len(t.Attr))
				for _, a := range t.Attr {
					n.Attr[a.Name.Local] = a.Value
				}
			}
			top.Children = append(top.Children, n)
			stack = append(stack, n)
			texts = append(texts, nil)
		case xml.EndElement:
			if len(stack) > 1 {
				setText(len(stack) - 1)
				stack = stack[:len(stack)-1]
				texts = texts[:len(texts)-1]
			}
		case xml.CharData:
			texts[len(texts)-1] = append(texts[len(texts)-1], t...)
		}
	}
	for i := range stack {
		setText(i) // elements left open at the end
	}
	return root, nil
}

// Get returns the value of an attribute (local name), or "".
func (n *Node) Get(attr string) string {
	if n == nil || n.Attr == nil {
		return ""
	}
	return n.Attr[attr]
}

// Child returns the first direct child of that name, or nil.
func (n *Node) Child(name string) *Node {
	if n == nil {
		return nil
	}
	for _, c := range n.Children {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Find returns the first descendant (depth first) of that name, or nil.
func (n *Node) Find(name string) *Node {
	if n == nil {
		return nil
	}
	for _, c := range n.Children {
		if c.Name == name {
			return c
		}
		if f := c.Find(name); f != nil {
			return f
		}
	}
	return nil
}

// All returns every descendant of that name in document order, not looking
// inside matches.
func (n *Node) All(name string) []*Node {
	var out []*Node
	var walk func(*Node)
	walk = func(x *Node) {
		for _, c := range x.Children {
			if c.Name == name {
				out = append(out, c)
				continue
			}
			walk(c)
		}
	}
	if n != nil {
		walk(n)
	}
	return out
}
