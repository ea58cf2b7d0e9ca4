package msgr

import (
	"errors"
	"strings"
	"testing"
	"time"
)

type simpleDoc struct {
	A string `xml:"A"`
	B string `xml:"B"`
}

func TestSafeUnmarshalAccepts(t *testing.T) {
	cases := []struct {
		name, in, a, b string
	}{
		{"plain", `<xml><A>1</A><B>2</B></xml>`, "1", "2"},
		{"declaration and whitespace", "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<xml>\n<A>x</A>\n</xml>\n", "x", ""},
		{"predefined entities", `<xml><A>&lt;&gt;&amp;&apos;&quot;</A></xml>`, `<>&'"`, ""},
		{"character references", `<xml><A>&#65;&#x42;&#x4e2d;</A></xml>`, "AB中", ""},
		{"ampersand inside CDATA", `<xml><A><![CDATA[Q&A &foo; <b>]]></A></xml>`, "Q&A &foo; <b>", ""},
		{"ampersand inside comment", `<xml><!-- a & b --><A>v</A></xml>`, "v", ""},
		{"cjk", `<xml><A><![CDATA[你好]]></A><B>世界</B></xml>`, "你好", "世界"},
		{"entity in attribute", `<xml k="a&amp;b"><A>1</A></xml>`, "1", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var d simpleDoc
			if err := SafeUnmarshal([]byte(tc.in), &d, 0); err != nil {
				t.Fatalf("SafeUnmarshal: %v", err)
			}
			if d.A != tc.a || d.B != tc.b {
				t.Fatalf("got %+v, want A=%q B=%q", d, tc.a, tc.b)
			}
		})
	}
}

func TestSafeUnmarshalRefusesDoctypeAndEntities(t *testing.T) {
	cases := map[string]string{
		"xxe":                 `<?xml version="1.0"?><!DOCTYPE xml [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><xml><A>&xxe;</A></xml>`,
		"billion laughs":      `<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;">]><xml><A>&lol2;</A></xml>`,
		"lowercase doctype":   `<!doctype xml><xml><A>1</A></xml>`,
		"mixed case doctype":  `<!DoCtYpE xml><xml><A>1</A></xml>`,
		"doctype after root":  `<xml><A>1</A></xml><!DOCTYPE xml>`,
		"doctype in CDATA":    `<xml><A><![CDATA[<!DOCTYPE x>]]></A></xml>`,
		"doctype in comment":  `<xml><!-- <!DOCTYPE x> --><A>1</A></xml>`,
		"bare entity decl":    `<xml><A>1</A><!ENTITY x "y"></xml>`,
		"lowercase entity":    `<xml><A>1</A></xml><!entity x "y">`,
		"undeclared entity":   `<xml><A>&nbsp;</A></xml>`,
		"custom entity":       `<xml><A>&foo;</A></xml>`,
		"entity in attribute": `<xml k="&foo;"><A>1</A></xml>`,
		"bare ampersand":      `<xml><A>a & b</A></xml>`,
		"unterminated ref":    `<xml><A>&amp</A></xml>`,
		"uppercase hex ref":   `<xml><A>&#X41;</A></xml>`,
		"empty char ref":      `<xml><A>&#;</A></xml>`,
		"other directive":     `<!ATTLIST xml a CDATA #IMPLIED><xml><A>1</A></xml>`,
		"element directive":   `<xml><!ELEMENT A ANY><A>1</A></xml>`,
		"unterminated CDATA":  `<xml><A><![CDATA[x</A></xml>`,
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			var d simpleDoc
			err := SafeUnmarshal([]byte(in), &d, 0)
			if !errors.Is(err, ErrXML) {
				t.Fatalf("err = %v, want ErrXML", err)
			}
			if d.A != "" {
				t.Fatalf("refused input must not populate v, got %+v", d)
			}
		})
	}
}

func TestSafeUnmarshalRefusesMalformed(t *testing.T) {
	cases := map[string]string{
		"empty":             ``,
		"whitespace only":   "  \n ",
		"text only":         `hello`,
		"unclosed":          `<xml><A>1</A>`,
		"mismatched":        `<xml><A>1</B></xml>`,
		"two roots":         `<xml><A>1</A></xml><xml><A>2</A></xml>`,
		"text after root":   `<xml><A>1</A></xml>trailing`,
		"text before root":  `leading<xml><A>1</A></xml>`,
		"foreign charset":   `<?xml version="1.0" encoding="GBK"?><xml><A>1</A></xml>`,
		"invalid utf8":      "<xml><A>\xff\xfe</A></xml>",
		"unquoted attr":     `<xml a=1><A>1</A></xml>`,
		"lt in attribute":   `<xml a="<"><A>1</A></xml>`,
		"invalid char ref":  `<xml><A>&#0;</A></xml>`,
		"control character": "<xml><A>\x01</A></xml>",
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			var d simpleDoc
			if err := SafeUnmarshal([]byte(in), &d, 0); !errors.Is(err, ErrXML) {
				t.Fatalf("err = %v, want ErrXML", err)
			}
		})
	}
}

func TestSafeUnmarshalSizeLimit(t *testing.T) {
	doc := []byte(`<xml><A>12345</A></xml>`)
	var d simpleDoc
	if err := SafeUnmarshal(doc, &d, len(doc)); err != nil || d.A != "12345" {
		t.Fatalf("at the limit: %+v, %v", d, err)
	}
	d = simpleDoc{}
	if err := SafeUnmarshal(doc, &d, len(doc)-1); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("over the limit: err = %v, want ErrTooLarge", err)
	}
	if d.A != "" {
		t.Fatal("oversized body was parsed")
	}
	// Size is checked before anything else: an oversized DOCTYPE body
	// reports ErrTooLarge, not ErrXML.
	huge := []byte(`<!DOCTYPE x>` + strings.Repeat("a", 100))
	if err := SafeUnmarshal(huge, &d, 50); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	// maxBytes <= 0 falls back to MaxBodyBytes.
	big := []byte("<xml><A>" + strings.Repeat("x", MaxBodyBytes) + "</A></xml>")
	if err := SafeUnmarshal(big, &d, 0); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("default limit: err = %v, want ErrTooLarge", err)
	}
}

func TestIndexFoldASCII(t *testing.T) {
	if i := indexFoldASCII([]byte("xx<!DocType"), "<!doctype"); i != 2 {
		t.Fatalf("got %d, want 2", i)
	}
	if i := indexFoldASCII([]byte("<!DOCTYP"), "<!doctype"); i != -1 {
		t.Fatalf("partial match: got %d", i)
	}
	// Non-ASCII lookalikes are not folded (KELVIN SIGN is not 'k').
	if i := indexFoldASCII([]byte("<!\u212a"), "<!k"); i != -1 {
		t.Fatalf("unicode fold: got %d", i)
	}
}

func TestCheckTimestamp(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	w := 5 * time.Minute
	ok := []string{"1700000000", "1699999700", "1700000300"}
	for _, ts := range ok {
		if err := CheckTimestamp(ts, now, w); err != nil {
			t.Errorf("CheckTimestamp(%q) = %v, want nil", ts, err)
		}
	}
	bad := []string{
		"1699999699",          // one second too old
		"1700000301",          // one second too far in the future
		"0",                   // epoch
		"99999999999999999",   // far future
		"",                    // missing
		"abc",                 // non-numeric
		"17000000.5",          // fractional
		"-1700000000",         // signed
		"+1700000000",         // signed
		" 1700000000",         // padded
		"1700000000 ",         // padded
		"0x6553f100",          // hex
		"1e9",                 // exponent
		"9999999999999999999", // overflows int64
	}
	for _, ts := range bad {
		if err := CheckTimestamp(ts, now, w); !errors.Is(err, ErrReplay) {
			t.Errorf("CheckTimestamp(%q) = %v, want ErrReplay", ts, err)
		}
	}
	// Sub-second precision of now is respected at the boundary.
	if err := CheckTimestamp("1699999700", now.Add(500*time.Millisecond), w); !errors.Is(err, ErrReplay) {
		t.Errorf("boundary plus 0.5s should be refused, got %v", err)
	}
}
