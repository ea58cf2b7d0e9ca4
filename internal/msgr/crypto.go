package msgr

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"math"
	"net/url"
	"sort"
	"strings"
)

const (
	// blockSize is the PKCS#7 block the messenger platform pads to. It is
	// 32 (not AES's 16), a quirk of the vendor's reference implementation
	// that both sides must share.
	blockSize = 32
	// randomPrefixLen is the length of the random prefix that precedes the
	// length field in every plaintext.
	randomPrefixLen = 16
	// headerLen is the random prefix plus the 4-byte big-endian length.
	headerLen = randomPrefixLen + 4
	// maxCiphertextLen bounds the decoded ciphertext Decrypt will process,
	// so a hostile caller cannot make it allocate or decrypt unbounded
	// input; real callbacks are a few KiB.
	maxCiphertextLen = 4 << 20
)

// Crypto verifies and decrypts callbacks for one configured callback URL
// (one token, EncodingAESKey and receive id). It is safe for concurrent
// use: all fields are read-only after NewCrypto.
type Crypto struct {
	token     string
	receiveID string
	block     cipher.Block
	iv        []byte
}

// NewCrypto validates the callback configuration and returns a Crypto.
// encodingAESKey is the 43-character base64 key from the admin console;
// receiveID is the corp id that every decrypted plaintext must name. All
// three values are required, because an empty token or receive id would
// make signatures or tenant checks meaningless.
func NewCrypto(token, encodingAESKey, receiveID string) (*Crypto, error) {
	if token == "" {
		return nil, errors.New("msgr: token is required")
	}
	if receiveID == "" {
		return nil, errors.New("msgr: receive id (corp id) is required")
	}
	key, err := decodeAESKey(encodingAESKey)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("msgr: aes key: %w", err)
	}
	iv := make([]byte, aes.BlockSize)
	copy(iv, key[:aes.BlockSize])
	return &Crypto{token: token, receiveID: receiveID, block: block, iv: iv}, nil
}

// decodeAESKey turns the console's unpadded base64 EncodingAESKey into the
// 32-byte AES-256 key, appending '=' up to a multiple of 4 as the vendor
// does.
func decodeAESKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if len(s) != 43 {
		return nil, fmt.Errorf("msgr: EncodingAESKey must be 43 characters, got %d", len(s))
	}
	for len(s)%4 != 0 {
		s += "="
	}
	key, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("msgr: EncodingAESKey is not base64: %w", err)
	}
	if len(key) != 32 {
		return nil, fmt.Errorf("msgr: EncodingAESKey decodes to %d bytes, want 32", len(key))
	}
	return key, nil
}

// Signature returns the lowercase hex SHA-1 of token, timestamp, nonce and
// encrypt sorted lexicographically and concatenated without separators.
// It is exported so replies (and tests) can be signed the same way the
// platform signs callbacks.
func (c *Crypto) Signature(timestamp, nonce, encrypt string) string {
	parts := []string{c.token, timestamp, nonce, encrypt}
	sort.Strings(parts)
	sum := sha1.Sum([]byte(strings.Join(parts, "")))
	return hex.EncodeToString(sum[:])
}

// verify compares msgSignature with the expected signature in constant
// time so the comparison leaks nothing about how many bytes matched.
func (c *Crypto) verify(msgSignature, timestamp, nonce, encrypt string) error {
	want := c.Signature(timestamp, nonce, encrypt)
	if subtle.ConstantTimeCompare([]byte(want), []byte(msgSignature)) != 1 {
		return ErrSignature
	}
	return nil
}

// Encrypt builds the vendor plaintext (16 random ASCII digits, 4-byte
// big-endian length, msg, receive id), pads it to a 32-byte PKCS#7 block,
// encrypts it with AES-256-CBC and returns standard base64. It is used to
// build passive replies and test fixtures.
func (c *Crypto) Encrypt(msg []byte) (string, error) {
	if uint64(len(msg)) > math.MaxUint32 {
		return "", errors.New("msgr: message too large to encrypt")
	}
	prefix, err := randomDigits(randomPrefixLen)
	if err != nil {
		return "", err
	}
	return c.encryptWithPrefix(prefix, msg), nil
}

// encryptWithPrefix is Encrypt with a caller-chosen random prefix; it
// exists so tests can build deterministic known-answer vectors.
func (c *Crypto) encryptWithPrefix(prefix, msg []byte) string {
	n := len(prefix) + 4 + len(msg) + len(c.receiveID)
	pad := blockSize - n%blockSize
	plain := make([]byte, 0, n+pad)
	plain = append(plain, prefix...)
	plain = binary.BigEndian.AppendUint32(plain, uint32(len(msg)))
	plain = append(plain, msg...)
	plain = append(plain, c.receiveID...)
	for range pad {
		plain = append(plain, byte(pad))
	}
	out := make([]byte, len(plain))
	cipher.NewCBCEncrypter(c.block, c.iv).CryptBlocks(out, plain)
	return base64.StdEncoding.EncodeToString(out)
}

// randomDigits returns n uniformly random ASCII digits from crypto/rand,
// matching the vendor encrypter's random prefix. Rejection sampling keeps
// the distribution uniform.
func randomDigits(n int) ([]byte, error) {
	out := make([]byte, 0, n)
	buf := make([]byte, 2*n)
	for len(out) < n {
		if _, err := rand.Read(buf); err != nil {
			return nil, fmt.Errorf("msgr: random prefix: %w", err)
		}
		for _, b := range buf {
			if b >= 250 { // 250 is the largest multiple of 10 <= 256
				continue
			}
			out = append(out, '0'+b%10)
			if len(out) == n {
				break
			}
		}
	}
	return out, nil
}

// Decrypt reverses Encrypt: base64-decode, AES-256-CBC decrypt, strip and
// validate the 32-byte PKCS#7 padding, then split the plaintext and check
// that the trailing receive id equals the configured corp id. Malformed
// input yields ErrDecrypt and a foreign receive id yields ErrReceiveID; it
// never panics on garbage. Callers handling callbacks should use VerifyURL
// or OpenMessage, which check the signature first.
func (c *Crypto) Decrypt(encrypt string) ([]byte, error) {
	encrypt = strings.TrimSpace(encrypt)
	if encrypt == "" {
		return nil, fmt.Errorf("%w: empty ciphertext", ErrDecrypt)
	}
	if base64.StdEncoding.DecodedLen(len(encrypt)) > maxCiphertextLen {
		return nil, fmt.Errorf("%w: ciphertext too large", ErrDecrypt)
	}
	raw, err := base64.StdEncoding.DecodeString(encrypt)
	if err != nil {
		return nil, fmt.Errorf("%w: base64: %v", ErrDecrypt, err)
	}
	if len(raw) == 0 || len(raw)%aes.BlockSize != 0 {
		return nil, fmt.Errorf("%w: ciphertext length %d is not a positive multiple of %d", ErrDecrypt, len(raw), aes.BlockSize)
	}
	plain := make([]byte, len(raw))
	cipher.NewCBCDecrypter(c.block, c.iv).CryptBlocks(plain, raw)

	plain, err = unpad(plain)
	if err != nil {
		return nil, err
	}
	if len(plain) < headerLen {
		return nil, fmt.Errorf("%w: plaintext shorter than header", ErrDecrypt)
	}
	n := uint64(binary.BigEndian.Uint32(plain[randomPrefixLen:headerLen]))
	if n > uint64(len(plain)-headerLen) {
		return nil, fmt.Errorf("%w: message length %d exceeds plaintext", ErrDecrypt, n)
	}
	msg := plain[headerLen : headerLen+int(n)]
	rid := plain[headerLen+int(n):]
	if subtle.ConstantTimeCompare(rid, []byte(c.receiveID)) != 1 {
		return nil, ErrReceiveID
	}
	// Copy so the caller does not pin the whole decrypted buffer.
	return append([]byte(nil), msg...), nil
}

// unpad strips 32-byte-block PKCS#7 padding, refusing pad values outside
// 1..32, longer than the data, or with inconsistent pad bytes.
func unpad(b []byte) ([]byte, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: empty plaintext", ErrDecrypt)
	}
	p := int(b[len(b)-1])
	if p < 1 || p > blockSize || p > len(b) {
		return nil, fmt.Errorf("%w: bad padding", ErrDecrypt)
	}
	for _, v := range b[len(b)-p:] {
		if int(v) != p {
			return nil, fmt.Errorf("%w: bad padding", ErrDecrypt)
		}
	}
	return b[:len(b)-p], nil
}

// VerifyURL handles the GET URL-verification handshake: it checks
// msgSignature over the echostr and returns the decrypted echostr, which
// the handler must write back verbatim. echostr should be the URL-decoded
// query value (as url.Values.Get returns it); for robustness a value that
// still contains %-escapes is unescaped, and spaces (a '+' decoded by a
// form parser) are restored to '+', since neither can occur in base64.
func (c *Crypto) VerifyURL(msgSignature, timestamp, nonce, echostr string) ([]byte, error) {
	echostr = normalizeEchostr(echostr)
	if echostr == "" {
		return nil, fmt.Errorf("%w: empty echostr", ErrDecrypt)
	}
	if err := c.verify(msgSignature, timestamp, nonce, echostr); err != nil {
		return nil, err
	}
	return c.Decrypt(echostr)
}

// normalizeEchostr undoes the two common query-decoding mishaps described
// on VerifyURL.
func normalizeEchostr(s string) string {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "%") {
		if u, err := url.PathUnescape(s); err == nil {
			s = u
		}
	}
	return strings.ReplaceAll(s, " ", "+")
}

// MaxBodyBytes bounds callback bodies and decrypted inner XML. Real
// callbacks are a few KiB; the limit stops memory exhaustion by hostile
// clients while leaving ample room for long texts.
const MaxBodyBytes = 1 << 20

// envelope is the outer POST body: only Encrypt is needed, the other
// fields are informational and not trusted. Encrypt is a list so that a
// body with more than one can be refused rather than silently read as one
// of them.
type envelope struct {
	XMLName    xml.Name `xml:"xml"`
	ToUserName string   `xml:"ToUserName"`
	Encrypt    []string `xml:"Encrypt"`
	AgentID    string   `xml:"AgentID"`
}

// OpenMessage handles a POST callback: it parses the outer XML with
// SafeUnmarshal (limit MaxBodyBytes), verifies msgSignature over the
// <Encrypt> text, decrypts it and returns the inner XML for ParseKefu or
// ParseApp. The signature is checked before decryption so unauthenticated
// input never reaches the padding and layout checks. A body without
// exactly one <Encrypt> is ErrXML.
func (c *Crypto) OpenMessage(msgSignature, timestamp, nonce string, body []byte) ([]byte, error) {
	inner, _, err := c.OpenEnvelope(msgSignature, timestamp, nonce, body)
	return inner, err
}

// OpenEnvelope is OpenMessage that also returns the callback's replay key:
// a hash of only what the signature covers (signature, timestamp, nonce and
// the trimmed ciphertext). Unsigned parts of the body (whitespace around
// the ciphertext, other elements) can be changed by anyone who replays a
// callback, so they must not make it look like a new message.
func (c *Crypto) OpenEnvelope(msgSignature, timestamp, nonce string, body []byte) (inner []byte, replayKey string, err error) {
	var env envelope
	if err := SafeUnmarshal(body, &env, MaxBodyBytes); err != nil {
		return nil, "", err
	}
	if len(env.Encrypt) > 1 {
		return nil, "", fmt.Errorf("%w: %d <Encrypt> elements", ErrXML, len(env.Encrypt))
	}
	enc := ""
	if len(env.Encrypt) == 1 {
		enc = strings.TrimSpace(env.Encrypt[0])
	}
	if enc == "" {
		return nil, "", fmt.Errorf("%w: missing <Encrypt>", ErrXML)
	}
	if err := c.verify(msgSignature, timestamp, nonce, enc); err != nil {
		return nil, "", err
	}
	inner, err = c.Decrypt(enc)
	if err != nil {
		return nil, "", err
	}
	return inner, ReplayKey(msgSignature, timestamp, nonce, enc), nil
}

// ReplayKey identifies a signed callback by its signed parts (see
// OpenEnvelope): 32 hex digits of their SHA-256.
func ReplayKey(msgSignature, timestamp, nonce, encrypt string) string {
	sum := sha256.Sum256([]byte(msgSignature + "\x00" + timestamp + "\x00" + nonce + "\x00" + strings.TrimSpace(encrypt)))
	return hex.EncodeToString(sum[:16])
}
