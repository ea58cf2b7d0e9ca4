package convert

import (
	"bytes"
	"encoding/xml"
	"mime"
	"path"
	"strconv"
	"strings"
)

// Rels reads an OOXML relationships part ("word/_rels/document.xml.rels")
// into id → target, with targets resolved against the part's folder
// ("media/image1.png" from word/ becomes "word/media/image1.png"); external
// targets (hyperlinks) are kept as they are.
func (z *Zip) Rels(relsPath string) map[string]string {
	out := map[string]string{}
	data, err := z.Read(relsPath)
	if err != nil {
		return out
	}
	var doc struct {
		Rels []struct {
			ID         string `xml:"Id,attr"`
			Target     string `xml:"Target,attr"`
			TargetMode string `xml:"TargetMode,attr"`
		} `xml:"Relationship"`
	}
	if xml.Unmarshal(data, &doc) != nil {
		return out
	}
	// "word/_rels/document.xml.rels" describes "word/document.xml".
	base := path.Dir(path.Dir(relsPath))
	for _, r := range doc.Rels {
		t := r.Target
		if r.TargetMode != "External" {
			if strings.HasPrefix(t, "/") {
				t = strings.TrimPrefix(t, "/")
			} else {
				t = path.Join(base, t)
			}
		}
		out[r.ID] = t
	}
	return out
}

// CoreTitle is dc:title of docProps/core.xml, or "".
func (z *Zip) CoreTitle() string {
	data, err := z.Read("docProps/core.xml")
	if err != nil {
		return ""
	}
	d := xml.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := d.Token()
		if err != nil {
			return ""
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "title" {
			var s string
			if d.DecodeElement(&s, &se) == nil {
				return strings.TrimSpace(s)
			}
			return ""
		}
	}
}

// ImageCollector gathers the pictures a document embeds, naming each once
// however often it is used.
type ImageCollector struct {
	z      *Zip
	names  map[string]string // zip path → image name
	Images []Image
}

// NewImageCollector collects images from z.
func NewImageCollector(z *Zip) *ImageCollector {
	return &ImageCollector{z: z, names: map[string]string{}}
}

// Ref returns the Markdown link target of the picture at the zip path, or
// "" when it cannot be read.
func (c *ImageCollector) Ref(zipPath string) string {
	if n, ok := c.names[zipPath]; ok {
		return ImageRef(n)
	}
	data, err := c.z.Read(zipPath)
	if err != nil || len(data) == 0 {
		return ""
	}
	ext := strings.ToLower(path.Ext(zipPath))
	ct := mime.TypeByExtension(ext)
	if ct == "" {
		ct = "application/octet-stream"
	}
	name := "image" + strconv.Itoa(len(c.Images)+1) + safeExt(ext)
	c.names[zipPath] = name
	c.Images = append(c.Images, Image{Name: name, ContentType: ct, Data: data})
	return ImageRef(name)
}

func safeExt(ext string) string {
	for _, r := range strings.TrimPrefix(ext, ".") {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return ".bin"
		}
	}
	if len(ext) < 2 || len(ext) > 6 {
		return ".bin"
	}
	return ext
}
