package msgr

import "errors"

// Named errors returned by the callback path. They are sentinel values so
// HTTP handlers can use errors.Is to map any of them to a 400 response
// without parsing messages; the wrapped detail is for logs only.
var (
	// ErrSignature means msg_signature did not match the SHA-1 signature
	// computed from the configured token; the request is not from the
	// messenger platform (or was tampered with).
	ErrSignature = errors.New("msgr: signature mismatch")
	// ErrDecrypt means the ciphertext was not valid base64, had a bad
	// length or padding, or the decrypted plaintext was malformed.
	ErrDecrypt = errors.New("msgr: decrypt failed")
	// ErrReceiveID means the plaintext decrypted correctly but was
	// addressed to a different corp (receive id), so it must not be
	// processed by this tenant.
	ErrReceiveID = errors.New("msgr: receive id mismatch")
	// ErrXML means a body was not acceptable XML: malformed, missing a
	// required element, or containing DOCTYPE/ENTITY declarations or
	// non-predefined entity references.
	ErrXML = errors.New("msgr: invalid xml")
	// ErrTooLarge means a body exceeded the configured size limit and was
	// refused before any parsing.
	ErrTooLarge = errors.New("msgr: body too large")
	// ErrReplay means a callback timestamp was missing, non-numeric or
	// outside the accepted replay window.
	ErrReplay = errors.New("msgr: timestamp outside replay window")
)
