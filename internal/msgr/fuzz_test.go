package msgr

import (
	"bytes"
	"crypto/aes"
	"encoding/base64"
	"errors"
	"testing"
)

// FuzzDecrypt checks that Decrypt never panics on arbitrary input, only
// fails with the named errors, and that Encrypt→Decrypt round-trips any
// message. Fuzzer bytes are also used as a raw AES plaintext (padded to a
// block) so the padding, length and receive-id checks see adversarial
// decrypted data, which random ciphertext alone would almost never reach.
func FuzzDecrypt(f *testing.F) {
	c := newTestCrypto(f)
	valid, _ := c.Encrypt([]byte("<xml>hello 世界</xml>"))
	f.Add([]byte(valid))
	f.Add([]byte(""))
	f.Add([]byte("===="))
	f.Add([]byte("not base64!!"))
	f.Add([]byte(base64.StdEncoding.EncodeToString(make([]byte, 16))))
	f.Add([]byte(base64.StdEncoding.EncodeToString(make([]byte, 32))))
	f.Add(layout("1234567890123456", []byte("hi"), testCorp, nil))
	f.Add(layout("1234567890123456", []byte("hi"), "other", nil))
	f.Add([]byte("1234567890123456\xff\xff\xff\xff" + testCorp + "\x05\x05\x05\x05\x05"))

	f.Fuzz(func(t *testing.T, data []byte) {
		// 1. Arbitrary text as base64 ciphertext.
		if _, err := c.Decrypt(string(data)); err != nil && !namedDecryptErr(err) {
			t.Fatalf("Decrypt(%q): unnamed error %v", data, err)
		}

		// 2. Arbitrary bytes as the decrypted plaintext.
		plain := append([]byte(nil), data...)
		if r := len(plain) % aes.BlockSize; r != 0 || len(plain) == 0 {
			plain = append(plain, make([]byte, aes.BlockSize-r)...)
		}
		got, err := c.Decrypt(rawCBC(t, plain))
		if err != nil && !namedDecryptErr(err) {
			t.Fatalf("Decrypt(plain %q): unnamed error %v", plain, err)
		}
		if err == nil && !bytes.Contains(plain, got) {
			t.Fatalf("Decrypt invented bytes %q not in plaintext %q", got, plain)
		}

		// 3. Round trip.
		enc, err := c.Encrypt(data)
		if err != nil {
			t.Fatalf("Encrypt: %v", err)
		}
		back, err := c.Decrypt(enc)
		if err != nil {
			t.Fatalf("Decrypt(Encrypt(%q)): %v", data, err)
		}
		if !bytes.Equal(back, data) {
			t.Fatalf("round trip: got %q want %q", back, data)
		}
	})
}

func namedDecryptErr(err error) bool {
	return errors.Is(err, ErrDecrypt) || errors.Is(err, ErrReceiveID)
}

// lowerASCII lowercases ASCII letters only; it is deliberately a different
// implementation from indexFoldASCII so the oracle is independent.
func lowerASCII(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			c += 32
		}
		out[i] = c
	}
	return out
}

// FuzzSafeUnmarshal checks that SafeUnmarshal (and the parsers built on
// it) never panic, fail only with ErrXML/ErrTooLarge, and never accept a
// body containing a DOCTYPE or ENTITY declaration or exceeding the limit.
func FuzzSafeUnmarshal(f *testing.F) {
	seeds := []string{
		`<xml><A>1</A><B>2</B></xml>`,
		`<xml><MsgType>text</MsgType><Text><Content><![CDATA[Q&A]]></Content></Text></xml>`,
		`<xml><MsgType>event</MsgType><Event>kf_msg_or_event</Event><Token>t</Token><OpenKfId>wk</OpenKfId></xml>`,
		`<xml><ToUserName>a</ToUserName><FromUserName>b</FromUserName><CreateTime>1</CreateTime><MsgType>text</MsgType><Content>c</Content></xml>`,
		`<!DOCTYPE xml [<!ENTITY x "y">]><xml><A>&x;</A></xml>`,
		`<!doctype x><xml/>`,
		`<xml><A>&lt;&#65;&#x42;</A></xml>`,
		`<xml><!-- c --><?pi x?><A/></xml>`,
		`<xml><A><![CDATA[<!DOCTYPE]]></A></xml>`,
		`<?xml version="1.0" encoding="UTF-8"?><xml/>`,
		`<xml a="&amp;"/>`,
		``,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	const limit = 4096
	f.Fuzz(func(t *testing.T, data []byte) {
		var d struct {
			A    string `xml:"A"`
			B    string `xml:"B,attr"`
			Text struct {
				Content string `xml:"Content"`
			} `xml:"Text"`
		}
		err := SafeUnmarshal(data, &d, limit)
		if err != nil && !errors.Is(err, ErrXML) && !errors.Is(err, ErrTooLarge) {
			t.Fatalf("unnamed error %v", err)
		}
		if err == nil {
			low := lowerASCII(data)
			if bytes.Contains(low, []byte("<!doctype")) || bytes.Contains(low, []byte("<!entity")) {
				t.Fatalf("accepted a declaration: %q", data)
			}
			if len(data) > limit {
				t.Fatalf("accepted %d bytes over limit %d", len(data), limit)
			}
		}
		if _, err := ParseKefu(data); err != nil && !errors.Is(err, ErrXML) && !errors.Is(err, ErrTooLarge) {
			t.Fatalf("ParseKefu: unnamed error %v", err)
		}
		if _, err := ParseApp(data); err != nil && !errors.Is(err, ErrXML) && !errors.Is(err, ErrTooLarge) {
			t.Fatalf("ParseApp: unnamed error %v", err)
		}
	})
}
