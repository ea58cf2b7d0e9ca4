package oai

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"
	"sync"

	"github.com/openai/openai-go/option"
)

// maxStreamLine bounds one line of a model's event stream (one chunk's JSON),
// so a server cannot make the client buffer without limit.
const maxStreamLine = 4 << 20

// errStreamLine is returned when a line of the event stream exceeds maxStreamLine.
var errStreamLine = errors.New("oai: event stream line too long")

// dropKeepAlives is a request middleware that removes the events without
// data from a streamed response before openai-go's decoder sees them.
// Gateways and servers send keep-alive comments (": OPENROUTER PROCESSING",
// ": ping", llama.cpp's bare ":") while a model thinks; openai-go dispatches
// the blank line after such a comment as an event with empty data and fails
// the whole stream with "unexpected end of JSON input". The server-sent
// events standard says an event without data is not dispatched, so dropping
// them changes nothing a conforming reader would see.
func dropKeepAlives(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	if err != nil || res == nil || res.Body == nil {
		return res, err
	}
	if mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mt == "text/event-stream" {
		r := readers.Get().(*bufio.Reader)
		r.Reset(res.Body)
		res.Body = &eventFilter{src: res.Body, r: r}
	}
	return res, err
}

// eventFilter passes through the events of a stream that carry data and
// drops comments and data-less events. It holds one event's field lines until
// the event either gets a data line (then they pass) or ends without one.
type eventFilter struct {
	src     io.Closer
	r       *bufio.Reader
	held    []byte // field lines of the current event before its first data line
	hasData bool   // the current event has a data line (its lines pass at once)
	out     []byte // filtered bytes not yet read
	err     error
}

// Read returns filtered bytes, reading whole lines from the response body.
func (f *eventFilter) Read(p []byte) (int, error) {
	for len(f.out) == 0 && f.err == nil {
		f.err = f.step()
	}
	n := copy(p, f.out)
	f.out = f.out[n:]
	if len(f.out) > 0 {
		return n, nil
	}
	return n, f.err
}

// step reads one line and decides where it goes.
func (f *eventFilter) step() error {
	line, err := f.line()
	if len(line) > 0 {
		f.filter(line)
	}
	if err == io.EOF && len(f.held) > 0 && !f.hasData {
		f.held = f.held[:0]
	}
	return err
}

// line reads one line with its end, at most maxStreamLine bytes.
func (f *eventFilter) line() ([]byte, error) {
	var buf []byte
	for {
		part, err := f.r.ReadSlice('\n')
		if len(buf)+len(part) > maxStreamLine {
			return nil, errStreamLine
		}
		if err == bufio.ErrBufferFull {
			buf = append(buf, part...)
			continue
		}
		if buf == nil {
			return part, err
		}
		return append(buf, part...), err
	}
}

// filter routes one line: comments vanish, a blank line ends the event (and
// is kept only when the event had data), other field lines (event:, id:, an
// empty data:) wait for a data line with a value.
func (f *eventFilter) filter(line []byte) {
	body := bytes.TrimRight(line, "\r\n")
	switch {
	case len(body) == 0:
		if f.hasData {
			f.out = append(f.out, line...)
		}
		f.held, f.hasData = f.held[:0], false
	case body[0] == ':':
	case f.hasData:
		f.out = append(f.out, line...)
	case hasData(body):
		f.out = append(append(f.out, f.held...), line...)
		f.held, f.hasData = f.held[:0], true
	default:
		f.held = append(f.held, line...)
	}
}

// hasData reports whether a line is a data field with a non-blank value: a
// chunk stream's "data:" alone would only make an empty event.
func hasData(body []byte) bool {
	v, ok := bytes.CutPrefix(body, []byte("data:"))
	return ok && len(bytes.TrimSpace(v)) > 0
}

// readers are the filters' line buffers: a chat turn streams twice, and a
// fresh 64 KB buffer each time was 2% of lore's CPU under load (zeroing and
// collecting it).
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 64<<10) }}

// errClosed is what a Read after Close returns.
var errClosed = errors.New("oai: read on a closed event stream")

// Close closes the response body and gives the line buffer back (the
// stream's reader closes it once, after its last Read).
func (f *eventFilter) Close() error {
	if f.r != nil {
		f.r.Reset(nil)
		readers.Put(f.r)
		f.r = nil
		if f.err == nil {
			f.err = errClosed
		}
	}
	return f.src.Close()
}
