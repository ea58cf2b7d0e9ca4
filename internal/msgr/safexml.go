package msgr

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// SafeUnmarshal decodes untrusted XML into v. Because callback bodies come
// straight from the network, it refuses, before any parsing:
//
//   - bodies longer than maxBytes (ErrTooLarge; maxBytes <= 0 means
//     MaxBodyBytes), so size is bounded before work is done;
//   - any "<!DOCTYPE" or "<!ENTITY" anywhere, case-insensitively (ErrXML),
//     which rules out XXE and entity-expansion ("billion laughs") attacks;
//   - any entity reference other than the five predefined ones and numeric
//     character references outside CDATA, comments and processing
//     instructions (ErrXML).
//
// It then parses with encoding/xml in Strict mode, refusing any remaining
// directive, more than one root element, or stray text outside the root,
// and finally unmarshals into v. Every parse failure wraps ErrXML.
func SafeUnmarshal(data []byte, v any, maxBytes int) error {
	if maxBytes <= 0 {
		maxBytes = MaxBodyBytes
	}
	if len(data) > maxBytes {
		return fmt.Errorf("%w: %d bytes exceeds limit of %d", ErrTooLarge, len(data), maxBytes)
	}
	if indexFoldASCII(data, "<!doctype") >= 0 {
		return fmt.Errorf("%w: DOCTYPE is not allowed", ErrXML)
	}
	if indexFoldASCII(data, "<!entity") >= 0 {
		return fmt.Errorf("%w: ENTITY is not allowed", ErrXML)
	}
	if err := checkEntityRefs(data); err != nil {
		return err
	}
	if err := checkStructure(data); err != nil {
		return err
	}
	if err := newStrictDecoder(data).Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrXML, err)
	}
	return nil
}

// newStrictDecoder returns a decoder with no entity map, no charset
// conversion and Strict parsing, so only predefined entities and UTF-8
// input are accepted.
func newStrictDecoder(data []byte) *xml.Decoder {
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = true
	return d
}

// checkStructure tokenizes the whole document once to reject directives
// (which encoding/xml would otherwise silently skip during Decode), a
// missing or repeated root element, and non-whitespace text outside the
// root, none of which a genuine callback contains.
func checkStructure(data []byte) error {
	d := newStrictDecoder(data)
	depth, roots := 0, 0
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%w: %v", ErrXML, err)
		}
		switch t := tok.(type) {
		case xml.Directive:
			return fmt.Errorf("%w: directives are not allowed", ErrXML)
		case xml.StartElement:
			if depth == 0 {
				roots++
				if roots > 1 {
					return fmt.Errorf("%w: more than one root element", ErrXML)
				}
			}
			depth++
		case xml.EndElement:
			depth--
		case xml.CharData:
			if depth == 0 && len(bytes.TrimSpace(t)) > 0 {
				return fmt.Errorf("%w: text outside the root element", ErrXML)
			}
		}
	}
	if roots == 0 {
		return fmt.Errorf("%w: no root element", ErrXML)
	}
	return nil
}

// indexFoldASCII reports the first index of the lowercase ASCII needle in
// data, comparing ASCII letters case-insensitively and every other byte
// exactly (so no Unicode case folding can smuggle a match in or out).
func indexFoldASCII(data []byte, needle string) int {
	n := len(needle)
outer:
	for i := 0; i+n <= len(data); i++ {
		for j := 0; j < n; j++ {
			b := data[i+j]
			if 'A' <= b && b <= 'Z' {
				b += 'a' - 'A'
			}
			if b != needle[j] {
				continue outer
			}
		}
		return i
	}
	return -1
}

// checkEntityRefs walks the raw bytes and refuses every '&' that does not
// start a predefined entity (&lt; &gt; &amp; &apos; &quot;) or a numeric
// character reference. CDATA sections, comments and processing
// instructions are skipped because '&' is literal there (a user typing
// "Q&A" arrives as CDATA and must not be refused).
func checkEntityRefs(data []byte) error {
	for i := 0; i < len(data); i++ {
		switch {
		case bytes.HasPrefix(data[i:], []byte("<![CDATA[")):
			end := bytes.Index(data[i+9:], []byte("]]>"))
			if end < 0 {
				return fmt.Errorf("%w: unterminated CDATA", ErrXML)
			}
			i += 9 + end + 2
		case bytes.HasPrefix(data[i:], []byte("<!--")):
			end := bytes.Index(data[i+4:], []byte("-->"))
			if end < 0 {
				return fmt.Errorf("%w: unterminated comment", ErrXML)
			}
			i += 4 + end + 2
		case bytes.HasPrefix(data[i:], []byte("<?")):
			end := bytes.Index(data[i+2:], []byte("?>"))
			if end < 0 {
				return fmt.Errorf("%w: unterminated processing instruction", ErrXML)
			}
			i += 2 + end + 1
		case data[i] == '&':
			semi := bytes.IndexByte(data[i+1:], ';')
			if semi < 0 || !allowedEntity(data[i+1:i+1+semi]) {
				return fmt.Errorf("%w: entity reference not allowed", ErrXML)
			}
			i += semi + 1
		}
	}
	return nil
}

// allowedEntity reports whether name (the text between '&' and ';') is a
// predefined XML entity or a well-formed numeric character reference.
func allowedEntity(name []byte) bool {
	switch string(name) {
	case "lt", "gt", "amp", "apos", "quot":
		return true
	}
	if len(name) < 2 || name[0] != '#' {
		return false
	}
	digits, hexRef := name[1:], false
	if digits[0] == 'x' {
		digits, hexRef = digits[1:], true
	}
	if len(digits) == 0 || len(digits) > 8 {
		return false
	}
	for _, b := range digits {
		switch {
		case '0' <= b && b <= '9':
		case hexRef && ('a' <= b && b <= 'f' || 'A' <= b && b <= 'F'):
		default:
			return false
		}
	}
	return true
}

// CheckTimestamp enforces the replay window on a callback's timestamp
// query parameter (Unix seconds): it returns ErrReplay if ts is empty or
// not all digits, or if it lies more than window before or after now.
// Signatures do not expire on their own, so without this check a captured
// callback could be replayed indefinitely.
func CheckTimestamp(ts string, now time.Time, window time.Duration) error {
	if ts == "" || len(ts) > 18 {
		return fmt.Errorf("%w: bad timestamp %q", ErrReplay, ts)
	}
	for i := 0; i < len(ts); i++ {
		if ts[i] < '0' || ts[i] > '9' {
			return fmt.Errorf("%w: bad timestamp %q", ErrReplay, ts)
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: bad timestamp %q", ErrReplay, ts)
	}
	d := now.Sub(time.Unix(sec, 0))
	if d > window || d < -window {
		return fmt.Errorf("%w: timestamp %s is %s from now", ErrReplay, ts, d.Round(time.Second))
	}
	return nil
}
