package builtin_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lorekb/lore/internal/convert"
	"github.com/lorekb/lore/internal/convert/builtin"
	"github.com/lorekb/lore/internal/convert/converttest"
)

// TestRegistry runs every good sample through the registry (extension
// dispatch, title fallback, parse meta) and refuses unknown types.
func TestRegistry(t *testing.T) {
	r := builtin.Registry()
	for _, s := range converttest.Good() {
		res, err := r.Convert(context.Background(), convert.Input{Name: s.Name, Data: s.Data})
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		converttest.CheckResult(t, s, res, converttest.Options{})
	}
	for _, name := range []string{"archive.zip", "photo.png", "noext", "old.doc"} {
		_, err := r.Convert(context.Background(), convert.Input{Name: name, Data: []byte("data")})
		if !errors.Is(err, convert.ErrUnsupported) {
			t.Fatalf("%s: %v, want ErrUnsupported", name, err)
		}
	}
	if got := strings.Join(r.Formats(), ","); got != "csv,docx,htm,html,markdown,md,pdf,pptx,txt,xlsx" {
		t.Fatalf("formats %s", got)
	}
}

// TestRewriteImages replaces stored images and drops the others.
func TestRewriteImages(t *testing.T) {
	md := "a ![x](lore-image:image1.png) b ![y](lore-image:image2.png) c"
	got := convert.RewriteImages(md, map[string]string{"image1.png": "/v1/files/sites/1/i.png:download"})
	if got != "a ![x](/v1/files/sites/1/i.png:download) b  c" {
		t.Fatalf("%q", got)
	}
}
