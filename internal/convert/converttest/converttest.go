package converttest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/lorekb/lore/internal/convert"
)

// Options tune the suite for a kind of converter.
type Options struct {
	// AnyPermanent accepts any named failure for a bad file instead of the
	// exact kind: a remote processor says "failed" without telling an
	// encrypted file from a damaged one.
	AnyPermanent bool
	// SkipImages skips the image count (processors that do not return
	// images in the mode under test).
	SkipImages bool
	// NoMetaTitles: the converter sees only the content (a remote
	// processor returns Markdown without front matter), so titles that come
	// from metadata are not checked.
	NoMetaTitles bool
}

var kinds = map[string]error{"corrupt": convert.ErrCorrupt, "encrypted": convert.ErrEncrypted,
	"too_large": convert.ErrTooLarge, "unsupported": convert.ErrUnsupported}

// Run checks c on every sample of the formats it reads: the good samples
// convert to the expected Markdown, title and images; the bad ones fail with
// the named error; an over-limit input fails with ErrTooLarge; and a
// cancelled context stops it.
func Run(t *testing.T, c convert.Converter, opt Options) {
	t.Helper()
	formats := c.Formats()
	reads := func(name string) bool { return slices.Contains(formats, convert.Ext(name)) }
	tested := 0
	for _, s := range Good() {
		if !reads(s.Name) {
			continue
		}
		tested++
		t.Run("good/"+s.Name, func(t *testing.T) {
			res, err := convert.Run(context.Background(), c, convert.Input{Name: s.Name, Data: s.Data})
			if err != nil {
				t.Fatalf("convert: %v", err)
			}
			CheckResult(t, s, res, opt)
		})
	}
	if tested == 0 {
		t.Fatalf("%s reads %v: no sample of those formats", c.Name(), formats)
	}
	for _, b := range BadSamples() {
		if !reads(b.Name) {
			continue
		}
		t.Run("bad/"+b.Name, func(t *testing.T) {
			lim := convert.Limits{MaxUnpacked: 32 << 20}
			res, err := convert.Run(context.Background(), c, convert.Input{Name: b.Name, Data: b.Data, Limits: lim})
			if err == nil {
				t.Fatalf("converted a %s file: %.200q", b.Kind, res.Markdown)
			}
			want := kinds[b.Kind]
			if opt.AnyPermanent {
				if !convert.Permanent(err) {
					t.Fatalf("error %v is not a named (permanent) failure", err)
				}
			} else if !errors.Is(err, want) {
				t.Fatalf("error %v, want %v", err, want)
			}
			if strings.TrimSpace(err.Error()) == "" {
				t.Fatal("empty reason")
			}
		})
	}
	t.Run("over-limit", func(t *testing.T) {
		for _, s := range Good() {
			if !reads(s.Name) {
				continue
			}
			_, err := convert.Run(context.Background(), c, convert.Input{Name: s.Name, Data: s.Data,
				Limits: convert.Limits{MaxBytes: int64(len(s.Data)) - 1}})
			if !errors.Is(err, convert.ErrTooLarge) {
				t.Fatalf("%s over MaxBytes: %v, want ErrTooLarge", s.Name, err)
			}
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		for _, s := range Good() {
			if !reads(s.Name) || len(s.Data) < 2000 {
				continue // small text formats finish before looking at the context
			}
			if _, err := convert.Run(ctx, c, convert.Input{Name: s.Name, Data: s.Data}); !errors.Is(err, context.Canceled) {
				t.Fatalf("%s with a cancelled context: %v, want context.Canceled", s.Name, err)
			}
		}
	})
}

// CheckResult asserts a conversion of the sample.
func CheckResult(t *testing.T, s Sample, res *convert.Result, opt Options) {
	t.Helper()
	md := res.Markdown
	at := 0
	for _, w := range s.Want {
		i := strings.Index(md[at:], w)
		if i < 0 {
			t.Fatalf("%s: missing %q (in order) in:\n%s", s.Name, w, md)
		}
		at += i + len(w)
	}
	for _, nw := range s.NotWant {
		if strings.Contains(md, nw) {
			t.Fatalf("%s: %q should not appear in:\n%s", s.Name, nw, md)
		}
	}
	if s.Title != "" && res.Title != s.Title && !(opt.NoMetaTitles && s.MetaTitle) {
		t.Fatalf("%s: title %q, want %q", s.Name, res.Title, s.Title)
	}
	if !opt.SkipImages && s.Images >= 0 && len(res.Images) != s.Images {
		t.Fatalf("%s: %d images, want %d", s.Name, len(res.Images), s.Images)
	}
	for _, img := range res.Images {
		if len(img.Data) == 0 || img.ContentType == "" || !strings.Contains(md, convert.ImageRef(img.Name)) {
			t.Fatalf("%s: image %q is empty, untyped or not referenced", s.Name, img.Name)
		}
	}
	if res.Meta["converter"] == nil {
		t.Fatalf("%s: parse meta lacks the converter name", s.Name)
	}
}
