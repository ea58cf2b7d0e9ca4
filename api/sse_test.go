package api

import (
	"bytes"
	"testing"
)

// Every stream's framing comes from writeSSE: the chat client splits on
// lines and reads "data: " lines up to "data: [DONE]"; EventSource readers
// of the job stream also read id and event.
func TestWriteSSEFraming(t *testing.T) {
	var b bytes.Buffer
	writeSSE(&b, 1, "", []byte(`{"type":"response.created"}`))
	writeSSE(&b, 12, "progress", []byte(`{"done":3}`))
	writeSSE(&b, 0, "done", sseDone)
	writeSSE(&b, 0, "", sseDone)
	want := "id: 1\ndata: {\"type\":\"response.created\"}\n\n" +
		"id: 12\nevent: progress\ndata: {\"done\":3}\n\n" +
		"event: done\ndata: [DONE]\n\n" +
		"data: [DONE]\n\n"
	if b.String() != want {
		t.Fatalf("framing\n got %q\nwant %q", b.String(), want)
	}
}
