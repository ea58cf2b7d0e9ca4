package local

import (
	"context"
	"strings"
	"testing"
	"unsafe"

	"github.com/lorekb/lore/internal/vector"
)

// TestStoreOwnsItsStrings checks that stored chunks do not point into the
// caller's strings (a heading cut out of a whole document would keep the
// document in memory for as long as the chunk is stored) and that the chunks
// of one batch share one copy of a repeated title and heading.
func TestStoreOwnsItsStrings(t *testing.T) {
	s := openTest(t, t.TempDir())
	defer s.Close()
	doc := "# Install\n\n" + strings.Repeat("body text ", 10000)
	heading := doc[2:9] // "Install", a substring of the whole document
	text := doc[11:40]
	a := chunk(1, 7, 1, 0, vec(1), text)
	b := chunk(1, 7, 1, 1, vec(0, 1), text)
	a.Heading, b.Heading = heading, heading
	if err := s.Upsert(context.Background(), []vector.Chunk{a, b}); err != nil {
		t.Fatal(err)
	}
	ra, rb := s.byID[a.ID], s.byID[b.ID]
	if ra.heading != heading || ra.text != text || rb.heading != heading {
		t.Fatalf("stored heading %q text %q, want %q %q", ra.heading, ra.text, heading, text)
	}
	within := func(v string) bool {
		p := uintptr(unsafe.Pointer(unsafe.StringData(v)))
		start := uintptr(unsafe.Pointer(unsafe.StringData(doc)))
		return p >= start && p < start+uintptr(len(doc))
	}
	if within(ra.heading) || within(ra.text) || within(rb.heading) {
		t.Fatal("a stored string points into the caller's document")
	}
	if unsafe.StringData(ra.heading) != unsafe.StringData(rb.heading) || unsafe.StringData(ra.title) != unsafe.StringData(rb.title) {
		t.Error("chunks of one batch hold separate copies of the same heading or title")
	}
}
