// Package sealed encrypts the provider secrets Lore stores (model API keys,
// document-processor keys, data-source secret keys, bot secrets) so that a
// copy of the database (the SQLite file, a PostgreSQL dump or backup) does
// not hold them in clear. It is AES-256-GCM from Go's standard library, keyed
// from LORE_SECRET_KEY with HKDF-SHA256; nothing here is hand-rolled
// cryptography.
//
// A sealed value is the text "enc:v1:" followed by the base64 (URL alphabet,
// no padding) of a random 12-byte nonce and the ciphertext with its tag.
// Values without the prefix are clear text written by an older version: Open
// returns them as they are, and the database layer rewrites them sealed at
// startup. In JSON documents only the string values under secret-looking key
// names (the names the Admin API masks) are sealed, so the rest of the
// document stays readable.
package sealed

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Prefix marks a sealed value (format version 1).
const Prefix = "enc:v1:"

// MinSecretLen is the least length of LORE_SECRET_KEY, in bytes.
const MinSecretLen = 32

// ErrWrongKey is returned when a sealed value does not open with the
// configured key: the key changed, or the value was tampered with.
var ErrWrongKey = errors.New("sealed: the value does not open with LORE_SECRET_KEY (wrong key, or a changed value)")

// Box seals and opens values with one key. A nil *Box seals nothing and
// opens only clear values (a database opened without a key, in tests of
// other packages).
type Box struct {
	aead cipher.AEAD
}

// New derives the AES-256 key from secret (at least MinSecretLen bytes).
func New(secret string) (*Box, error) {
	if len(secret) < MinSecretLen {
		return nil, fmt.Errorf("sealed: LORE_SECRET_KEY must be at least %d bytes (it is %d)", MinSecretLen, len(secret))
	}
	key, err := hkdf.Key(sha256.New, []byte(secret), nil, "lore stored secrets v1", 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Box{aead: aead}, nil
}

// IsSealed reports whether v is a sealed value.
func IsSealed(v string) bool { return strings.HasPrefix(v, Prefix) }

// Seal encrypts v; an empty value and an already sealed one are returned as
// they are (empty means "not set" to readers).
func (b *Box) Seal(v string) string {
	if b == nil || v == "" || IsSealed(v) {
		return v
	}
	nonce := make([]byte, b.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	out := b.aead.Seal(nonce, nonce, []byte(v), []byte(Prefix))
	return Prefix + base64.RawURLEncoding.EncodeToString(out)
}

// Open decrypts a sealed value; a clear value is returned as it is.
func (b *Box) Open(v string) (string, error) {
	if !IsSealed(v) {
		return v, nil
	}
	if b == nil {
		return "", errors.New("sealed: a sealed value was read but no LORE_SECRET_KEY is configured")
	}
	raw, err := base64.RawURLEncoding.DecodeString(v[len(Prefix):])
	n := b.aead.NonceSize()
	if err != nil || len(raw) < n+b.aead.Overhead() {
		return "", ErrWrongKey
	}
	plain, err := b.aead.Open(nil, raw[:n], raw[n:], []byte(Prefix))
	if err != nil {
		return "", ErrWrongKey
	}
	return string(plain), nil
}

// secretWords mark a JSON key name as secret. The Admin API masks the same
// names (api.isSecretKey uses SecretName).
var secretWords = []string{"key", "token", "secret", "password", "app_id", "client_id"}

// SecretName reports whether string values under this JSON key name are
// secrets: masked on read, sealed at rest.
func SecretName(name string) bool {
	n := strings.ToLower(name)
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// SealJSON seals every non-empty string under a secret key name, at any
// depth, of a JSON document. A document that is not JSON, or holds no such
// value, is returned unchanged (byte for byte).
func (b *Box) SealJSON(doc string) string {
	if b == nil {
		return doc
	}
	out, changed := walkJSON(doc, func(v string) (string, error) { return b.Seal(v), nil })
	if !changed {
		return doc
	}
	return out
}

// OpenJSON opens every sealed string of a JSON document. A document without
// sealed values is returned unchanged without being parsed.
func (b *Box) OpenJSON(doc string) (string, error) {
	if !strings.Contains(doc, Prefix) {
		return doc, nil
	}
	var openErr error
	out, changed := walkJSON(doc, func(v string) (string, error) {
		p, err := b.Open(v)
		if err != nil && openErr == nil {
			openErr = err
		}
		return p, err
	})
	if openErr != nil {
		return "", openErr
	}
	if !changed {
		return doc, nil
	}
	return out, nil
}

// HasClearSecrets reports whether a JSON document holds a non-empty secret
// string that is not sealed (a row to rewrite).
func HasClearSecrets(doc string) bool {
	_, changed := walkJSON(doc, func(v string) (string, error) {
		if IsSealed(v) {
			return v, nil
		}
		return v + "x", nil // any change marks it
	})
	return changed
}

// walkJSON applies f to the strings under secret key names of doc and
// re-encodes it (numbers kept exact) when any changed.
func walkJSON(doc string, f func(string) (string, error)) (string, bool) {
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return doc, false
	}
	changed := false
	var walk func(v any) any
	walk = func(v any) any {
		switch t := v.(type) {
		case map[string]any:
			for k, val := range t {
				if s, ok := val.(string); ok && s != "" && SecretName(k) {
					if ns, err := f(s); err == nil && ns != s {
						t[k] = ns
						changed = true
					}
					continue
				}
				t[k] = walk(val)
			}
		case []any:
			for i := range t {
				t[i] = walk(t[i])
			}
		}
		return v
	}
	v = walk(v)
	if !changed {
		return doc, false
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return doc, false
	}
	return strings.TrimSuffix(buf.String(), "\n"), true
}
