// Package redact keeps secrets out of what Lore shows and stores about
// failures of upstream services (model, embedding, rerank providers, whose
// error texts can carry request URLs with credentials and pieces of keys):
// Text masks what looks secret for operators' logs, and Failure turns an
// upstream error into a generic notice with an error id that the log line
// carrying the (redacted) detail shares.
package redact

import (
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"strings"
)

var (
	// urlCreds: the userinfo of a URL ("scheme://user:pass@").
	urlCreds = regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s@"'<>]+@`)
	// authValue: the value of an Authorization-like header or a key=value
	// pair whose name says it is secret.
	authValue = regexp.MustCompile(`(?i)\b(bearer|basic|api[_-]?key|access[_-]?token|token|secret|password|passwd|pwd|key|signature|sig)(["']?\s*[:=]\s*["']?|\s+)([^\s"'&,;}]{4,})`)
	// keyLike: a run of 20+ key characters with letters and digits mixed
	// (provider keys: sk-…, hex and base64 tokens).
	keyLike = regexp.MustCompile(`[A-Za-z0-9_\-+/=.]{20,}`)
)

// Text masks URL credentials, values of secret-named fields and anything that
// looks like a key (only its first 4 characters are kept).
func Text(s string) string {
	s = urlCreds.ReplaceAllString(s, "${1}****@")
	s = authValue.ReplaceAllStringFunc(s, func(m string) string {
		sub := authValue.FindStringSubmatch(m)
		return sub[1] + sub[2] + mask(sub[3])
	})
	return keyLike.ReplaceAllStringFunc(s, func(m string) string {
		if !looksLikeKey(m) {
			return m
		}
		return mask(m)
	})
}

// looksLikeKey: a long token with both letters and digits that is not a
// plain word, path or URL piece.
func looksLikeKey(m string) bool {
	if strings.Count(m, "/") > 1 || strings.Count(m, ".") > 1 {
		return false // a path or host name
	}
	letters, digits := 0, 0
	for _, r := range m {
		switch {
		case r >= '0' && r <= '9':
			digits++
		case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
			letters++
		}
	}
	return letters >= 4 && digits >= 2
}

func mask(v string) string {
	if len(v) <= 8 {
		return "****"
	}
	return v[:4] + "****"
}

// NewID is a new error id ("e-" and 12 hex characters): shown to users, and
// in the log line with the detail, so an operator can find one from the
// other.
func NewID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "e-" + hex.EncodeToString(b)
}

// Failure is an upstream error as users may see and Lore may store it: a
// generic notice and its id. It keeps the permanent mark of the original
// (Is), never its text.
type Failure struct {
	ID     string
	Notice string // e.g. "The model service failed"
	// permanent is the sentinel the original error matched (nil: none), so
	// retry decisions made with errors.Is stay the same.
	permanent error
}

// NewFailure makes a Failure with a new id; permanent is a sentinel that
// errors.Is(f, permanent) reports (nil for none).
func NewFailure(notice string, permanent error) *Failure {
	return &Failure{ID: NewID(), Notice: notice, permanent: permanent}
}

// Error is the notice with its id: "The model service failed (error id e-…)".
func (f *Failure) Error() string { return f.Notice + " (error id " + f.ID + ")" }

// Unwrap gives only the permanent sentinel, never the original error.
func (f *Failure) Unwrap() error { return f.permanent }
