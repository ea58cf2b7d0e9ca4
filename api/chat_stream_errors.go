package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/internal/chatevent"
)

// Setup errors of a streamed chat request (WIRE §4, as the reference's
// ChatService does): once a request asks for a stream, whatever stops it
// before its stream starts (validation, an unknown or inactive site, a
// thread of another member, a rate limit or token budget, a missing model
// configuration) is answered with HTTP 200 and an SSE error, then
// `data: [DONE]`, so the reference's client shows the message in the
// answer's bubble. Handlers simply return their errors; streamSetup, around
// every chat entry that can stream, turns them into the stream's format.
// A body that is not JSON at all cannot say it wants a stream, and keeps its
// HTTP error; so does a missing or wrong bot API key (401).

// StreamErrorStatusHeader carries, on an SSE setup error, the HTTP status
// the same error has without a stream (the event's payload is the
// reference's, which has no status).
const StreamErrorStatusHeader = "X-Lore-Error-Status"

// streamFormat is how a stream entry writes its setup error.
type streamFormat int

const (
	// responsesStream: {"type":"response.error","error":<message>}, [DONE].
	responsesStream streamFormat = iota
	// completionsStream: one chat-completion chunk "error-<uuid>" whose
	// delta content is "⚠️ <message>", finish_reason "stop", then [DONE].
	completionsStream
)

// streamSetup wraps a chat entry that can stream: an error it returns for a
// request whose JSON body has stream:true is written as an SSE error in
// format (see above).
func (s *Server) streamSetup(format streamFormat, h fiber.Handler) fiber.Handler {
	return func(c *fiber.Ctx) error {
		err := h(c)
		if err == nil {
			return nil
		}
		want, model := streamRequested(c.Body())
		if status, _ := classify(err); !want || status == http.StatusUnauthorized {
			// A bad API key stays a 401, which OpenAI SDKs report as such.
			return err
		}
		return s.writeStreamError(c, format, model, err)
	}
}

// streamRequested reads, leniently, whether a JSON body asks for a stream
// and which model it names (for the completions error chunk).
func streamRequested(body []byte) (bool, string) {
	var p struct {
		Stream json.RawMessage `json:"stream"`
		Model  json.RawMessage `json:"model"`
	}
	if json.Unmarshal(body, &p) != nil {
		return false, ""
	}
	var stream bool
	var model string
	_ = json.Unmarshal(p.Stream, &stream)
	_ = json.Unmarshal(p.Model, &model)
	return stream, model
}

// writeStreamError answers err as an SSE error stream in format (HTTP 200;
// the status err would have had is in StreamErrorStatusHeader, and headers
// such as Retry-After stay).
func (s *Server) writeStreamError(c *fiber.Ctx, format streamFormat, model string, err error) error {
	status, msg := classify(err)
	if status >= 500 {
		s.log.Error("chat stream setup failed", "status", status, "err", err, "path", c.Path(),
			"method", c.Method(), "request_id", c.Locals(requestIDKey))
	}
	setSSEHeaders(c)
	c.Set(StreamErrorStatusHeader, strconv.Itoa(status))
	var line []byte
	switch format {
	case completionsStream:
		if model == "" {
			model = "unknown"
		}
		ch := chunker{model: model, created: time.Now().Unix()}
		line = ch.chunk("error", map[string]any{"role": nil, "content": "⚠️ " + msg, "tool_calls": nil}, "stop")
	default:
		line = chatevent.Encode(chatevent.Error{Error: msg})
	}
	var b bytes.Buffer
	writeSSE(&b, 0, "", line)
	writeSSE(&b, 0, "", sseDone)
	return c.Status(http.StatusOK).Send(b.Bytes())
}
