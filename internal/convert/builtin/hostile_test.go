package builtin_test

import (
	"archive/zip"
	"bytes"
	"context"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/convert"
	"github.com/lorekb/lore/internal/convert/builtin"
)

const wordNS = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"`

func zipFiles(t testing.TB, files map[string]string) []byte {
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	for name, body := range files {
		f, err := w.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(body))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func docx(t testing.TB, body, rels string) []byte {
	return zipFiles(t, map[string]string{
		"[Content_Types].xml":          `<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`,
		"word/document.xml":            `<?xml version="1.0"?><w:document ` + wordNS + `><w:body>` + body + `</w:body></w:document>`,
		"word/_rels/document.xml.rels": `<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` + rels + `</Relationships>`,
	})
}

func pptx(t testing.TB, slide string) []byte {
	return zipFiles(t, map[string]string{
		"ppt/presentation.xml":            `<p:presentation xmlns:p="p" xmlns:r="r"><p:sldIdLst><p:sldId r:id="rId1"/></p:sldIdLst></p:presentation>`,
		"ppt/_rels/presentation.xml.rels": `<Relationships><Relationship Id="rId1" Target="slides/slide1.xml"/></Relationships>`,
		"ppt/slides/slide1.xml":           `<p:sld xmlns:p="p" xmlns:a="a"><p:cSld><p:spTree><p:sp><p:txBody>` + slide + `</p:txBody></p:sp></p:spTree></p:cSld></p:sld>`,
	})
}

// convertIn converts and reports the time and the bytes allocated.
func convertIn(t *testing.T, name string, data []byte) (*convert.Result, time.Duration, uint64) {
	t.Helper()
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	start := time.Now()
	res, err := builtin.Registry().Convert(context.Background(), convert.Input{Name: name, Data: data})
	d := time.Since(start)
	runtime.ReadMemStats(&m1)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res, d, m1.TotalAlloc - m0.TotalAlloc
}

// word is the text of run i: short and varied, as real text compresses.
func word(i int) string { return strconv.FormatUint(uint64(i)*2654435761%1000000007, 36) + " " }

// TestManyRunsLinear: a paragraph split into 200,000 tiny runs (what some
// editors write) converts in seconds and allocates a small multiple of its
// size; the text used to be built by appending to a string per token.
func TestManyRunsLinear(t *testing.T) {
	const runs = 200000
	var p strings.Builder
	p.WriteString("<w:p>\n")
	for i := 0; i < runs; i++ {
		p.WriteString("  <w:r><w:t>" + word(i) + "</w:t></w:r>\n")
	}
	p.WriteString("</w:p>")
	data := docx(t, p.String(), "")
	res, d, alloc := convertIn(t, "runs.docx", data)
	if !strings.Contains(res.Markdown, word(0)+word(1)) || !strings.Contains(res.Markdown, strings.TrimSpace(word(runs-1))) {
		t.Fatalf("%.200q", res.Markdown)
	}
	xmlSize := uint64(p.Len())
	t.Logf("docx: %d runs (%d KiB of XML) in %v, %d MiB allocated", runs, xmlSize>>10, d, alloc>>20)
	if d > 15*time.Second {
		t.Fatalf("took %v", d)
	}
	if alloc > 100*xmlSize {
		t.Fatalf("allocated %d bytes for %d bytes of XML", alloc, xmlSize)
	}

	var s strings.Builder
	s.WriteString("<a:p>\n")
	for i := 0; i < runs; i++ {
		s.WriteString("  <a:r><a:t>" + word(i) + "</a:t></a:r>\n")
	}
	s.WriteString("</a:p>")
	res, d, alloc = convertIn(t, "runs.pptx", pptx(t, s.String()))
	t.Logf("pptx: %d runs in %v, %d MiB allocated", runs, d, alloc>>20)
	if !strings.Contains(res.Markdown, word(0)+word(1)) || d > 15*time.Second || alloc > 100*uint64(s.Len()) {
		t.Fatalf("%v, %d bytes: %.200q", d, alloc, res.Markdown)
	}
}

// TestActiveContent: whatever the format, scripts stay text and only
// http(s), mailto, relative and anchor links are kept.
func TestActiveContent(t *testing.T) {
	rels := `<Relationship Id="rId1" Type="hyperlink" Target="javascript:alert(1)" TargetMode="External"/>` +
		`<Relationship Id="rId2" Type="hyperlink" Target="data:text/html,&lt;script&gt;alert(1)&lt;/script&gt;" TargetMode="External"/>` +
		`<Relationship Id="rId3" Type="hyperlink" Target="https://example.com/a b)" TargetMode="External"/>`
	body := `<w:p><w:r><w:t>&lt;script&gt;alert(1)&lt;/script&gt;</w:t></w:r></w:p>` +
		`<w:p><w:hyperlink r:id="rId1"><w:r><w:t>js link</w:t></w:r></w:hyperlink> <w:hyperlink r:id="rId2"><w:r><w:t>data link</w:t></w:r></w:hyperlink> <w:hyperlink r:id="rId3"><w:r><w:t>ok link</w:t></w:r></w:hyperlink></w:p>`
	files := map[string][]byte{
		"a.docx": docx(t, body, rels),
		"a.html": []byte(`<p>&lt;script&gt;alert(1)&lt;/script&gt; <a href="javascript:alert(1)">js link</a> <a href="data:text/html,<script>x</script>">data link</a> <a href="https://example.com/ok">ok link</a></p>`),
		"a.md":   []byte("<script>alert(1)</script>\n\n[js link](javascript:alert(1)) [data link](data:text/html,x) [ok link](https://example.com/ok)\n"),
		"a.txt":  []byte("<script>alert(1)</script> [js link](javascript:alert(1))\n"),
		"a.csv":  []byte("a,b\n<script>alert(1)</script>,[js link](javascript:alert(1))\n"),
		"a.pptx": pptx(t, `<a:p><a:r><a:t>&lt;script&gt;alert(1)&lt;/script&gt;</a:t></a:r></a:p>`),
	}
	for name, data := range files {
		res, err := builtin.Registry().Convert(context.Background(), convert.Input{Name: name, Data: data})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		md := res.Markdown
		for _, bad := range []string{"<script", "javascript:", "data:text"} {
			if strings.Contains(md, bad) && !(name == "a.txt" || name == "a.csv") || strings.Contains(md, "<script") {
				t.Errorf("%s: %q survives in %q", name, bad, md)
			}
		}
		if !strings.Contains(md, "&lt;script") {
			t.Errorf("%s: the script text is gone or unescaped: %q", name, md)
		}
		if strings.Contains(md, "ok link") && !strings.Contains(md, "[ok link](https://example.com/") {
			t.Errorf("%s: the safe link is lost: %q", name, md)
		}
		t.Logf("%s: %q", name, md)
	}
}
