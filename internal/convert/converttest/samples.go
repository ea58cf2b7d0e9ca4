// Package converttest is the one conformance suite every converter passes
// (built-in formats and external document processors alike), over real
// sample files it generates: DOCX and PPTX written part by part as Office
// writes them, XLSX through excelize, PDF through fpdf (also encrypted ones),
// and damaged, encrypted and zip-bomb variants of each container.
package converttest

import (
	"archive/zip"
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"strings"

	"github.com/go-pdf/fpdf"
	"github.com/xuri/excelize/v2"
)

// Sample is one generated file and what a converter must make of it.
type Sample struct {
	Name string
	Data []byte
	// Title is the expected document title ("" when the suite should not
	// check it).
	Title string
	// Want are strings the Markdown must contain, in this order.
	Want []string
	// NotWant must not appear (navigation, scripts, raw XML).
	NotWant []string
	// Images is how many images the converter must extract (-1: any).
	Images int
	// MetaTitle marks a title that comes from the file's metadata (front
	// matter), not its first heading.
	MetaTitle bool
}

// PNG is a small real PNG image.
func PNG() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	for x := 0; x < 4; x++ {
		for y := 0; y < 4; y++ {
			img.Set(x, y, color.RGBA{R: uint8(60 * x), G: uint8(60 * y), B: 200, A: 255})
		}
	}
	var b bytes.Buffer
	_ = png.Encode(&b, img)
	return b.Bytes()
}

// Good returns the well-formed samples, one or more per format.
func Good() []Sample {
	return []Sample{
		{Name: "install.md", Data: []byte("---\ntitle: Install Guide\n---\n# Installing\n\nRun `make run` and open the **Admin API**.\n\n## Next steps\n\nRead the docs.\n"),
			Title: "Install Guide", Want: []string{"# Installing", "Run `make run`", "## Next steps", "Read the docs."}, Images: 0, MetaTitle: true},
		{Name: "heading-title.md", Data: []byte("\ufeff# Release notes\r\n\r\nVersion 2 adds import.\r\n"),
			Title: "Release notes", Want: []string{"# Release notes", "Version 2 adds import."}, Images: 0},
		{Name: "notes.txt", Data: []byte("Plain notes about the cluster.\n\nSecond paragraph here.\n"),
			Title: "notes", Want: []string{"Plain notes about the cluster.", "Second paragraph here."}, Images: 0},
		{Name: "page.html", Data: []byte(strings.Replace(samplePage, "%PNG%", base64.StdEncoding.EncodeToString(PNG()), 1)), Title: "Deploying Lore",
			Want:    []string{"# Deploying Lore", "Start the **worker** first.", "[the guide](https://example.com/guide)", "| Variable", "| Default", `LORE\_HTTP\_ADDR`, ":8080", "![chart](lore-image:image1.png)"},
			NotWant: []string{"Home", "About us", "tracking()", "Copyright", "Sidebar links"}, Images: 1},
		{Name: "guide.docx", Data: DOCX(), Title: "Getting Started",
			Want:    []string{"# Getting Started", "Lore turns files into **documents** quickly.", "## Requirements", "- Go 1.26", "- PostgreSQL", "[docs](https://example.com/docs)", "| Name | Value |", "| port | 8080 |", "![](lore-image:image1.png)"},
			NotWant: []string{"<w:", "w:t"}, Images: 1},
		{Name: "deck.pptx", Data: PPTX(), Title: "Quarterly Review",
			Want:    []string{"## Quarterly Review", "Numbers for the third quarter", "![](lore-image:image1.png)", "## Highlights", "- Revenue grew", "- Costs fell", "| Region | Sales |", "| North | 120 |", "> Mention the new office"},
			NotWant: []string{"<a:", "<p:"}, Images: 1},
		{Name: "prices.xlsx", Data: XLSX(""), Title: "Prices",
			Want: []string{"## Prices", "| Item | Price | Stock |", "| --- | --- | --- |", "| Apple | 1.5 | 30 |", "| Pear | 2 | 12 |", "## Notes", "| Checked by ops |"}, Images: 0},
		{Name: "people.csv", Data: []byte("name,role,city\nAda,\"engineer, lead\",London\nLin,writer,Taipei\n"), Title: "people",
			Want: []string{"| name | role | city |", "| Ada | engineer, lead | London |", "| Lin | writer | Taipei |"}, Images: 0},
		{Name: "report.pdf", Data: PDF(""), Title: "Quarterly Report",
			Want: []string{"# Quarterly Report", "The import pipeline converts files", "## Results", "Every file became one document", "## Next Steps", "Ship the connector"}, Images: 0},
	}
}

// Bad is a file every converter of its format must refuse with Kind.
type Bad struct {
	Name string
	Data []byte
	// Kind is "corrupt", "encrypted", "too_large" or "unsupported".
	Kind string
}

// BadSamples returns damaged, encrypted, oversized and bomb files.
func BadSamples() []Bad {
	junk := bytes.Repeat([]byte("this is not an office file \x00\x01\x02"), 50)
	enc := XLSX("secret") // an encrypted OOXML container (the envelope is the same for every Office format)
	trunc := DOCX()
	return []Bad{
		{Name: "junk.docx", Data: junk, Kind: "corrupt"},
		{Name: "junk.pptx", Data: junk, Kind: "corrupt"},
		{Name: "junk.xlsx", Data: junk, Kind: "corrupt"},
		{Name: "junk.pdf", Data: junk, Kind: "corrupt"},
		{Name: "truncated.docx", Data: trunc[:len(trunc)/2], Kind: "corrupt"},
		{Name: "notword.docx", Data: zipOf(map[string][]byte{"hello.txt": []byte("hi")}), Kind: "corrupt"},
		{Name: "binary.md", Data: []byte("\x00\x01\x02PNG binary"), Kind: "corrupt"},
		{Name: "empty.txt", Data: nil, Kind: "corrupt"},
		{Name: "locked.xlsx", Data: enc, Kind: "encrypted"},
		{Name: "locked.docx", Data: enc, Kind: "encrypted"},
		{Name: "locked.pptx", Data: enc, Kind: "encrypted"},
		{Name: "locked.pdf", Data: PDF("secret"), Kind: "encrypted"},
		{Name: "bomb.docx", Data: Bomb("word/document.xml"), Kind: "too_large"},
		{Name: "bomb.pptx", Data: Bomb("ppt/presentation.xml"), Kind: "too_large"},
		{Name: "bomb.xlsx", Data: Bomb("xl/workbook.xml"), Kind: "too_large"},
		{Name: "scan.pdf", Data: ScannedPDF(), Kind: "unsupported"},
	}
}

// Bomb is a zip whose one entry unpacks 64 MiB of zeros from about 64 KiB.
func Bomb(entry string) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, _ := zw.Create(entry)
	chunk := make([]byte, 1<<20)
	for i := 0; i < 64; i++ {
		_, _ = w.Write(chunk)
	}
	_ = zw.Close()
	return b.Bytes()
}

func zipOf(parts map[string][]byte) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	// [Content_Types].xml first, as Office writes it.
	if ct, ok := parts["[Content_Types].xml"]; ok {
		w, _ := zw.Create("[Content_Types].xml")
		_, _ = w.Write(ct)
	}
	for name, data := range parts {
		if name == "[Content_Types].xml" {
			continue
		}
		w, _ := zw.Create(name)
		_, _ = w.Write(data)
	}
	_ = zw.Close()
	return b.Bytes()
}

const samplePage = `<!doctype html><html><head><title>Deploying Lore</title><script>tracking()</script>
<style>body{color:red}</style></head><body>
<header><nav><a href="/">Home</a> <a href="/about">About us</a></nav></header>
<aside>Sidebar links</aside>
<main><h1>Deploying Lore</h1><p>Start the <strong>worker</strong> first. See <a href="https://example.com/guide">the guide</a>.</p>
<table><thead><tr><th>Variable</th><th>Default</th></tr></thead><tbody><tr><td>LORE_HTTP_ADDR</td><td>:8080</td></tr></tbody></table>
<p><img alt="chart" src="data:image/png;base64,` + "%PNG%" + `"></p></main>
<footer>Copyright 2026</footer></body></html>`

const wordNS = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing" xmlns:pic="http://schemas.openxmlformats.org/drawingml/2006/picture"`

// DOCX is a Word document with a Title-less core, a Heading 1, a bold run,
// a Heading 2, a numbered list, a hyperlink, a table and a picture.
func DOCX() []byte {
	p := func(style, inner string) string {
		ppr := ""
		if style != "" {
			ppr = `<w:pPr><w:pStyle w:val="` + style + `"/></w:pPr>`
		}
		return `<w:p>` + ppr + inner + `</w:p>`
	}
	r := func(t string) string { return `<w:r><w:t xml:space="preserve">` + t + `</w:t></w:r>` }
	li := func(t string) string {
		return `<w:p><w:pPr><w:pStyle w:val="ListParagraph"/><w:numPr><w:ilvl w:val="0"/><w:numId w:val="1"/></w:numPr></w:pPr>` + r(t) + `</w:p>`
	}
	cell := func(t string) string { return `<w:tc><w:p>` + r(t) + `</w:p></w:tc>` }
	body := p("Heading1", r("Getting Started")) +
		p("", r("Lore turns files into ")+`<w:r><w:rPr><w:b/></w:rPr><w:t>documents</w:t></w:r>`+r(" quickly.")) +
		p("Heading2", r("Requirements")) + li("Go 1.26") + li("PostgreSQL") +
		p("", r("Read the ")+`<w:hyperlink r:id="rId9"><w:r><w:t>docs</w:t></w:r></w:hyperlink>`+r(".")) +
		`<w:tbl><w:tr>` + cell("Name") + cell("Value") + `</w:tr><w:tr>` + cell("port") + cell("8080") + `</w:tr></w:tbl>` +
		p("", `<w:r><w:drawing><wp:inline><a:graphic><a:graphicData><pic:pic><pic:blipFill><a:blip r:embed="rId5"/></pic:blipFill></pic:pic></a:graphicData></a:graphic></wp:inline></w:drawing></w:r>`)
	return zipOf(map[string][]byte{
		"[Content_Types].xml": []byte(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Default Extension="png" ContentType="image/png"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`),
		"_rels/.rels":         []byte(`<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`),
		"word/document.xml":   []byte(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document ` + wordNS + `><w:body>` + body + `<w:sectPr/></w:body></w:document>`),
		"word/_rels/document.xml.rels": []byte(`<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId5" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/image" Target="media/image1.png"/>` +
			`<Relationship Id="rId9" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/hyperlink" Target="https://example.com/docs" TargetMode="External"/></Relationships>`),
		"word/styles.xml":       []byte(`<?xml version="1.0" encoding="UTF-8"?><w:styles ` + wordNS + `><w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/></w:style><w:style w:type="paragraph" w:styleId="Heading2"><w:name w:val="heading 2"/></w:style><w:style w:type="paragraph" w:styleId="ListParagraph"><w:name w:val="List Paragraph"/></w:style></w:styles>`),
		"word/media/image1.png": PNG(),
	})
}

const presNS = `xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main"`

// PPTX is a two-slide deck, listed in presentation order opposite to the
// part names, with title placeholders, bullets, a table, a picture and
// speaker notes.
func PPTX() []byte {
	sp := func(ph, paras string) string {
		phx := ""
		if ph != "" {
			phx = `<p:ph type="` + ph + `"/>`
		}
		return `<p:sp><p:nvSpPr><p:cNvPr id="2" name="s"/><p:cNvSpPr/><p:nvPr>` + phx + `</p:nvPr></p:nvSpPr><p:txBody><a:bodyPr/>` + paras + `</p:txBody></p:sp>`
	}
	ap := func(t string, bullet bool) string {
		ppr := ""
		if bullet {
			ppr = `<a:pPr><a:buChar char="•"/></a:pPr>`
		}
		return `<a:p>` + ppr + `<a:r><a:t>` + t + `</a:t></a:r></a:p>`
	}
	cell := func(t string) string {
		return `<a:tc><a:txBody><a:bodyPr/><a:p><a:r><a:t>` + t + `</a:t></a:r></a:p></a:txBody></a:tc>`
	}
	slideA := `<p:sld ` + presNS + `><p:cSld><p:spTree>` + sp("ctrTitle", ap("Quarterly Review", false)) + sp("subTitle", ap("Numbers for the third quarter", false)) +
		`<p:pic><p:blipFill><a:blip r:embed="rId2"/></p:blipFill></p:pic></p:spTree></p:cSld></p:sld>`
	slideB := `<p:sld ` + presNS + `><p:cSld><p:spTree>` + sp("title", ap("Highlights", false)) + sp("", ap("Revenue grew", true)+ap("Costs fell", true)) +
		`<p:graphicFrame><a:graphic><a:graphicData><a:tbl><a:tr>` + cell("Region") + cell("Sales") + `</a:tr><a:tr>` + cell("North") + cell("120") + `</a:tr></a:tbl></a:graphicData></a:graphic></p:graphicFrame></p:spTree></p:cSld></p:sld>`
	notes := `<p:notes ` + presNS + `><p:cSld><p:spTree>` + sp("body", ap("Mention the new office", false)) + `</p:spTree></p:cSld></p:notes>`
	rel := func(id, target string) string {
		return `<Relationship Id="` + id + `" Type="x" Target="` + target + `"/>`
	}
	rels := func(inner string) []byte {
		return []byte(`<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` + inner + `</Relationships>`)
	}
	return zipOf(map[string][]byte{
		"[Content_Types].xml":              []byte(`<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/></Types>`),
		"ppt/presentation.xml":             []byte(`<p:presentation ` + presNS + `><p:sldIdLst><p:sldId id="256" r:id="rId7"/><p:sldId id="257" r:id="rId8"/></p:sldIdLst></p:presentation>`),
		"ppt/_rels/presentation.xml.rels":  rels(rel("rId7", "slides/slide2.xml") + rel("rId8", "slides/slide1.xml")),
		"ppt/slides/slide2.xml":            []byte(slideA),
		"ppt/slides/_rels/slide2.xml.rels": rels(rel("rId2", "../media/image1.png")),
		"ppt/slides/slide1.xml":            []byte(slideB),
		"ppt/slides/_rels/slide1.xml.rels": rels(rel("rId3", "../notesSlides/notesSlide1.xml")),
		"ppt/notesSlides/notesSlide1.xml":  []byte(notes),
		"ppt/media/image1.png":             PNG(),
	})
}

// XLSX is a two-sheet workbook written by excelize; with a password it is
// saved encrypted.
func XLSX(password string) []byte {
	f := excelize.NewFile()
	defer f.Close()
	_ = f.SetSheetName("Sheet1", "Prices")
	rows := [][]any{{"Item", "Price", "Stock"}, {"Apple", 1.5, 30}, {"Pear", 2, 12}}
	for i, r := range rows {
		cell, _ := excelize.CoordinatesToCellName(1, i+1)
		_ = f.SetSheetRow("Prices", cell, &r)
	}
	_, _ = f.NewSheet("Notes")
	_ = f.SetCellValue("Notes", "A1", "Checked by ops")
	_, _ = f.NewSheet("Empty")
	var b bytes.Buffer
	opts := excelize.Options{}
	if password != "" {
		opts.Password = password
	}
	if err := f.Write(&b, opts); err != nil {
		panic(fmt.Sprintf("converttest: write xlsx: %v", err))
	}
	return b.Bytes()
}

// PDF is a two-page report written by fpdf: a 24 pt title, 16 pt section
// headings and 11 pt body text; with a password it is encrypted (RC4).
func PDF(password string) []byte {
	f := fpdf.New("P", "pt", "A4", "")
	if password != "" {
		f.SetProtection(fpdf.CnProtectPrint, password, "owner-"+password)
	}
	f.AddPage()
	f.SetFont("Helvetica", "B", 24)
	f.Cell(0, 30, "Quarterly Report")
	f.Ln(40)
	f.SetFont("Helvetica", "", 11)
	f.MultiCell(400, 14, "The import pipeline converts files from many formats into clean Markdown documents. It keeps the reading order of the text layer.", "", "L", false)
	f.Ln(10)
	pdfSection(f, "Results", "Every file became one document, and a bad file failed alone.")
	f.AddPage()
	pdfSection(f, "Next Steps", "Ship the connector for external buckets.")
	var b bytes.Buffer
	if err := f.Output(&b); err != nil {
		panic(fmt.Sprintf("converttest: write pdf: %v", err))
	}
	return b.Bytes()
}

// pdfSection writes a 16 pt section heading and its 11 pt body text.
func pdfSection(f *fpdf.Fpdf, heading, body string) {
	f.SetFont("Helvetica", "B", 16)
	f.Cell(0, 20, heading)
	f.Ln(26)
	f.SetFont("Helvetica", "", 11)
	f.MultiCell(400, 14, body, "", "L", false)
}

// ScannedPDF is a PDF page holding only a picture: no text layer.
func ScannedPDF() []byte {
	f := fpdf.New("P", "pt", "A4", "")
	f.AddPage()
	f.RegisterImageOptionsReader("scan", fpdf.ImageOptions{ImageType: "PNG"}, bytes.NewReader(PNG()))
	f.ImageOptions("scan", 50, 50, 200, 200, false, fpdf.ImageOptions{ImageType: "PNG"}, 0, "")
	var b bytes.Buffer
	if err := f.Output(&b); err != nil {
		panic(fmt.Sprintf("converttest: write pdf: %v", err))
	}
	return b.Bytes()
}
