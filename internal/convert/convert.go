// Package convert turns the files teams already have (Markdown, HTML, Word,
// PowerPoint, spreadsheets, PDF) into clean Markdown documents. Every format
// and every external document processor sits behind one Converter interface
// so the import activity does not care which one ran, and one conformance
// suite (package converttest) holds them all to the same behaviour: text in
// reading order, headings as headings, tables as Markdown tables, images as
// separate objects, and a named error for a file that cannot be converted.
package convert

import (
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// Named failures. A converter wraps one of these so the import can tell the
// admin why one file failed (and Temporal does not retry what cannot work).
var (
	// ErrUnsupported: no converter reads this type.
	ErrUnsupported = errors.New("unsupported file type")
	// ErrEncrypted: the file is password-protected.
	ErrEncrypted = errors.New("the file is encrypted or password-protected")
	// ErrCorrupt: the file is damaged or is not what its extension says.
	ErrCorrupt = errors.New("the file is corrupt or not in the format its extension says")
	// ErrTooLarge: the file, or what it unpacks to, is over the limit (this
	// includes zip bombs).
	ErrTooLarge = errors.New("the file is over the size limit")
	// ErrTooSlow: the conversion ran past its time budget (Limits.Timeout).
	ErrTooSlow = errors.New("the file took too long to convert")
)

// Permanent reports whether err is one of the named failures above, which a
// retry cannot fix.
func Permanent(err error) bool {
	return errors.Is(err, ErrUnsupported) || errors.Is(err, ErrEncrypted) ||
		errors.Is(err, ErrCorrupt) || errors.Is(err, ErrTooLarge) || errors.Is(err, ErrTooSlow)
}

// Limits bound what one conversion may read and unpack, so a hostile file
// costs bounded memory and time.
type Limits struct {
	// MaxBytes is the largest input accepted.
	MaxBytes int64
	// MaxUnpacked is the most a container (DOCX, PPTX, XLSX are zip files)
	// may unpack to, all entries together.
	MaxUnpacked int64
	// MaxRatio is the highest compression ratio of one zip entry larger than
	// 1 MiB: ordinary documents stay far below it, zip bombs far above.
	MaxRatio int64
	// MaxEntries is the most entries a container may have.
	MaxEntries int
	// Timeout is the time one conversion may take: past it the converter's
	// context is done and Run fails the file with ErrTooSlow.
	Timeout time.Duration
}

// DefaultLimits are used when a converter is given zero limits. Three
// minutes is many times what the largest accepted file of any built-in
// format takes on a loaded worker.
var DefaultLimits = Limits{MaxBytes: 100 << 20, MaxUnpacked: 512 << 20, MaxRatio: 200, MaxEntries: 20000,
	Timeout: 3 * time.Minute}

// Or fills zero fields from DefaultLimits.
func (l Limits) Or() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultLimits.MaxBytes
	}
	if l.MaxUnpacked <= 0 {
		l.MaxUnpacked = DefaultLimits.MaxUnpacked
	}
	if l.MaxRatio <= 0 {
		l.MaxRatio = DefaultLimits.MaxRatio
	}
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultLimits.MaxEntries
	}
	if l.Timeout <= 0 {
		l.Timeout = DefaultLimits.Timeout
	}
	return l
}

// Input is one file to convert. Files are bounded by Limits.MaxBytes, so the
// whole content is handed over at once.
type Input struct {
	// Name is the file's name; its extension picks the format and it is the
	// title of last resort.
	Name   string
	Data   []byte
	Limits Limits
	// Options are processor-specific switches (ocr_enabled, extract_images,
	// extract_tables) passed through by external processors.
	Options map[string]any
}

// Ext is the lower-case extension of the input's name, without the dot.
func (in Input) Ext() string { return Ext(in.Name) }

// Ext is the lower-case extension of a file name, without the dot.
func Ext(name string) string { return strings.ToLower(strings.TrimPrefix(path.Ext(name), ".")) }

// Image is a picture found in a document. The Markdown refers to it as
// ImageRef(Name) until the importer stores it and rewrites the link.
type Image struct {
	Name        string
	ContentType string
	Data        []byte
}

// ImageScheme prefixes the temporary link target of an extracted image.
const ImageScheme = "lore-image:"

// ImageRef is the temporary Markdown link target of an extracted image.
func ImageRef(name string) string { return ImageScheme + name }

var (
	imageRefRe  = regexp.MustCompile(`lore-image:([A-Za-z0-9._-]+)`)
	deadImageRe = regexp.MustCompile(`!\[[^\]]*\]\(lore-image:[^)]*\)`)
)

// RewriteImages replaces every temporary image link with its stored URL;
// links to images that were not stored are removed with their Markdown.
func RewriteImages(md string, urls map[string]string) string {
	if !strings.Contains(md, ImageScheme) {
		return md // both patterns start with the scheme: nothing to rewrite
	}
	md = imageRefRe.ReplaceAllStringFunc(md, func(m string) string {
		if u, ok := urls[strings.TrimPrefix(m, ImageScheme)]; ok {
			return u
		}
		return m
	})
	// An image whose object was not stored would be a dead link: drop it.
	return deadImageRe.ReplaceAllString(md, "")
}

// Result is a converted document.
type Result struct {
	Markdown string
	// Title is the document's own title (metadata or first heading), empty
	// when it has none; see Title.
	Title  string
	Images []Image
	// Meta is what the converter knows about the source (pages, sheets,
	// processor name), stored as the document's parse_meta.
	Meta map[string]any
}

// Converter converts files of the formats it lists.
type Converter interface {
	// Name identifies the converter in parse_meta and errors.
	Name() string
	// Formats are the lower-case extensions it reads.
	Formats() []string
	// Convert converts one file. Failures it can name wrap ErrUnsupported,
	// ErrEncrypted, ErrCorrupt or ErrTooLarge; anything else (a remote
	// processor that is down) is worth retrying.
	Convert(ctx context.Context, in Input) (*Result, error)
}

// Registry picks a converter by extension.
type Registry struct {
	byExt map[string]Converter
}

// NewRegistry registers converters; a later one wins an extension both read.
func NewRegistry(cs ...Converter) *Registry {
	r := &Registry{byExt: map[string]Converter{}}
	for _, c := range cs {
		for _, f := range c.Formats() {
			r.byExt[f] = c
		}
	}
	return r
}

// Formats lists every extension the registry reads, sorted.
func (r *Registry) Formats() []string {
	out := make([]string, 0, len(r.byExt))
	for f := range r.byExt {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

// Supports reports whether some converter reads the file's extension.
func (r *Registry) Supports(name string) bool { _, ok := r.byExt[Ext(name)]; return ok }

// Convert converts in with the converter of its extension, enforcing the
// size limit, turning a converter panic on a malformed file into ErrCorrupt,
// and filling the title from the first heading or the file name.
func (r *Registry) Convert(ctx context.Context, in Input) (*Result, error) {
	c, ok := r.byExt[in.Ext()]
	if !ok {
		if in.Ext() == "" {
			return nil, fmt.Errorf("%w: %q has no extension", ErrUnsupported, in.Name)
		}
		return nil, fmt.Errorf("%w: .%s", ErrUnsupported, in.Ext())
	}
	return Run(ctx, c, in)
}

// errBudget is the cause of a conversion's context past Limits.Timeout.
var errBudget = errors.New("conversion time budget spent")

// Run converts in with c under the same guarantees as Registry.Convert,
// within in.Limits.Timeout: the converter's context ends then (or when ctx
// does), and Run returns at once even if the converter has not noticed yet,
// so a stuck conversion never holds its caller. The Markdown is sanitized
// (Sanitize) whatever the converter.
func Run(ctx context.Context, c Converter, in Input) (*Result, error) {
	in.Limits = in.Limits.Or()
	if int64(len(in.Data)) > in.Limits.MaxBytes {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, len(in.Data), in.Limits.MaxBytes)
	}
	if len(in.Data) == 0 {
		return nil, fmt.Errorf("%w: the file is empty", ErrCorrupt)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeoutCause(ctx, in.Limits.Timeout, errBudget)
	defer cancel()
	type outcome struct {
		res *Result
		err error
	}
	done := make(chan outcome, 1) // buffered: an abandoned conversion does not block
	go func() {
		var o outcome
		defer func() {
			if p := recover(); p != nil {
				o = outcome{nil, fmt.Errorf("%w: %s could not read it (%v)", ErrCorrupt, c.Name(), p)}
			}
			done <- o
		}()
		o.res, o.err = c.Convert(cctx, in)
		if o.err == nil && o.res == nil {
			o.err = fmt.Errorf("%w: %s returned nothing", ErrCorrupt, c.Name())
		}
		if o.err == nil {
			o.res.Markdown = Clean(Sanitize(o.res.Markdown))
		}
	}()
	var o outcome
	select {
	case o = <-done:
	case <-cctx.Done():
		o.err = cctx.Err()
	}
	if o.err != nil {
		if cctx.Err() != nil && errors.Is(context.Cause(cctx), errBudget) {
			return nil, fmt.Errorf("%w: %s took more than %v", ErrTooSlow, c.Name(), in.Limits.Timeout)
		}
		return nil, o.err
	}
	res := o.res
	if res.Title == "" {
		res.Title = FirstHeading(res.Markdown)
	}
	res.Title = strings.TrimSpace(res.Title)
	if res.Title == "" {
		res.Title = strings.TrimSuffix(path.Base(in.Name), path.Ext(in.Name))
	}
	if utf8.RuneCountInString(res.Title) > 200 {
		res.Title = string([]rune(res.Title)[:200])
	}
	if res.Meta == nil {
		res.Meta = map[string]any{}
	}
	res.Meta["converter"] = c.Name()
	return res, nil
}

var (
	headingRe = regexp.MustCompile(`(?m)^#{1,6}[ \t]+(.+?)[ \t#]*$`)
)

// FirstHeading is the text of the first ATX heading of the Markdown, with
// inline emphasis removed, or "".
func FirstHeading(md string) string {
	m := headingRe.FindStringSubmatch(md)
	if m == nil {
		return ""
	}
	return strings.TrimSpace(strings.NewReplacer("**", "", "__", "", "`", "").Replace(m[1]))
}

// Clean normalises line ends, strips trailing spaces and tabs from every
// line and collapses runs of blank lines to one, so every converter's output
// looks alike. It is one pass over the text (two regexps were a sixth of
// lore's CPU in a DOCX import).
func Clean(md string) string {
	if strings.IndexByte(md, '\r') >= 0 {
		md = strings.ReplaceAll(md, "\r\n", "\n")
		md = strings.ReplaceAll(md, "\r", "\n")
	}
	md = strings.TrimPrefix(md, "\ufeff")
	var b strings.Builder
	b.Grow(len(md) + 1)
	newlines := 0 // line ends written since the last text
	for {
		i := strings.IndexByte(md, '\n')
		if i < 0 {
			break
		}
		if line := strings.TrimRight(md[:i], " \t"); line != "" {
			b.WriteString(line)
			newlines = 0
		}
		if newlines < 2 {
			b.WriteByte('\n')
		}
		newlines++
		md = md[i+1:]
	}
	b.WriteString(md) // the last line: TrimSpace below trims its end
	return strings.TrimSpace(b.String()) + "\n"
}

// EscapeCell makes text safe inside a Markdown table cell.
func EscapeCell(s string) string {
	s = strings.TrimSpace(s)
	s = strings.ReplaceAll(s, "\r\n", " ")
	s = strings.ReplaceAll(s, "\n", " ")
	return strings.ReplaceAll(s, "|", `\|`)
}

// Table renders rows as a Markdown table, the first row as its header. Rows
// are padded to the widest; an empty input renders nothing.
func Table(rows [][]string) string {
	width := 0
	for _, r := range rows {
		width = max(width, len(r))
	}
	if len(rows) == 0 || width == 0 {
		return ""
	}
	var b strings.Builder
	line := func(r []string) {
		b.WriteString("|")
		for i := 0; i < width; i++ {
			cell := ""
			if i < len(r) {
				cell = EscapeCell(r[i])
			}
			b.WriteString(" " + cell + " |")
		}
		b.WriteString("\n")
	}
	line(rows[0])
	b.WriteString("|" + strings.Repeat(" --- |", width) + "\n")
	for _, r := range rows[1:] {
		line(r)
	}
	return b.String()
}
