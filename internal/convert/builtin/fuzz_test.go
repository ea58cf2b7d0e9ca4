package builtin_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/convert"
	"github.com/lorekb/lore/internal/convert/builtin"
	"github.com/lorekb/lore/internal/convert/converttest"
)

// Budgets of one fuzz input: the converter must end by itself well within
// fuzzBudget (the conversion's own Timeout) and allocate at most fuzzAlloc.
const (
	fuzzBudget = 5 * time.Second
	fuzzAlloc  = 256 << 20
)

var fuzzLimits = convert.Limits{MaxBytes: 4 << 20, MaxUnpacked: 32 << 20, Timeout: fuzzBudget}

// fuzzConvert seeds f with every sample of the formats and checks one
// input per format.
func fuzzConvert(f *testing.F, formats []string, extra ...[]byte) {
	for _, s := range converttest.Good() {
		if slices.Contains(formats, convert.Ext(s.Name)) {
			f.Add(s.Data, uint8(slices.Index(formats, convert.Ext(s.Name))))
		}
	}
	for _, s := range converttest.BadSamples() {
		if slices.Contains(formats, convert.Ext(s.Name)) && len(s.Data) < 1<<20 {
			f.Add(s.Data, uint8(slices.Index(formats, convert.Ext(s.Name))))
		}
	}
	for _, e := range extra {
		f.Add(e, uint8(0))
	}
	reg := builtin.Registry()
	f.Fuzz(func(t *testing.T, data []byte, format uint8) {
		name := "fuzz." + formats[int(format)%len(formats)]
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		start := time.Now()
		_, err := reg.Convert(context.Background(), convert.Input{Name: name, Data: data, Limits: fuzzLimits})
		d := time.Since(start)
		runtime.ReadMemStats(&m1)
		if errors.Is(err, convert.ErrTooSlow) || d > fuzzBudget {
			t.Fatalf("%s (%d bytes): ran %v: %v", name, len(data), d, err)
		}
		if err != nil && !convert.Permanent(err) {
			t.Fatalf("%s: %v is not a named failure", name, err)
		}
		if a := m1.TotalAlloc - m0.TotalAlloc; a > fuzzAlloc {
			t.Fatalf("%s (%d bytes): allocated %d MiB", name, len(data), a>>20)
		}
	})
}

func FuzzConvertPDF(f *testing.F) {
	var extra [][]byte
	for _, d := range converttest.HostilePDFs() {
		extra = append(extra, d)
	}
	fuzzConvert(f, []string{"pdf"}, extra...)
}

func FuzzConvertDOCX(f *testing.F) {
	fuzzConvert(f, []string{"docx"}, docx(f, `<w:p><w:r><w:t>a</w:t></w:r><w:hyperlink r:id="rId1"><w:r><w:t>l</w:t></w:r></w:hyperlink></w:p>`,
		`<Relationship Id="rId1" Target="javascript:x" TargetMode="External"/>`))
}

func FuzzConvertPPTX(f *testing.F) { fuzzConvert(f, []string{"pptx"}) }

func FuzzConvertXLSX(f *testing.F) { fuzzConvert(f, []string{"xlsx"}) }

func FuzzConvertHTML(f *testing.F) {
	fuzzConvert(f, []string{"html"}, []byte(`<a href="javascript:x">a</a><script>x</script><img src="data:image/png;base64,AA==">`))
}

// FuzzConvertText covers Markdown, plain text and CSV (and Sanitize).
func FuzzConvertText(f *testing.F) {
	fuzzConvert(f, []string{"md", "txt", "csv"}, []byte("[a](javascript:x) <b> `c`\n```\n<d>\n```\n[id]: data:x\n"))
}
