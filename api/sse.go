package api

import (
	"io"
	"strconv"

	"github.com/gofiber/fiber/v2"
)

// The framing of every server-sent event stream the API writes: the chat
// streams (responses and completions), their setup errors and the job
// progress stream.

// setSSEHeaders prepares a server-sent event response.
func setSSEHeaders(c *fiber.Ctx) {
	c.Set("Content-Type", "text/event-stream")
	c.Set("Cache-Control", "no-cache")
	c.Set("Connection", "keep-alive")
	c.Set("X-Accel-Buffering", "no")
}

// sseDone is the data of a stream's last event.
var sseDone = []byte("[DONE]")

// writeSSE writes one event: an "id:" line when id > 0, an "event:" line
// when name is set, then the data (one line: JSON or sseDone).
func writeSSE(w io.Writer, id int, name string, data []byte) {
	b := make([]byte, 0, len(data)+32)
	if id > 0 {
		b = strconv.AppendInt(append(b, "id: "...), int64(id), 10)
		b = append(b, '\n')
	}
	if name != "" {
		b = append(append(append(b, "event: "...), name...), '\n')
	}
	b = append(append(append(b, "data: "...), data...), "\n\n"...)
	_, _ = w.Write(b)
}
