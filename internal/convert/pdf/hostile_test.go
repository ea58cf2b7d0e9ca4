package pdf_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/convert"
	"github.com/lorekb/lore/internal/convert/pdf"
)

// buildPDF writes objects 1..n (their bodies) with a correct xref table;
// trailer is added to the trailer dictionary.
func buildPDF(objs []string, trailer string) []byte {
	var b strings.Builder
	b.WriteString("%PDF-1.4\n")
	offs := make([]int, len(objs))
	for i, o := range objs {
		offs[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	x := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R %s>>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, strings.ReplaceAll(trailer, "XREF", fmt.Sprint(x)), x)
	return []byte(b.String())
}

func stream(s string) string {
	return fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(s), s)
}

const catalog = "<< /Type /Catalog /Pages 2 0 R >>"
const font = "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"

// Hostile PDFs: each of them used to keep the reader busy for ever.
func hostile() map[string][]byte {
	deep := []string{catalog}
	// Every Pages node lists the next one twice: 2^40 paths to the leaf.
	for i := 2; i < 42; i++ {
		deep = append(deep, fmt.Sprintf("<< /Type /Pages /Kids [%d 0 R %d 0 R] /Count 1099511627776 >>", i+1, i+1))
	}
	deep = append(deep, "<< /Type /Page /Parent 41 0 R /Resources << /Font << /F1 44 0 R >> >> /Contents 43 0 R >>",
		stream("BT /F1 12 Tf 72 720 Td (Deep) Tj ET"), font)
	return map[string][]byte{
		// /Kids [2 0 R] inside object 2.
		"kids-loop.pdf": buildPDF([]string{catalog, "<< /Type /Pages /Kids [2 0 R] /Count 1 >>"}, ""),
		// The page's /Parent chain loops without a /Resources.
		"parent-loop.pdf": buildPDF([]string{catalog, "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
			"<< /Type /Page /Parent 4 0 R /Contents 5 0 R >>", "<< /Parent 3 0 R >>",
			stream("BT /F1 12 Tf 72 720 Td (Loop) Tj ET")}, ""),
		// A hex string left open at the end of the content stream.
		"open-hex.pdf": buildPDF([]string{catalog, "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
			"<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
			stream("BT /F1 12 Tf 72 720 Td <414243"), font}, ""),
		// The trailer's /Prev points back at its own xref table.
		"prev-loop.pdf": buildPDF([]string{catalog, "<< /Type /Pages /Kids [] /Count 0 >>"}, "/Prev XREF "),
		"deep-dag.pdf":  buildPDF(deep, ""),
		// A cmap whose bfchar count is far beyond what the stack holds.
		"cmap-count.pdf": buildPDF([]string{catalog, "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
			"<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
			stream("BT /F1 12 Tf 72 720 Td <0041> Tj ET"),
			"<< /Type /Font /Subtype /Type0 /BaseFont /X /Encoding /Identity-H /ToUnicode 6 0 R >>",
			stream("1 begincodespacerange <0000> <FFFF> endcodespacerange 999999999999 beginbfchar <0041> <0041> endbfchar")}, ""),
	}
}

// TestHostilePDFs: page-tree loops, /Parent loops, a /Prev loop, an
// exponential page DAG, an open hex string and a lying cmap each end
// within seconds with a result or a named failure, the converter stopping
// by itself (the budget is far away).
func TestHostilePDFs(t *testing.T) {
	for name, data := range hostile() {
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
	res, err := convert.Run(context.Background(), pdf.Converter{}, convert.Input{Name: "d.pdf", Data: hostile()["deep-dag.pdf"]})
	if err != nil || res.Meta["pages"] != 1 || !strings.Contains(res.Markdown, "Deep") {
		t.Fatalf("%v %v %v", res, err, res.Meta)
	}
}

// TestCancelReachesReader: a conversion under a done context stops with
// the context's error.
func TestCancelReachesReader(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	data := hostile()["deep-dag.pdf"]
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
	data := buildPDF([]string{catalog, "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
		stream(c.String()), font}, "")
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
