package blob

import (
	"errors"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

func TestValidateNameAccepts(t *testing.T) {
	for _, name := range []string{
		"a",
		"a.txt",
		"sites/42/files/report.pdf",
		"sites/42/files/Résumé – 日本語.pdf",
		"dir/hello world+plus.txt",
		"100%.txt",       // stray percent, not an escape
		"file%2etxt",     // encoded dot inside a segment is harmless
		"a/.hidden",      // dot files are fine
		"a/..b/c..",      // dots inside a segment are fine
		"weird%zz/name",  // malformed escape left alone
		"ab:c",           // colon not at a drive position
		"a/b/c/d/e/f/g",  // deep
		"emoji/🙂.png",    // non-BMP
		"tab-free name!", // punctuation
		strings.Repeat("a", MaxNameLen),
	} {
		if err := ValidateName(name); err != nil {
			t.Errorf("ValidateName(%q) = %v, want nil", name, err)
		}
	}
}

func TestValidateNameRejects(t *testing.T) {
	for _, name := range []string{
		"",
		strings.Repeat("a", MaxNameLen+1),
		"/etc/passwd",
		`\windows\system32`,
		"..",
		"../x",
		"a/../../x",
		"a/..",
		`a\..\..\x`,
		`..\x`,
		"a/./b",
		".",
		"a//b",
		"a/",
		`a\`,
		"a/...",
		"C:",
		"c:/windows",
		`C:\x`,
		"a\x00b",
		"a\nb",
		"a\x7fb",
		"a\u0085b", // C1 control
		"\xff\xfe",
		"a/\xc0\xae", // raw overlong
		"%2e%2e/x",
		"%2E%2E/x",
		"a/%2e%2e/%2e%2e/x",
		"a%2fb",
		"a%2Fb",
		"a%5cb",
		"a%00b",
		"%252e%252e/x",
		"%25252e%25252e/x",
		"a%252fb",
		"a%25255cb",
		"%c0%ae%c0%ae/x", // overlong encoded dot
		"%2fetc",
		"%43:/x", // encoded drive letter
		"a/%2e",
		"a%0ab",
		"a/%" + strings.Repeat("25", 12) + "2e", // deeper than maxDecodeRounds
	} {
		err := ValidateName(name)
		if err == nil {
			t.Errorf("ValidateName(%q) = nil, want error", name)
			continue
		}
		if !errors.Is(err, ErrInvalidName) {
			t.Errorf("ValidateName(%q) = %v, does not wrap ErrInvalidName", name, err)
		}
	}
}

func TestValidatePrefix(t *testing.T) {
	for _, p := range []string{"", "a", "a/", "sites/42/", "sites/42/rep"} {
		if err := ValidatePrefix(p); err != nil {
			t.Errorf("ValidatePrefix(%q) = %v", p, err)
		}
	}
	for _, p := range []string{"/", "a//", "../", "a/../", "%2e%2e/", "/a/"} {
		if err := ValidatePrefix(p); !errors.Is(err, ErrInvalidName) {
			t.Errorf("ValidatePrefix(%q) = %v, want ErrInvalidName", p, err)
		}
	}
}

func TestNormalizeMetadata(t *testing.T) {
	got, err := NormalizeMetadata(map[string]string{"Original_Filename": "Résumé.pdf", "x-Other": "v"})
	if err != nil {
		t.Fatal(err)
	}
	if got["original_filename"] != "Résumé.pdf" || got["x-other"] != "v" || len(got) != 2 {
		t.Fatalf("NormalizeMetadata = %v", got)
	}
	if m, err := NormalizeMetadata(nil); err != nil || m == nil || len(m) != 0 {
		t.Fatalf("NormalizeMetadata(nil) = %v, %v; want empty non-nil map", m, err)
	}
	for _, bad := range []map[string]string{
		{"": "v"},
		{"has space": "v"},
		{"colon:": "v"},
		{"ünicode": "v"},
		{strings.Repeat("k", MaxMetadataKeyLen+1): "v"},
		{"k": "\xff"},
		{"Key": "a", "key": "b"},
	} {
		if _, err := NormalizeMetadata(bad); !errors.Is(err, ErrInvalidMetadata) {
			t.Errorf("NormalizeMetadata(%q) = %v, want ErrInvalidMetadata", bad, err)
		}
	}
}

// FuzzValidateName checks the property the validator exists for: a name that
// passes can be joined under a root directory (directly, or after any further
// URL decoding a router might apply) without escaping it or leaving a ".."
// segment behind.
func FuzzValidateName(f *testing.F) {
	for _, seed := range []string{
		"a", "a/b.txt", "../x", "a/../../b", `a\..\b`, "%2e%2e/x", "%252e%252e%252fx",
		"a%2fb", "C:/x", "/abs", "a//b", "a/./b", "100%.txt", "Résumé.pdf", "a\x00b",
		"%c0%ae%c0%ae/", "...", "a/...b/c", "%25", "%%32%65%%32%65/x",
	} {
		f.Add(seed)
	}
	root := filepath.Join(string(filepath.Separator), "srv", "lore-blobs")
	f.Fuzz(func(t *testing.T, name string) {
		if ValidateName(name) != nil {
			return
		}
		forms := []string{name}
		if d, err := url.PathUnescape(name); err == nil {
			forms = append(forms, d)
		}
		if d, err := url.QueryUnescape(name); err == nil {
			forms = append(forms, d)
		}
		if d, changed := percentDecode(name); changed {
			forms = append(forms, d)
		}
		for _, form := range forms {
			for _, candidate := range []string{form, strings.ReplaceAll(form, `\`, "/")} {
				joined := filepath.Join(root, candidate)
				if !strings.HasPrefix(joined, root+string(filepath.Separator)) {
					t.Fatalf("name %q (form %q) escapes root: %q", name, candidate, joined)
				}
				rel, err := filepath.Rel(root, joined)
				if err != nil || rel == "." {
					t.Fatalf("name %q (form %q) resolves to the root itself: %q, %v", name, candidate, rel, err)
				}
				for _, seg := range strings.Split(filepath.ToSlash(rel), "/") {
					if seg == ".." {
						t.Fatalf("name %q (form %q) leaves a .. segment: %q", name, candidate, rel)
					}
				}
				for _, seg := range strings.FieldsFunc(candidate, func(r rune) bool { return r == '/' || r == '\\' }) {
					if seg == ".." {
						t.Fatalf("name %q (form %q) contains a .. segment", name, candidate)
					}
				}
			}
		}
	})
}
