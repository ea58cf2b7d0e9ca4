package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// malformedRequest answers a request fasthttp could not read. The error's
// text quotes the raw request (Authorization and cookies included), so the
// answer is a fixed message per kind; fasthttp closes the connection after
// it.
func malformedRequest(ctx *fasthttp.RequestCtx, err error) {
	status, msg := http.StatusBadRequest, "Malformed request"
	var small *fasthttp.ErrSmallBuffer
	var netErr net.Error
	switch {
	case errors.As(err, &small):
		status, msg = http.StatusRequestHeaderFieldsTooLarge, "Request headers too large"
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		status, msg = http.StatusRequestEntityTooLarge, "Request body too large"
	case errors.As(err, &netErr) && netErr.Timeout(), strings.Contains(err.Error(), "timeout"):
		status, msg = http.StatusRequestTimeout, "Request timeout"
	}
	body, _ := json.Marshal(Envelope{Code: status, Msg: msg})
	ctx.Response.Reset()
	ctx.SetStatusCode(status)
	ctx.SetContentType(fiber.MIMEApplicationJSONCharsetUTF8)
	ctx.SetBody(body)
	ctx.SetConnectionClose()
}

// rejectAmbiguousLength refuses a request that has both Content-Length and
// Transfer-Encoding, and closes its connection: a proxy in front may have
// framed the body by the other header, so whatever follows on the
// connection could be a request smuggled past it.
func rejectAmbiguousLength(c *fiber.Ctx) error {
	h := &c.Request().Header
	if h.ContentLength() == -1 && hasHeader(h.RawHeaders(), fiber.HeaderContentLength) {
		c.Context().SetConnectionClose()
		return BadRequest("a request must not have both Content-Length and Transfer-Encoding")
	}
	return c.Next()
}

// hasHeader reports whether raw request headers ("Key: value" lines) have
// the header name.
func hasHeader(raw []byte, name string) bool {
	for len(raw) > 0 {
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		if k, _, ok := bytes.Cut(line, []byte(":")); ok && strings.EqualFold(string(bytes.TrimSpace(k)), name) {
			return true
		}
	}
	return false
}
