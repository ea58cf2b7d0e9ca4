package convert

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
)

// cfbMagic opens an OLE compound file: what Office writes for an encrypted
// DOCX, PPTX or XLSX (the zip is inside, encrypted) and for the old binary
// .doc/.ppt/.xls formats.
var cfbMagic = []byte{0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1}

// encryptedPackage is the UTF-16 stream name of an encrypted OOXML file.
var encryptedPackage = []byte("E\x00n\x00c\x00r\x00y\x00p\x00t\x00e\x00d\x00P\x00a\x00c\x00k\x00a\x00g\x00e\x00")

// Zip is an Office container opened under the limits: the entry count, the
// total unpacked size and every large entry's compression ratio are checked
// before anything is unpacked, and reads stop at the declared sizes.
type Zip struct {
	r     *zip.Reader
	files map[string]*zip.File
	lim   Limits
}

// OpenZip opens an OOXML container, telling an encrypted file, a file that
// is not a zip at all and a zip bomb apart.
func OpenZip(data []byte, lim Limits) (*Zip, error) {
	lim = lim.Or()
	if bytes.HasPrefix(data, cfbMagic) {
		if bytes.Contains(data, encryptedPackage) {
			return nil, ErrEncrypted
		}
		return nil, fmt.Errorf("%w: an old binary Office file (.doc/.ppt/.xls), not OOXML; save it as .docx/.pptx/.xlsx", ErrUnsupported)
	}
	r, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("%w: not a valid Office (zip) container: %v", ErrCorrupt, err)
	}
	if len(r.File) > lim.MaxEntries {
		return nil, fmt.Errorf("%w: %d entries in the container, the limit is %d", ErrTooLarge, len(r.File), lim.MaxEntries)
	}
	z := &Zip{r: r, files: map[string]*zip.File{}, lim: lim}
	var total uint64
	for _, f := range r.File {
		total += f.UncompressedSize64
		if total > uint64(lim.MaxUnpacked) {
			return nil, fmt.Errorf("%w: the container unpacks to more than %d bytes (zip bomb?)", ErrTooLarge, lim.MaxUnpacked)
		}
		if f.UncompressedSize64 > 1<<20 && f.CompressedSize64 > 0 &&
			f.UncompressedSize64/f.CompressedSize64 > uint64(lim.MaxRatio) {
			return nil, fmt.Errorf("%w: entry %s is compressed %d:1 (zip bomb?)", ErrTooLarge, f.Name,
				f.UncompressedSize64/f.CompressedSize64)
		}
		z.files[f.Name] = f
	}
	return z, nil
}

// Has reports whether the container holds name.
func (z *Zip) Has(name string) bool { _, ok := z.files[name]; return ok }

// Read unpacks one entry (at most its declared size, which was checked).
func (z *Zip) Read(name string) ([]byte, error) {
	f, ok := z.files[name]
	if !ok {
		return nil, fmt.Errorf("%w: %s is missing from the container", ErrCorrupt, name)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, name, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, int64(f.UncompressedSize64)+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, name, err)
	}
	return b, nil
}

// Names lists the entries in container order.
func (z *Zip) Names() []string {
	out := make([]string, 0, len(z.r.File))
	for _, f := range z.r.File {
		out = append(out, f.Name)
	}
	return out
}
