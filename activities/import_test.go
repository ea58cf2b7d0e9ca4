package activities

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// TestReadRange: a packed upload is read from its offset for its length,
// whether the store's reader seeks (the local store's file, S3's object) or
// not; a pack shorter than the file and a length over the limit fail the
// file alone.
func TestReadRange(t *testing.T) {
	pack := "first file|second, longer file|third"
	files := []ImportFile{
		{Name: "a.md", Offset: 0, Length: 10},
		{Name: "b.md", Offset: 11, Length: 19},
		{Name: "c.md", Offset: 31, Length: 5},
	}
	want := []string{"first file", "second, longer file", "third"}
	readers := map[string]func() io.Reader{
		"seeker":     func() io.Reader { return bytes.NewReader([]byte(pack)) },
		"non-seeker": func() io.Reader { return io.MultiReader(strings.NewReader(pack)) },
	}
	for kind, open := range readers {
		for i, f := range files {
			got, err := readRange(open(), f, 100)
			if err != nil || string(got) != want[i] {
				t.Fatalf("%s %s: %q, %v; want %q", kind, f.Name, got, err, want[i])
			}
		}
		for _, f := range []ImportFile{{Name: "cut.md", Offset: 31, Length: 6}, {Name: "past.md", Offset: 90, Length: 1}} {
			if _, err := readRange(open(), f, 100); !isFileFailure(err) || !strings.Contains(failureReason(err), f.Name+": the stored upload is shorter") {
				t.Fatalf("%s %s: %v, want the file to fail as cut short", kind, f.Name, err)
			}
		}
		if _, err := readRange(open(), files[1], 10); !isFileFailure(err) || !strings.Contains(failureReason(err), "more than 10 bytes") {
			t.Fatalf("%s: %v, want the file to fail as too large", kind, err)
		}
	}
}
