package pdf_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/convert"
	"github.com/lorekb/lore/internal/convert/converttest"
	"github.com/lorekb/lore/internal/convert/pdf"
)

// TestHostilePDFs: page-tree loops, /Parent loops, a /Prev loop, an
// exponential page DAG, an open hex string and a lying cmap each end
// within seconds with a result or a named failure, the converter stopping
// by itself (the budget is far away).
func TestHostilePDFs(t *testing.T) {
	for name, data := range converttest.HostilePDFs() {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			res, err := convert.Run(context.Background(), pdf.Converter{}, convert.Input{Name: name, Data: data,
				Limits: convert.Limits{Timeout: time.Minute}})
			if d := time.Since(start); d > 10*time.Second {
				t.Fatalf("took %v", d)
			}
			if err != nil && (!convert.Permanent(err) || errors.Is(err, convert.ErrTooSlow)) {
				t.Fatalf("error %v: want a result or a named failure", err)
			}
			if err == nil {
				t.Logf("%q", res.Markdown)
			} else {
				t.Logf("%v", err)
			}
		})
	}
}

// TestDeepDAGReadsOnce: the page reached through 2^40 paths is one page.
func TestDeepDAGReadsOnce(t *testing.T) {
	res, err := convert.Run(context.Background(), pdf.Converter{}, convert.Input{Name: "d.pdf", Data: converttest.HostilePDFs()["deep-dag.pdf"]})
	if err != nil || res.Meta["pages"] != 1 || !strings.Contains(res.Markdown, "Deep") {
		t.Fatalf("%v %v %v", res, err, res.Meta)
	}
}

// TestCancelReachesReader: a conversion under a done context stops with
// the context's error.
func TestCancelReachesReader(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	data := converttest.HostilePDFs()["deep-dag.pdf"]
	if _, err := (pdf.Converter{}).Convert(ctx, convert.Input{Name: "d.pdf", Data: data}); !errors.Is(err, context.Canceled) {
		t.Fatalf("%v, want context.Canceled", err)
	}
}

// TestManyLinesLinear: a page of many heading-size lines and hyphenated
// lines renders in linear time.
func TestManyLinesLinear(t *testing.T) {
	var c strings.Builder
	c.WriteString("BT /F1 24 Tf\n")
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&c, "1 0 0 1 72 %d Tm (Head-) Tj\n", 100000-i*30)
	}
	c.WriteString("/F1 10 Tf\n")
	for i := 0; i < 15000; i++ {
		fmt.Fprintf(&c, "1 0 0 1 72 %d Tm (word word word-) Tj\n", -i*12)
	}
	c.WriteString("ET")
	data := converttest.BuildPDF([]string{converttest.PDFCatalog, "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
		converttest.PDFStream(c.String()), converttest.PDFFont}, "")
	start := time.Now()
	res, err := convert.Run(context.Background(), pdf.Converter{}, convert.Input{Name: "m.pdf", Data: data})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("took %v", d)
	}
	if !strings.HasPrefix(res.Markdown, "# Head") || !strings.Contains(res.Markdown, "word wordword") {
		t.Fatalf("%.300q", res.Markdown)
	}
	t.Logf("%d bytes in %v", len(res.Markdown), time.Since(start))
}
