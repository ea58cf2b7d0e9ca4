package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/internal/db"
)

// Error is a named API error: an HTTP status and a message for the envelope.
// Handlers return these (or errors wrapping the db package's named errors);
// one error handler turns them into the envelope.
type Error struct {
	Status int
	Msg    string
	Data   any
}

func (e *Error) Error() string { return e.Msg }

// Errf builds an Error with a formatted message.
func Errf(status int, format string, args ...any) *Error {
	return &Error{Status: status, Msg: fmt.Sprintf(format, args...)}
}

// Named errors used across handlers.
var (
	ErrUnauthorized = &Error{Status: http.StatusUnauthorized, Msg: "Not authenticated"}
	ErrForbidden    = &Error{Status: http.StatusForbidden, Msg: "Permission denied"}
	ErrNotFound     = &Error{Status: http.StatusNotFound, Msg: "Not Found"}
)

// NotFound names the missing resource.
func NotFound(what string) *Error { return Errf(http.StatusNotFound, "%s not found", what) }

// BadRequest is a broken business rule (400).
func BadRequest(format string, args ...any) *Error {
	return Errf(http.StatusBadRequest, format, args...)
}

// Conflict is a uniqueness violation (409).
func Conflict(format string, args ...any) *Error { return Errf(http.StatusConflict, format, args...) }

// Invalid is a request validation failure (422) naming the field.
func Invalid(format string, args ...any) *Error {
	return Errf(http.StatusUnprocessableEntity, format, args...)
}

// Unavailable is a dependency outage (503).
func Unavailable(format string, args ...any) *Error {
	return Errf(http.StatusServiceUnavailable, format, args...)
}

// errorHandler is the one place errors become HTTP responses.
func (s *Server) errorHandler(c *fiber.Ctx, err error) error {
	status, msg := classify(err)
	var data any
	var apiErr *Error
	if errors.As(err, &apiErr) {
		data = apiErr.Data
	}
	if status >= 500 {
		s.log.Error("request failed", "status", status, "err", err, "path", c.Path(),
			"method", c.Method(), "request_id", c.Locals(requestIDKey))
	}
	c.Status(status)
	return c.JSON(Envelope{Code: status, Msg: msg, Data: data})
}

func classify(err error) (int, string) {
	var apiErr *Error
	var fe *fiber.Error
	switch {
	case errors.As(err, &apiErr):
		return apiErr.Status, apiErr.Msg
	case errors.As(err, &fe):
		switch fe.Code {
		case http.StatusNotFound:
			return fe.Code, "Not Found"
		case http.StatusMethodNotAllowed:
			return fe.Code, "Method Not Allowed"
		case http.StatusRequestEntityTooLarge:
			return fe.Code, "Request body too large"
		}
		if fe.Code >= 400 && fe.Code < 500 {
			return fe.Code, fe.Message
		}
		return fe.Code, http.StatusText(fe.Code)
	case errors.Is(err, db.ErrNotFound):
		return http.StatusNotFound, "Not Found"
	case errors.Is(err, db.ErrConflict):
		return http.StatusConflict, "Resource already exists"
	case errors.Is(err, db.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, "Service temporarily unavailable"
	}
	if c := db.Classify(err); c != err {
		return classify(c)
	}
	return http.StatusInternalServerError, "Internal server error"
}
