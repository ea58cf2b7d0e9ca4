// Signed download URLs: the local directory is not web-served, so objects
// leave it through an application route that checks an HMAC over name and expiry.

package local

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/lorekb/lore/internal/blob"
)

// ErrBadSignature is returned by VerifySigned when the signature does not
// match (tampered name, expiry or signature, or a different secret), so the
// download route can answer 403.
var ErrBadSignature = errors.New("local blob: invalid URL signature")

// ErrExpired is returned by VerifySigned for a correctly signed URL whose
// expiry has passed, so the download route can answer 403 (or 410) and the
// client knows to ask for a fresh URL.
var ErrExpired = errors.New("local blob: signed URL expired")

// ErrNoSigner is returned by URL and VerifySigned when the store was created
// without a signing secret or base URL, so misconfiguration is reported
// instead of producing URLs that can never verify.
var ErrNoSigner = errors.New("local blob: no URL signer configured")

// Signer configures the signed download URLs produced by Store.URL. The local
// directory is not web-served, so a download goes through an application route
// that checks the signature with Store.VerifySigned before streaming the file.
type Signer struct {
	// BaseURL is the absolute URL of that route without a trailing slash,
	// e.g. "http://127.0.0.1:8080/v1/files-signed"; the escaped object name
	// is appended as further path segments.
	BaseURL string
	// Secret is the HMAC-SHA256 key. Keep it out of source control and
	// share it between all instances that serve the route.
	Secret []byte
}

// URL returns a signed download URL for the route configured in Signer:
// BaseURL + "/" + escaped name + "?expires=<unix seconds>&sig=<hex HMAC>".
// Each name segment is path-escaped separately so "/" stays a separator and
// the route sees the original name after standard URL decoding.
func (s *Store) URL(ctx context.Context, name string, expires time.Duration) (string, error) {
	if _, err := s.resolve(name); err != nil {
		return "", err
	}
	if len(s.signer.Secret) == 0 || s.signer.BaseURL == "" {
		return "", ErrNoSigner
	}
	if expires <= 0 {
		expires = blob.DefaultURLExpiry
	}
	exp := strconv.FormatInt(time.Now().Add(expires).Unix(), 10)
	return s.signer.BaseURL + "/" + EscapeName(name) + "?expires=" + exp + "&sig=" + s.sign(name, exp), nil
}

// EscapeName path-escapes each "/"-separated segment of an object name, the
// form used in signed URLs; the download route recovers the name by ordinary
// URL path decoding.
func EscapeName(name string) string {
	segs := strings.Split(name, "/")
	for i, seg := range segs {
		segs[i] = url.PathEscape(seg)
	}
	return strings.Join(segs, "/")
}

func (s *Store) sign(name, expires string) string {
	m := hmac.New(sha256.New, s.signer.Secret)
	m.Write([]byte(name))
	m.Write([]byte{'|'})
	m.Write([]byte(expires))
	return hex.EncodeToString(m.Sum(nil))
}

// VerifySigned checks a signed download request: name is the decoded object
// name from the route path, expires and sig the raw query values, now the
// current time (a parameter so callers and tests control the clock). The
// signature is compared in constant time and checked before the expiry, so a
// tampered URL is always reported as ErrBadSignature; a genuine but stale
// URL yields ErrExpired; an invalid name yields an error wrapping
// blob.ErrInvalidName.
func (s *Store) VerifySigned(name, expires, sig string, now time.Time) error {
	if len(s.signer.Secret) == 0 {
		return ErrNoSigner
	}
	if _, err := s.resolve(name); err != nil {
		return err
	}
	exp, err := strconv.ParseInt(expires, 10, 64)
	if err != nil {
		return ErrBadSignature
	}
	got, err := hex.DecodeString(sig)
	if err != nil {
		return ErrBadSignature
	}
	want, _ := hex.DecodeString(s.sign(name, expires))
	if !hmac.Equal(got, want) {
		return ErrBadSignature
	}
	if now.Unix() > exp {
		return ErrExpired
	}
	return nil
}
