package converttest

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strings"

	"github.com/go-pdf/fpdf"
)

// Block is one heading (Level 1–3) or paragraph (Level 0) of a generated
// document.
type Block struct {
	Level int
	Text  string
}

func xmlText(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// WordDocument writes the blocks as a Word document the way DOCX() does:
// headings as Heading1–3 paragraph styles, paragraphs as plain runs. The
// benchmark feeds it real documentation text.
func WordDocument(blocks []Block) []byte {
	var body strings.Builder
	for _, bl := range blocks {
		ppr := ""
		if bl.Level > 0 {
			ppr = fmt.Sprintf(`<w:pPr><w:pStyle w:val="Heading%d"/></w:pPr>`, min(bl.Level, 3))
		}
		body.WriteString(`<w:p>` + ppr + `<w:r><w:t xml:space="preserve">` + xmlText(bl.Text) + `</w:t></w:r></w:p>`)
	}
	styles := ""
	for i := 1; i <= 3; i++ {
		styles += fmt.Sprintf(`<w:style w:type="paragraph" w:styleId="Heading%d"><w:name w:val="heading %d"/></w:style>`, i, i)
	}
	return zipOf(map[string][]byte{
		"[Content_Types].xml": []byte(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`),
		"_rels/.rels":         []byte(`<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`),
		"word/document.xml":   []byte(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document ` + wordNS + `><w:body>` + body.String() + `<w:sectPr/></w:body></w:document>`),
		"word/styles.xml":     []byte(`<?xml version="1.0" encoding="UTF-8"?><w:styles ` + wordNS + `>` + styles + `</w:styles>`),
	})
}

// PDFDocument writes the blocks as a PDF the way PDF() does: headings in
// 20, 16 and 13 pt bold, paragraphs in 11 pt, text outside Latin-1 replaced
// (the core fonts have no other glyphs).
func PDFDocument(blocks []Block) ([]byte, error) {
	f := fpdf.New("P", "pt", "A4", "")
	tr := f.UnicodeTranslatorFromDescriptor("")
	f.AddPage()
	sizes := map[int]float64{1: 20, 2: 16, 3: 13}
	for _, bl := range blocks {
		if bl.Level > 0 {
			f.SetFont("Helvetica", "B", sizes[min(bl.Level, 3)])
			f.Ln(6)
			f.MultiCell(500, sizes[min(bl.Level, 3)]+4, tr(bl.Text), "", "L", false)
			f.Ln(4)
			continue
		}
		f.SetFont("Helvetica", "", 11)
		f.MultiCell(500, 14, tr(bl.Text), "", "L", false)
		f.Ln(6)
	}
	var b bytes.Buffer
	if err := f.Output(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
