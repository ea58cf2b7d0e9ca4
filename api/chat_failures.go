package api

import (
	"errors"

	scrub "github.com/lorekb/lore/internal/redact"
)

// hideError logs a failure of a chat run for operators (redacted, see
// internal/redact) under a new error id and returns the id: chat callers,
// often anonymous, and the stored history get the id, never the detail.
func (s *Server) hideError(what string, err error) string {
	id := scrub.NewID()
	s.log.Error(what, "error_id", id, "err", scrub.Text(err.Error()))
	return id
}

// streamFailure is what a chat stream shows of the error that ended it: an
// API error's message (already safe to show, e.g. a launch failure's
// notice), else a generic notice with the id of the logged detail.
func (s *Server) streamFailure(err error) string {
	var shown *Error
	if errors.As(err, &shown) {
		return shown.Msg
	}
	return "the chat run could not be read (error id " + s.hideError("read a chat run", err) + ")"
}
