package converttest

import (
	"fmt"
	"strings"
)

// BuildPDF writes objects 1..n (their bodies) with a correct xref table;
// trailer is added to the trailer dictionary ("XREF" in it becomes the xref
// table's offset).
func BuildPDF(objs []string, trailer string) []byte {
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

// PDFStream is a stream object holding s.
func PDFStream(s string) string {
	return fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(s), s)
}

// PDFCatalog is a catalog whose pages are object 2; PDFFont a standard font.
const (
	PDFCatalog = "<< /Type /Catalog /Pages 2 0 R >>"
	PDFFont    = "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
)

// HostilePDFs are PDFs each of which used to keep a reader busy for ever,
// by name: the PDF reader's tests and the converters' fuzz seeds.
func HostilePDFs() map[string][]byte {
	deep := []string{PDFCatalog}
	// Every Pages node lists the next one twice: 2^40 paths to the leaf.
	for i := 2; i < 42; i++ {
		deep = append(deep, fmt.Sprintf("<< /Type /Pages /Kids [%d 0 R %d 0 R] /Count 1099511627776 >>", i+1, i+1))
	}
	deep = append(deep, "<< /Type /Page /Parent 41 0 R /Resources << /Font << /F1 44 0 R >> >> /Contents 43 0 R >>",
		PDFStream("BT /F1 12 Tf 72 720 Td (Deep) Tj ET"), PDFFont)
	return map[string][]byte{
		// /Kids [2 0 R] inside object 2.
		"kids-loop.pdf": BuildPDF([]string{PDFCatalog, "<< /Type /Pages /Kids [2 0 R] /Count 1 >>"}, ""),
		// The page's /Parent chain loops without a /Resources.
		"parent-loop.pdf": BuildPDF([]string{PDFCatalog, "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
			"<< /Type /Page /Parent 4 0 R /Contents 5 0 R >>", "<< /Parent 3 0 R >>",
			PDFStream("BT /F1 12 Tf 72 720 Td (Loop) Tj ET")}, ""),
		// A hex string left open at the end of the content stream.
		"open-hex.pdf": BuildPDF([]string{PDFCatalog, "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
			"<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
			PDFStream("BT /F1 12 Tf 72 720 Td <414243"), PDFFont}, ""),
		// The trailer's /Prev points back at its own xref table.
		"prev-loop.pdf": BuildPDF([]string{PDFCatalog, "<< /Type /Pages /Kids [] /Count 0 >>"}, "/Prev XREF "),
		"deep-dag.pdf":  BuildPDF(deep, ""),
		// A cmap whose bfchar count is far beyond what the stack holds.
		"cmap-count.pdf": BuildPDF([]string{PDFCatalog, "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
			"<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
			PDFStream("BT /F1 12 Tf 72 720 Td <0041> Tj ET"),
			"<< /Type /Font /Subtype /Type0 /BaseFont /X /Encoding /Identity-H /ToUnicode 6 0 R >>",
			PDFStream("1 begincodespacerange <0000> <FFFF> endcodespacerange 999999999999 beginbfchar <0041> <0041> endbfchar")}, ""),
	}
}
