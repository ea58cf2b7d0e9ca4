package blob

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxNameLen is the longest object name accepted, in bytes; it is S3's key
// length limit, so a name valid here is valid on every backend.
const MaxNameLen = 1024

// maxDecodeRounds bounds how many layers of percent-encoding ValidateName
// peels off looking for hidden traversal. Names still changing after that
// many rounds are refused outright: no legitimate name is encoded that deep.
const maxDecodeRounds = 8

// ValidateName reports whether name is safe to use as an object name. Names
// often come from user input (upload filenames, URL paths) and end up both as
// S3 keys and as paths joined under a local directory, and may be decoded
// again by proxies or routers on the way, so anything that could address a
// location outside the store, in any of those interpretations, is refused:
//
//   - empty names and names longer than MaxNameLen bytes;
//   - invalid UTF-8, NUL and other control characters;
//   - a leading "/" or "\" (absolute paths), a Windows drive prefix ("C:"),
//     and a trailing "/" or "\" (a directory, not an object);
//   - empty segments ("a//b") and segments made only of dots (".", "..",
//     "..."), with both "/" and "\" treated as separators;
//   - percent-encoded forms of any of the above, including encoded
//     separators ("%2f", "%5c"), encoded NUL ("%00"), encoded dot segments
//     ("%2e%2e") and multiply-encoded variants ("%252e%252e"); an encoding
//     that decodes to invalid UTF-8 (such as the overlong "%c0%ae") is
//     refused too.
//
// The returned error wraps ErrInvalidName.
func ValidateName(name string) error {
	if name == "" {
		return invalidName(name, "empty")
	}
	if len(name) > MaxNameLen {
		return invalidName(name[:32]+"...", fmt.Sprintf("longer than %d bytes", MaxNameLen))
	}
	if !utf8.ValidString(name) {
		return invalidName(name, "not valid UTF-8")
	}
	if reason := checkForm(name); reason != "" {
		return invalidName(name, reason)
	}
	seps := countSeparators(name)
	cur := name
	for range maxDecodeRounds {
		next, changed := percentDecode(cur)
		if !changed {
			return nil
		}
		if !utf8.ValidString(next) {
			return invalidName(name, "percent-encoding decodes to invalid UTF-8")
		}
		if countSeparators(next) != seps {
			return invalidName(name, "contains a percent-encoded path separator")
		}
		if reason := checkForm(next); reason != "" {
			return invalidName(name, "percent-decoded form is unsafe: "+reason)
		}
		cur = next
	}
	return invalidName(name, "too many layers of percent-encoding")
}

// ValidatePrefix validates a List or DeletePrefix prefix. The empty prefix is
// valid (it means "everything"); otherwise the prefix, with at most one
// trailing "/" removed, must be a valid name (see ValidateName), so a prefix
// can be a directory-like "sites/42/" or a partial name "sites/42/rep".
// The returned error wraps ErrInvalidName.
func ValidatePrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	return ValidateName(strings.TrimSuffix(prefix, "/"))
}

func invalidName(name, reason string) error {
	return fmt.Errorf("%w %q: %s", ErrInvalidName, name, reason)
}

// checkForm applies the structural rules to one (possibly decoded) form of a
// name and returns a reason when it breaks one, or "".
func checkForm(s string) string {
	if s == "" {
		return "empty"
	}
	if s[0] == '/' || s[0] == '\\' {
		return "absolute path"
	}
	if last := s[len(s)-1]; last == '/' || last == '\\' {
		return "trailing path separator"
	}
	if len(s) >= 2 && s[1] == ':' && (s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		return "Windows drive prefix"
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return "control character"
		}
	}
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] != '/' && s[i] != '\\' {
			continue
		}
		seg := s[start:i]
		if seg == "" {
			return "empty path segment"
		}
		if strings.Trim(seg, ".") == "" {
			return "dot path segment"
		}
		start = i + 1
	}
	return ""
}

func countSeparators(s string) int {
	return strings.Count(s, "/") + strings.Count(s, `\`)
}

// percentDecode decodes every well-formed %XX escape in s and leaves anything
// else untouched (unlike url.PathUnescape, which fails on a stray "%"), so it
// sees exactly what a lenient decoder further down the line would produce.
func percentDecode(s string) (string, bool) {
	if !strings.Contains(s, "%") {
		return s, false
	}
	var b strings.Builder
	b.Grow(len(s))
	changed := false
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			hi, ok1 := unhex(s[i+1])
			lo, ok2 := unhex(s[i+2])
			if ok1 && ok2 {
				b.WriteByte(hi<<4 | lo)
				i += 2
				changed = true
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String(), changed
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
