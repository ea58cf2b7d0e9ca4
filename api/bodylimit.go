package api

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/internal/msgr"
)

// Request bodies are streamed (StreamRequestBody, no multipart pre-parse):
// fasthttp reads nothing past the headers before a handler asks. Every route
// that takes a body reads it through limitBody (JSON and webhooks: buffered
// up to the route's limit) or multipartForm (uploads: streamed to temporary
// files up to the upload limit), so no route reads past its limit whatever
// the Content-Type, Content-Length or transfer encoding.

// multipartSlack is what an upload request may carry on the wire beyond
// LORE_UPLOAD_MAX_BYTES: part headers, boundaries and small form fields.
const multipartSlack = 64 << 10

// multipartMemory is how much of a multipart form is kept in memory; larger
// files go to temporary files that the handler removes.
const multipartMemory = 256 << 10

// bodyMax is the most bytes route r reads from a request body on the wire.
func (s *Server) bodyMax(r Route) int64 {
	switch {
	case r.MaxBody > 0:
		return r.MaxBody
	case r.Multipart:
		return s.uploadMax() + multipartSlack
	}
	return int64(s.d.Cfg.BodyLimit)
}

// uploadMax is LORE_UPLOAD_MAX_BYTES (the default when unset or not positive).
func (s *Server) uploadMax() int64 {
	if n := s.d.Cfg.UploadMaxBytes; n > 0 {
		return n
	}
	return 300 << 20
}

// messengerBodyMax is MESSENGER_MAX_BODY_BYTES, capped by the messenger
// package's own bound.
func (s *Server) messengerBodyMax() int64 {
	limit := s.d.Cfg.MessengerMaxBodyBytes
	if limit <= 0 || limit > msgr.MaxBodyBytes {
		limit = msgr.MaxBodyBytes
	}
	return int64(limit)
}

// tooLarge refuses a body and closes the connection afterwards, so the rest
// of the body is never read (not even to find the next request).
func tooLarge(c *fiber.Ctx, limit int64) error {
	c.Context().SetConnectionClose()
	return Errf(http.StatusRequestEntityTooLarge, "request body too large: the limit is %d bytes", limit)
}

// declaredTooLarge refuses, before reading anything, a body whose
// Content-Length already passes limit.
func declaredTooLarge(c *fiber.Ctx, limit int64) error {
	if n := c.Request().Header.ContentLength(); n > 0 && int64(n) > limit {
		return tooLarge(c, limit)
	}
	return nil
}

// limitBody is the first handler of every route that takes a body. Multipart
// routes only have their declared length checked here (their handler streams
// the form through multipartForm, after authentication). Every other route
// gets its body read here, at most limit bytes on the wire and limit bytes
// once decoded (gzip and deflate; other Content-Encodings are 415), and
// handlers then see it through c.Body().
func (s *Server) limitBody(limit int64, multipart bool) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := declaredTooLarge(c, limit); err != nil {
			return err
		}
		if multipart {
			// The handler may stop before the end of the form (or never
			// start it when authentication fails): the connection is not
			// reused, so no leftover bytes are taken for a request.
			c.Context().SetConnectionClose()
			return c.Next()
		}
		body, err := readLimited(requestBody(c), limit)
		if err != nil {
			return s.bodyError(c, err, limit)
		}
		body, err = decodeBody(c, body, limit)
		if err != nil {
			return s.bodyError(c, err, limit)
		}
		c.Request().SetBodyRaw(body)
		return c.Next()
	}
}

// errTooLarge reports a body past its limit.
var errTooLarge = errors.New("body too large")

// bodyError maps a failed body read to its answer: 413 past the limit, 415
// for an unknown encoding, 400 for a broken stream.
func (s *Server) bodyError(c *fiber.Ctx, err error, limit int64) error {
	var apiErr *Error
	switch {
	case errors.Is(err, errTooLarge):
		return tooLarge(c, limit)
	case errors.As(err, &apiErr):
		return err
	}
	c.Context().SetConnectionClose()
	return BadRequest("could not read the request body: %v", err)
}

// requestBody is the body as a stream: the connection's stream when the body
// is still unread, the buffered bytes otherwise.
func requestBody(c *fiber.Ctx) io.Reader {
	if r := c.Context().RequestBodyStream(); r != nil {
		return r
	}
	return bytes.NewReader(c.Request().Body())
}

// readLimited reads r to the end, or fails with errTooLarge once more than
// limit bytes have come (having read limit+1 at most).
func readLimited(r io.Reader, limit int64) ([]byte, error) {
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, errTooLarge
	}
	return buf.Bytes(), nil
}

// decodeBody undoes a gzip or deflate Content-Encoding within limit (Fiber
// would inflate it without bound in c.Body()) and drops the header.
func decodeBody(c *fiber.Ctx, body []byte, limit int64) ([]byte, error) {
	enc := strings.ToLower(strings.TrimSpace(string(c.Request().Header.Peek(fiber.HeaderContentEncoding))))
	if enc == "" || enc == "identity" {
		c.Request().Header.Del(fiber.HeaderContentEncoding)
		return body, nil
	}
	var (
		r   io.Reader
		err error
	)
	switch enc {
	case "gzip", "x-gzip":
		r, err = gzip.NewReader(bytes.NewReader(body))
	case "deflate":
		// HTTP "deflate" is zlib-wrapped; some clients send raw deflate.
		if r, err = zlib.NewReader(bytes.NewReader(body)); err != nil {
			r, err = flate.NewReader(bytes.NewReader(body)), nil
		}
	default:
		return nil, Errf(http.StatusUnsupportedMediaType, "Content-Encoding %q is not supported (gzip, deflate or none)", truncate(enc, 40))
	}
	if err != nil {
		return nil, BadRequest("could not decode the %s request body: %v", enc, err)
	}
	out, err := readLimited(r, limit)
	if err != nil {
		if errors.Is(err, errTooLarge) {
			return nil, err
		}
		return nil, BadRequest("could not decode the %s request body: %v", enc, err)
	}
	c.Request().Header.Del(fiber.HeaderContentEncoding)
	return out, nil
}

// limitedReader fails with errTooLarge once more than n bytes were asked of
// it, instead of ending the stream quietly as io.LimitReader does (a
// multipart reader would take that for a truncated body).
type limitedReader struct {
	r io.Reader
	n int64 // bytes still allowed
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n < 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > l.n+1 {
		p = p[:l.n+1]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	if l.n < 0 {
		return n, errTooLarge
	}
	return n, err
}

// multipartForm streams the multipart body of an upload route, counting its
// bytes on the wire against the route's limit: files go to temporary files
// (the caller must call RemoveAll), and reading stops with 413 once the limit
// is passed. Compressed uploads are refused (415).
func (s *Server) multipartForm(c *fiber.Ctx, field string) (*multipart.Form, error) {
	mr, err := s.multipartReader(c, field)
	if err != nil {
		return nil, err
	}
	form, err := mr.ReadForm(multipartMemory)
	if err != nil {
		return nil, s.multipartError(c, field, err)
	}
	return form, nil
}

// multipartReader is the multipart body of an upload route as a stream of
// parts, limited as multipartForm's; read errors go through multipartError.
func (s *Server) multipartReader(c *fiber.Ctx, field string) (*multipart.Reader, error) {
	boundary := string(c.Request().Header.MultipartFormBoundary())
	if boundary == "" {
		return nil, Invalid("%s: a multipart/form-data body with field %s is required", field, field)
	}
	if enc := string(c.Request().Header.Peek(fiber.HeaderContentEncoding)); enc != "" && !strings.EqualFold(enc, "identity") {
		return nil, Errf(http.StatusUnsupportedMediaType, "Content-Encoding %q is not supported for uploads", truncate(enc, 40))
	}
	return multipart.NewReader(&limitedReader{r: requestBody(c), n: s.uploadMax() + multipartSlack}, boundary), nil
}

// multipartError answers a failed read of a multipart body: 413 past the
// limit, 422 for a malformed body.
func (s *Server) multipartError(c *fiber.Ctx, field string, err error) error {
	if errors.Is(err, errTooLarge) {
		return tooLarge(c, s.uploadMax()+multipartSlack)
	}
	c.Context().SetConnectionClose()
	return Invalid("%s: a multipart/form-data body with field %s is required (%s)", field, field, truncate(fmt.Sprint(err), 80))
}
