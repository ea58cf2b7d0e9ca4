package oai

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
)

func filtered(t *testing.T, in string) (string, error) {
	t.Helper()
	f := &eventFilter{src: io.NopCloser(nil), r: bufio.NewReaderSize(strings.NewReader(in), 16)}
	out, err := io.ReadAll(f)
	return string(out), err
}

// Keep-alive comments, data-less events and empty data fields vanish; events
// with data pass byte for byte, with their other fields and line ends.
func TestEventFilterDropsDatalessEvents(t *testing.T) {
	in := ": OPENROUTER PROCESSING\n\n" +
		":\r\n\r\n" +
		"event: ping\n\n" +
		"data:\n\n" +
		"event: message\r\nid: 7\r\ndata: {\"a\":1}\r\n\r\n" +
		": ping - 2026-07-26\n\n" +
		"data:{\"b\":2}\n: inside\ndata: {\"c\":3}\n\n" +
		"data: [DONE]\n\n"
	want := "event: message\r\nid: 7\r\ndata: {\"a\":1}\r\n\r\n" +
		"data:{\"b\":2}\ndata: {\"c\":3}\n\n" +
		"data: [DONE]\n\n"
	got, err := filtered(t, in)
	if err != nil || got != want {
		t.Fatalf("got %q, %v\nwant %q", got, err, want)
	}
}

// A stream that ends without a final blank line keeps its last data line; a
// trailing data-less event is dropped.
func TestEventFilterEndOfStream(t *testing.T) {
	if got, _ := filtered(t, "data: {\"a\":1}"); got != "data: {\"a\":1}" {
		t.Errorf("got %q", got)
	}
	if got, _ := filtered(t, "data: x\n\nevent: ping\n"); got != "data: x\n\n" {
		t.Errorf("got %q", got)
	}
}

// A line longer than maxStreamLine fails the stream instead of growing the buffer.
func TestEventFilterBoundsLines(t *testing.T) {
	_, err := filtered(t, "data: "+strings.Repeat("x", maxStreamLine+1)+"\n\n")
	if !errors.Is(err, errStreamLine) {
		t.Fatalf("err = %v, want errStreamLine", err)
	}
}

// A filter gives its line buffer back on Close; a Read after it fails
// instead of reading through a buffer another stream now holds.
func TestEventFilterReadAfterClose(t *testing.T) {
	f := &eventFilter{src: io.NopCloser(nil), r: bufio.NewReaderSize(strings.NewReader("data: {\"a\":1}\n\ndata: {\"b\":2}\n\n"), 16)}
	buf := make([]byte, 4)
	if n, err := f.Read(buf); n == 0 || err != nil {
		t.Fatalf("first read: %d %v", n, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	rest, err := io.ReadAll(f)
	if err != errClosed {
		t.Fatalf("read after close: %q, %v", rest, err)
	}
}
