package builtin_test

import (
	"fmt"
	"strings"
)

// The hostile PDFs of package pdf's tests, as fuzz seeds.

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
func hostilePDFs() map[string][]byte {
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
