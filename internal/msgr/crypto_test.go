package msgr

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

const (
	testToken = "TestToken"
	testCorp  = "wwtestcorp"
	// testKey is base64(0x00..0x1f) without its trailing '='.
	testKey = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"
)

func testKeyBytes() []byte {
	k := make([]byte, 32)
	for i := range k {
		k[i] = byte(i)
	}
	return k
}

func newTestCrypto(t testing.TB) *Crypto {
	t.Helper()
	c, err := NewCrypto(testToken, testKey, testCorp)
	if err != nil {
		t.Fatalf("NewCrypto: %v", err)
	}
	return c
}

// rawCBC encrypts plain (already padded) with the test key the way the
// platform does, independently of the package code.
func rawCBC(t testing.TB, plain []byte) string {
	t.Helper()
	key := testKeyBytes()
	block, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]byte, len(plain))
	cipher.NewCBCEncrypter(block, key[:16]).CryptBlocks(out, plain)
	return base64.StdEncoding.EncodeToString(out)
}

// rawDecryptCBC decrypts a base64 ciphertext with the test key without
// touching the package code, returning the padded plaintext.
func rawDecryptCBC(t *testing.T, enc string) []byte {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		t.Fatalf("ciphertext is not std base64: %v", err)
	}
	if len(raw)%aes.BlockSize != 0 {
		t.Fatalf("ciphertext length %d not a multiple of 16", len(raw))
	}
	key := testKeyBytes()
	block, _ := aes.NewCipher(key)
	plain := make([]byte, len(raw))
	cipher.NewCBCDecrypter(block, key[:16]).CryptBlocks(plain, raw)
	return plain
}

// layout builds prefix|len|msg|rid plus 32-byte PKCS#7 padding (or the
// explicit pad bytes given).
func layout(prefix string, msg []byte, rid string, pad []byte) []byte {
	var b []byte
	b = append(b, prefix...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(msg)))
	b = append(b, msg...)
	b = append(b, rid...)
	if pad == nil {
		p := 32 - len(b)%32
		pad = bytes.Repeat([]byte{byte(p)}, p)
	}
	return append(b, pad...)
}

func TestNewCryptoValidation(t *testing.T) {
	cases := []struct {
		name, token, key, rid string
	}{
		{"empty token", "", testKey, testCorp},
		{"empty receive id", testToken, testKey, ""},
		{"short key", testToken, testKey[:42], testCorp},
		{"long key", testToken, testKey + "A", testCorp},
		{"non-base64 key", testToken, strings.Repeat("*", 43), testCorp},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if c, err := NewCrypto(tc.token, tc.key, tc.rid); err == nil {
				t.Fatalf("NewCrypto accepted bad config: %+v", c)
			}
		})
	}
	if _, err := NewCrypto(testToken, " "+testKey+"\n", testCorp); err != nil {
		t.Fatalf("surrounding whitespace in key should be tolerated: %v", err)
	}
}

func TestRoundTrip(t *testing.T) {
	c := newTestCrypto(t)
	msgs := []string{
		"",
		"hello",
		"你好，世界！这是一条中文消息。🙂",
		"<xml><Content><![CDATA[混合 mixed ✓]]></Content></xml>",
		strings.Repeat("知识库", 2000),
		strings.Repeat("x", 12), // plaintext length exactly 32 bytes -> full pad block
	}
	for _, m := range msgs {
		enc, err := c.Encrypt([]byte(m))
		if err != nil {
			t.Fatalf("Encrypt: %v", err)
		}
		got, err := c.Decrypt(enc)
		if err != nil {
			t.Fatalf("Decrypt(%q...): %v", truncate(m), err)
		}
		if string(got) != m {
			t.Fatalf("round trip mismatch: got %q want %q", truncate(string(got)), truncate(m))
		}
	}
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40]
	}
	return s
}

func TestPlaintextLayoutByteByByte(t *testing.T) {
	c := newTestCrypto(t)
	msg := []byte("知识 base ✓")
	enc, err := c.Encrypt(msg)
	if err != nil {
		t.Fatal(err)
	}
	plain := rawDecryptCBC(t, enc)
	if len(plain)%32 != 0 {
		t.Fatalf("padded plaintext length %d is not a multiple of the 32-byte block", len(plain))
	}
	pad := int(plain[len(plain)-1])
	if pad < 1 || pad > 32 {
		t.Fatalf("pad value %d outside 1..32", pad)
	}
	for i, b := range plain[len(plain)-pad:] {
		if int(b) != pad {
			t.Fatalf("pad byte %d = %d, want %d", i, b, pad)
		}
	}
	body := plain[:len(plain)-pad]
	for i := 0; i < 16; i++ {
		if body[i] < '0' || body[i] > '9' {
			t.Fatalf("random prefix byte %d = %#x, want an ASCII digit", i, body[i])
		}
	}
	wantLen := []byte{0, 0, 0, byte(len(msg))}
	if !bytes.Equal(body[16:20], wantLen) {
		t.Fatalf("length field = % x, want big-endian % x", body[16:20], wantLen)
	}
	if !bytes.Equal(body[20:20+len(msg)], msg) {
		t.Fatalf("message bytes = %q, want %q", body[20:20+len(msg)], msg)
	}
	if got := string(body[20+len(msg):]); got != testCorp {
		t.Fatalf("receive id = %q, want %q", got, testCorp)
	}
	if len(body) != 16+4+len(msg)+len(testCorp) {
		t.Fatalf("unexpected extra bytes: body length %d", len(body))
	}

	// The prefix must be random: two encryptions of the same message differ.
	enc2, _ := c.Encrypt(msg)
	if enc2 == enc {
		t.Fatal("two encryptions produced identical ciphertext; prefix is not random")
	}
	if bytes.Equal(rawDecryptCBC(t, enc2)[:16], body[:16]) {
		t.Fatal("random prefix repeated")
	}
}

func TestLargeLengthFieldIsBigEndian(t *testing.T) {
	c := newTestCrypto(t)
	msg := bytes.Repeat([]byte("a"), 0x0102)
	enc, _ := c.Encrypt(msg)
	plain := rawDecryptCBC(t, enc)
	if !bytes.Equal(plain[16:20], []byte{0x00, 0x00, 0x01, 0x02}) {
		t.Fatalf("length field = % x, want 00 00 01 02", plain[16:20])
	}
}

// TestKnownAnswer checks a vector whose ciphertext was produced outside Go:
// `openssl enc -aes-256-cbc -nopad -K 000102..1f -iv 000102..0f` over
// "1234567890123456" | 00 00 00 0c | "hello 世界" | "wwtestcorp" | 22 x 0x16.
func TestKnownAnswer(t *testing.T) {
	const want = "ubT/hyl6kROaPuzc7P2P303Ki0znFPH3BAQrvDOItKdrcmYHAKjVR3GWBt1qXGJOazi6R+A/lA13YUPPBSc1ew=="
	c := newTestCrypto(t)
	msg := []byte("hello 世界")

	// The layout built by hand in the test matches the openssl input.
	if got := rawCBC(t, layout("1234567890123456", msg, testCorp, nil)); got != want {
		t.Fatalf("hand-built vector = %s, want %s", got, want)
	}
	if got := c.encryptWithPrefix([]byte("1234567890123456"), msg); got != want {
		t.Fatalf("encryptWithPrefix = %s, want %s", got, want)
	}
	got, err := c.Decrypt(want)
	if err != nil {
		t.Fatalf("Decrypt(known answer): %v", err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatalf("Decrypt(known answer) = %q, want %q", got, msg)
	}
}

// Public sample published with the vendor's reference SDKs (token QDG6eK,
// corp wx5823bf96d3bd56c7). Passing it proves interoperability of the
// signature, key derivation, padding and layout with the real platform.
const (
	officialToken = "QDG6eK"
	officialKey   = "jWmYm7qr5nMoAUwZRjGtBxmz3KA1tkAj3ykkR6q2B2C"
	officialCorp  = "wx5823bf96d3bd56c7"
)

func TestOfficialVectorVerifyURL(t *testing.T) {
	c, err := NewCrypto(officialToken, officialKey, officialCorp)
	if err != nil {
		t.Fatal(err)
	}
	const (
		sig   = "5c45ff5e21c57e6ad56bac8758b79b1d9ac89fd3"
		ts    = "1409659589"
		nonce = "263014780"
		echo  = "P9nAzCzyDtyTWESHep1vC5X9xho/qYX3Zpb4yKa9SKld1DsH3Iyt3tP3zNdtp+4RPcs8TgAE7OaBO+FZXvnaqQ=="
	)
	if got := c.Signature(ts, nonce, echo); got != sig {
		t.Fatalf("Signature = %s, want %s", got, sig)
	}
	got, err := c.VerifyURL(sig, ts, nonce, echo)
	if err != nil {
		t.Fatalf("VerifyURL: %v", err)
	}
	if string(got) != "1616140317555161061" {
		t.Fatalf("echostr = %q", got)
	}
	// The same value still percent-encoded, as it appears on the wire.
	if got2, err := c.VerifyURL(sig, ts, nonce, url.QueryEscape(echo)); err != nil || !bytes.Equal(got2, got) {
		t.Fatalf("VerifyURL(escaped) = %q, %v", got2, err)
	}
	// A form parser that turned '+' into ' '.
	if got3, err := c.VerifyURL(sig, ts, nonce, strings.ReplaceAll(echo, "+", " ")); err != nil || !bytes.Equal(got3, got) {
		t.Fatalf("VerifyURL(spaces) = %q, %v", got3, err)
	}
}

func TestOfficialVectorOpenMessage(t *testing.T) {
	c, err := NewCrypto(officialToken, officialKey, officialCorp)
	if err != nil {
		t.Fatal(err)
	}
	const enc = "RypEvHKD8QQKFhvQ6QleEB4J58tiPdvo+rtK1I9qca6aM/wvqnLSV5zEPeusUiX5L5X/0lWfrf0QADHHhGd3QczcdCUpj911L3vg3W/sYYvuJTs3TUUkSUXxaccAS0qhxchrRYt66wiSpGLYL42aM6A8dTT+6k4aSknmPj48kzJs8qLjvd4Xgpue06DOdnLxAUHzM6+kDZ+HMZfJYuR+LtwGc2hgf5gsijff0ekUNXZiqATP7PF5mZxZ3Izoun1s4zG4LUMnvw2r+KqCKIw+3IQH03v+BCA9nMELNqbSf6tiWSrXJB3LAVGUcallcrw8V2t9EL4EhzJWrQUax5wLVMNS0+rUPA3k22Ncx4XXZS9o0MBH27Bo6BpNelZpS+/uh9KsNlY6bHCmJU9p8g7m3fVKn28H3KDYA5Pl/T8Z1ptDAVe0lXdQ2YoyyH2uyPIGHBZZIs2pDBS8R07+qN+E7Q=="
	body := []byte("<xml><ToUserName><![CDATA[wx5823bf96d3bd56c7]]></ToUserName><Encrypt><![CDATA[" + enc + "]]></Encrypt><AgentID><![CDATA[218]]></AgentID></xml>")
	inner, err := c.OpenMessage("477715d11cdb4164915debcba66cb864d751f3e6", "1409659813", "1372623149", body)
	if err != nil {
		t.Fatalf("OpenMessage: %v", err)
	}
	m, err := ParseApp(inner)
	if err != nil {
		t.Fatalf("ParseApp(%s): %v", inner, err)
	}
	if m.MsgType != "text" || m.Content != "hello" || m.MsgID != "4561255354251345929" {
		t.Fatalf("unexpected message %+v from %s", m, inner)
	}
	if m.ToUserName != officialCorp || m.FromUserName == "" || m.CreateTime == 0 || m.AgentID == "" {
		t.Fatalf("missing fields in %+v from %s", m, inner)
	}

	// Same payload for another corp must be refused as a receive-id mismatch.
	other, _ := NewCrypto(officialToken, officialKey, "wwsomeoneelse")
	if _, err := other.OpenMessage("477715d11cdb4164915debcba66cb864d751f3e6", "1409659813", "1372623149", body); !errors.Is(err, ErrReceiveID) {
		t.Fatalf("other corp: err = %v, want ErrReceiveID", err)
	}
}

func TestSignatureSortOrder(t *testing.T) {
	c, err := NewCrypto("b", testKey, testCorp)
	if err != nil {
		t.Fatal(err)
	}
	// Sorted: "a" < "b"(token) < "c" < "d" → sha1("abcd"), computed with sha1sum.
	const sha1abcd = "81fe8bfe87576c3ecb22426f8e57847382917acf"
	if got := c.Signature("a", "d", "c"); got != sha1abcd {
		t.Fatalf("Signature = %s, want sha1(abcd) %s", got, sha1abcd)
	}
	// Argument order must not matter, only the lexicographic sort.
	if c.Signature("c", "a", "d") != sha1abcd || c.Signature("d", "c", "a") != sha1abcd {
		t.Fatal("signature depends on argument order")
	}
	// Byte-wise (not numeric) ordering: "10" sorts before "9".
	c2, _ := NewCrypto("9", testKey, testCorp)
	c3, _ := NewCrypto("10", testKey, testCorp)
	if c2.Signature("10", "x", "y") != c3.Signature("9", "x", "y") {
		t.Fatal("numeric-looking strings must sort lexicographically")
	}
	if got := c.Signature("a", "d", "c"); got != strings.ToLower(got) || len(got) != 40 {
		t.Fatalf("signature %q is not 40 lowercase hex chars", got)
	}
}

func TestVerifyURL(t *testing.T) {
	c := newTestCrypto(t)
	echo, _ := c.Encrypt([]byte("8723454218"))
	sig := c.Signature("1700000000", "nonce", echo)
	got, err := c.VerifyURL(sig, "1700000000", "nonce", echo)
	if err != nil || string(got) != "8723454218" {
		t.Fatalf("VerifyURL = %q, %v", got, err)
	}

	bad := []struct {
		name             string
		sig, ts, n, echo string
		want             error
	}{
		{"wrong signature", strings.Repeat("0", 40), "1700000000", "nonce", echo, ErrSignature},
		{"uppercase signature", strings.ToUpper(sig), "1700000000", "nonce", echo, ErrSignature},
		{"tampered timestamp", sig, "1700000001", "nonce", echo, ErrSignature},
		{"tampered nonce", sig, "1700000000", "nonce2", echo, ErrSignature},
		{"empty signature", "", "1700000000", "nonce", echo, ErrSignature},
		{"empty echostr", sig, "1700000000", "nonce", "", ErrDecrypt},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := c.VerifyURL(tc.sig, tc.ts, tc.n, tc.echo); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestDecryptErrors(t *testing.T) {
	c := newTestCrypto(t)
	good := layout("1234567890123456", []byte("hi"), testCorp, nil)

	truncatedGood, _ := base64.StdEncoding.DecodeString(rawCBC(t, good))
	longMsg := layout("1234567890123456", bytes.Repeat([]byte("m"), 40), testCorp, nil)
	longRaw, _ := base64.StdEncoding.DecodeString(rawCBC(t, longMsg))

	// N larger than the remaining plaintext.
	bigN := layout("1234567890123456", []byte("hi"), testCorp, nil)
	binary.BigEndian.PutUint32(bigN[16:20], 1000)
	maxN := layout("1234567890123456", []byte("hi"), testCorp, nil)
	binary.BigEndian.PutUint32(maxN[16:20], 0xffffffff)

	// Padding variants (plaintext body is 32 bytes, then one pad block).
	body := []byte("1234567890123456\x00\x00\x00\x02hi" + testCorp) // 32 bytes
	withPad := func(pad []byte) []byte { return append(append([]byte(nil), body...), pad...) }

	cases := []struct {
		name string
		enc  string
		want error
	}{
		{"empty", "", ErrDecrypt},
		{"non-base64", "not base64!!", ErrDecrypt},
		{"url-safe alphabet", strings.NewReplacer("+", "-", "/", "_").Replace(rawCBC(t, layout("1234567890123456", []byte("??>>??>>"), testCorp, nil))), ErrDecrypt},
		{"not a block multiple", base64.StdEncoding.EncodeToString(make([]byte, 17)), ErrDecrypt},
		{"truncated by 5 bytes", base64.StdEncoding.EncodeToString(longRaw[:len(longRaw)-5]), ErrDecrypt},
		{"truncated by one block", base64.StdEncoding.EncodeToString(truncatedGood[:len(truncatedGood)-16]), ErrDecrypt},
		{"truncated by two blocks", base64.StdEncoding.EncodeToString(longRaw[:len(longRaw)-32]), ErrDecrypt},
		{"pad value 0", rawCBC(t, withPad(append(bytes.Repeat([]byte{32}, 31), 0))), ErrDecrypt},
		{"pad value 33", rawCBC(t, withPad(bytes.Repeat([]byte{33}, 32))), ErrDecrypt},
		{"pad value 255", rawCBC(t, withPad(bytes.Repeat([]byte{255}, 32))), ErrDecrypt},
		{"inconsistent pad bytes", rawCBC(t, withPad(append(bytes.Repeat([]byte{7}, 29), 1, 3, 3))), ErrDecrypt},
		{"pad longer than data", rawCBC(t, bytes.Repeat([]byte{32}, 16)), ErrDecrypt},
		{"shorter than header", rawCBC(t, append([]byte("0123456789"), bytes.Repeat([]byte{22}, 22)...)), ErrDecrypt},
		{"length exceeds plaintext", rawCBC(t, bigN), ErrDecrypt},
		{"length 0xffffffff", rawCBC(t, maxN), ErrDecrypt},
		{"wrong receive id", rawCBC(t, layout("1234567890123456", []byte("hi"), "wwother", nil)), ErrReceiveID},
		{"receive id prefix only", rawCBC(t, layout("1234567890123456", []byte("hi"), testCorp[:5], nil)), ErrReceiveID},
		{"receive id with suffix", rawCBC(t, layout("1234567890123456", []byte("hi"), testCorp+"x", nil)), ErrReceiveID},
		{"empty receive id", rawCBC(t, layout("1234567890123456", []byte("hi"), "", nil)), ErrReceiveID},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.Decrypt(tc.enc)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Decrypt = %q, %v; want %v", got, err, tc.want)
			}
		})
	}

	// Sanity: the valid variants of the hand-built inputs do decrypt.
	if got, err := c.Decrypt(rawCBC(t, withPad(bytes.Repeat([]byte{32}, 32)))); err != nil || string(got) != "hi" {
		t.Fatalf("full pad block: %q, %v", got, err)
	}
	if got, err := c.Decrypt(rawCBC(t, good)); err != nil || string(got) != "hi" {
		t.Fatalf("good vector: %q, %v", got, err)
	}
}

func TestOpenMessage(t *testing.T) {
	c := newTestCrypto(t)
	inner := `<xml><ToUserName><![CDATA[wwtestcorp]]></ToUserName><MsgType><![CDATA[event]]></MsgType><Event><![CDATA[kf_msg_or_event]]></Event><Token><![CDATA[ENCtok]]></Token><OpenKfId><![CDATA[wkABC]]></OpenKfId></xml>`
	enc, _ := c.Encrypt([]byte(inner))
	ts, nonce := "1700000000", "123"
	sig := c.Signature(ts, nonce, enc)
	body := fmt.Sprintf("<xml><ToUserName><![CDATA[%s]]></ToUserName><Encrypt><![CDATA[%s]]></Encrypt><AgentID><![CDATA[]]></AgentID></xml>", testCorp, enc)

	got, err := c.OpenMessage(sig, ts, nonce, []byte(body))
	if err != nil || string(got) != inner {
		t.Fatalf("OpenMessage = %q, %v", got, err)
	}
	ev, err := ParseKefu(got)
	if err != nil || ev.Token != "ENCtok" || ev.OpenKfID != "wkABC" {
		t.Fatalf("ParseKefu = %+v, %v", ev, err)
	}

	// Encrypt as plain text (no CDATA) with surrounding whitespace.
	plainBody := "<xml>\n  <ToUserName>wwtestcorp</ToUserName>\n  <Encrypt>\n" + enc + "\n</Encrypt>\n</xml>\n"
	if got, err := c.OpenMessage(sig, ts, nonce, []byte(plainBody)); err != nil || string(got) != inner {
		t.Fatalf("OpenMessage(no CDATA) = %q, %v", got, err)
	}

	otherEnc, _ := c.Encrypt([]byte("<xml/>"))
	cases := []struct {
		name string
		sig  string
		body string
		want error
	}{
		{"wrong signature", strings.Repeat("a", 40), body, ErrSignature},
		{"signature of other ciphertext", c.Signature(ts, nonce, otherEnc), body, ErrSignature},
		{"missing Encrypt", sig, "<xml><ToUserName>x</ToUserName></xml>", ErrXML},
		{"wrong root", sig, "<root><Encrypt>" + enc + "</Encrypt></root>", ErrXML},
		{"doctype", sig, `<!DOCTYPE xml [<!ENTITY e SYSTEM "file:///etc/passwd">]><xml><Encrypt>&e;</Encrypt></xml>`, ErrXML},
		{"malformed", sig, "<xml><Encrypt>" + enc + "</xml>", ErrXML},
		{"too large", sig, "<xml><Encrypt>" + enc + "</Encrypt>" + strings.Repeat(" ", MaxBodyBytes) + "</xml>", ErrTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := c.OpenMessage(tc.sig, ts, nonce, []byte(tc.body)); !errors.Is(err, tc.want) {
				t.Fatalf("OpenMessage = %q, %v; want %v", got, err, tc.want)
			}
		})
	}

	// A correctly signed ciphertext that fails to decrypt is ErrDecrypt.
	garbage := base64.StdEncoding.EncodeToString(make([]byte, 48))
	gbody := "<xml><Encrypt>" + garbage + "</Encrypt></xml>"
	if _, err := c.OpenMessage(c.Signature(ts, nonce, garbage), ts, nonce, []byte(gbody)); !errors.Is(err, ErrDecrypt) {
		t.Fatalf("garbage ciphertext: %v, want ErrDecrypt", err)
	}
}

func TestEncryptOutputIsStdBase64(t *testing.T) {
	c := newTestCrypto(t)
	for i := 0; i < 50; i++ {
		enc, err := c.Encrypt(bytes.Repeat([]byte{byte(i)}, i))
		if err != nil {
			t.Fatal(err)
		}
		if !utf8.ValidString(enc) || strings.ContainsAny(enc, "-_ \n") {
			t.Fatalf("unexpected characters in %q", enc)
		}
		if raw, err := base64.StdEncoding.DecodeString(enc); err != nil || len(raw)%32 != 0 {
			t.Fatalf("ciphertext %q: len %d err %v (want multiple of 32)", enc, len(raw), err)
		}
	}
}

// TestOpenEnvelopeReplayKey: the replay key covers only the signed parts, so
// variants of one callback (whitespace around the ciphertext, an extra
// element) share it, while a body with two <Encrypt> elements is refused.
func TestOpenEnvelopeReplayKey(t *testing.T) {
	c := newTestCrypto(t)
	enc, _ := c.Encrypt([]byte("<xml><MsgType>image</MsgType></xml>"))
	ts, nonce := "1700000000", "123"
	sig := c.Signature(ts, nonce, enc)
	variants := []string{
		"<xml><Encrypt><![CDATA[" + enc + "]]></Encrypt></xml>",
		"<xml><Encrypt><![CDATA[ \n" + enc + "\t ]]></Encrypt></xml>",
		"<xml><ToUserName>x</ToUserName><Encrypt>" + enc + "</Encrypt><Extra>1</Extra></xml>",
	}
	var key string
	for i, body := range variants {
		_, k, err := c.OpenEnvelope(sig, ts, nonce, []byte(body))
		if err != nil || k == "" {
			t.Fatalf("variant %d: %q %v", i, k, err)
		}
		if i > 0 && k != key {
			t.Fatalf("variant %d: key %s, want %s", i, k, key)
		}
		key = k
	}
	if _, k, _ := c.OpenEnvelope(c.Signature("1700000001", nonce, enc), "1700000001", nonce, []byte(variants[0])); k == key {
		t.Fatal("another timestamp kept the key")
	}
	for _, body := range []string{
		"<xml><Encrypt>" + enc + "</Encrypt><Encrypt>" + enc + "</Encrypt></xml>",
		"<xml><Encrypt></Encrypt><Encrypt>" + enc + "</Encrypt></xml>",
	} {
		if _, _, err := c.OpenEnvelope(sig, ts, nonce, []byte(body)); !errors.Is(err, ErrXML) {
			t.Fatalf("two Encrypt: %v, want ErrXML", err)
		}
	}
}
