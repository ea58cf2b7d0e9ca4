// Package corpus fetches a real documentation corpus from a Debian package
// (nodejs-doc, else docker-doc, else python3-doc), collects its Markdown (or
// HTML as plain text) and splits it into at least a requested number of
// documents on heading and paragraph boundaries. HTMLToMarkdown converts
// one HTML page to Markdown for a benchmark that loads pages whole.
package corpus

import (
	"compress/gzip"
	"context"
	"fmt"
	"html"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Packages are tried in this order.
var Packages = []string{"nodejs-doc", "docker-doc", "python3-doc"}

// File is one source file of the corpus.
type File struct {
	Path  string // relative to the extracted package
	Title string
	Text  string // Markdown (or text recovered from HTML)
}

// Doc is one document to load.
type Doc struct {
	Title   string
	Content string
}

// Source says where the corpus came from.
type Source struct {
	Package string // Debian package name and version, or the directory given
	Kind    string // "markdown" or "html"
	Files   int
	Bytes   int
}

// Fetch downloads the first available package of Packages into dir with
// apt-get download, unpacks it with dpkg -x and collects its documents. If
// apt-get cannot locate a package and we are root, it runs apt-get update
// once and tries again.
func Fetch(ctx context.Context, dir string, logf func(string, ...any)) ([]File, Source, error) {
	var errs []string
	updated := false
	for i := 0; i < len(Packages); i++ {
		pkg := Packages[i]
		files, src, err := fetchOne(ctx, dir, pkg)
		if err == nil {
			return files, src, nil
		}
		errs = append(errs, fmt.Sprintf("%s: %v", pkg, err))
		if !updated && strings.Contains(err.Error(), "Unable to locate") && os.Geteuid() == 0 {
			updated = true
			logf("apt-get cannot find %s; running apt-get update once", pkg)
			uctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
			out, uerr := exec.CommandContext(uctx, "apt-get", "update").CombinedOutput()
			cancel()
			if uerr != nil {
				errs = append(errs, fmt.Sprintf("apt-get update: %v: %s", uerr, lastLine(string(out))))
			} else {
				i-- // retry the same package
			}
		}
	}
	return nil, Source{}, fmt.Errorf("no documentation package could be fetched (%s); pass -corpus-dir with a directory of .md/.html files instead", strings.Join(errs, "; "))
}

func fetchOne(ctx context.Context, dir, pkg string) ([]File, Source, error) {
	root, version, err := Unpack(ctx, dir, pkg)
	if err != nil {
		return nil, Source{}, err
	}
	files, src, err := Collect(root)
	if err != nil {
		return nil, Source{}, err
	}
	src.Package = version
	return files, src, nil
}

// Unpack downloads a Debian package into dir/pkg with apt-get download and
// unpacks it with dpkg -x; it returns the unpacked root and the package's
// name and version.
func Unpack(ctx context.Context, dir, pkg string) (root, version string, err error) {
	pdir := filepath.Join(dir, pkg)
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		return "", "", err
	}
	dctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(dctx, "apt-get", "download", pkg)
	cmd.Dir = pdir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("apt-get download: %v: %s", err, lastLine(string(out)))
	}
	debs, _ := filepath.Glob(filepath.Join(pdir, "*.deb"))
	if len(debs) == 0 {
		return "", "", fmt.Errorf("apt-get download left no .deb in %s", pdir)
	}
	root = filepath.Join(pdir, "root")
	if out, err := exec.CommandContext(dctx, "dpkg", "-x", debs[0], root).CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("dpkg -x: %v: %s", err, lastLine(string(out)))
	}
	return root, strings.TrimSuffix(filepath.Base(debs[0]), ".deb"), nil
}

// Collect reads the Markdown files under root (.md, .markdown, also
// gzipped); when there are none, the HTML files converted to text.
func Collect(root string) ([]File, Source, error) {
	var md, htm []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n := strings.ToLower(strings.TrimSuffix(d.Name(), ".gz"))
		switch {
		case strings.HasSuffix(n, ".md") || strings.HasSuffix(n, ".markdown"):
			md = append(md, p)
		case strings.HasSuffix(n, ".html") || strings.HasSuffix(n, ".htm"):
			htm = append(htm, p)
		}
		return nil
	})
	if err != nil {
		return nil, Source{}, err
	}
	kind, paths := "markdown", md
	if len(md) == 0 {
		kind, paths = "html", htm
	}
	sort.Strings(paths)
	src := Source{Package: root, Kind: kind}
	var files []File
	for _, p := range paths {
		raw, err := readMaybeGz(p)
		if err != nil {
			return nil, Source{}, fmt.Errorf("read %s: %w", p, err)
		}
		text := raw
		if kind == "html" {
			text = htmlToText(raw)
		}
		text = strings.ToValidUTF8(text, "\uFFFD")
		if strings.TrimSpace(text) == "" {
			continue
		}
		rel, _ := filepath.Rel(root, p)
		files = append(files, File{Path: rel, Title: titleOf(text, p), Text: text})
		src.Files++
		src.Bytes += len(text)
	}
	if len(files) == 0 {
		return nil, Source{}, fmt.Errorf("no .md or .html files under %s", root)
	}
	return files, src, nil
}

func readMaybeGz(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(p, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return "", err
		}
		defer gz.Close()
		r = gz
	}
	b, err := io.ReadAll(io.LimitReader(r, 64<<20))
	return string(b), err
}

var (
	reDropBlocks = regexp.MustCompile(`(?is)<(script|style|head|nav)\b.*?</(script|style|head|nav)>`)
	reBlockTags  = regexp.MustCompile(`(?i)</?(p|div|h[1-6]|li|ul|ol|pre|tr|table|section|article|br|dt|dd|blockquote)\b[^>]*>`)
	reHeading    = regexp.MustCompile(`(?is)<h([1-6])\b[^>]*>(.*?)</h[1-6]>`)
	reTags       = regexp.MustCompile(`(?s)<[^>]*>`)
	reBlankRuns  = regexp.MustCompile(`\n[ \t]*\n(\s*\n)+`)
	reSpaces     = regexp.MustCompile(`[ \t]+`)
)

// htmlToText strips tags, keeping headings as Markdown headings and block
// elements as paragraph breaks, so the splitter still sees structure.
func htmlToText(s string) string {
	s = reDropBlocks.ReplaceAllString(s, "\n")
	s = reHeading.ReplaceAllStringFunc(s, func(h string) string {
		m := reHeading.FindStringSubmatch(h)
		level := int(m[1][0] - '0')
		title := strings.TrimSpace(reSpaces.ReplaceAllString(strings.ReplaceAll(reTags.ReplaceAllString(m[2], ""), "\n", " "), " "))
		return "\n\n" + strings.Repeat("#", level) + " " + title + "\n\n"
	})
	s = reBlockTags.ReplaceAllString(s, "\n\n")
	s = reTags.ReplaceAllString(s, "")
	s = html.UnescapeString(s)
	s = reSpaces.ReplaceAllString(s, " ")
	s = reBlankRuns.ReplaceAllString(s, "\n\n")
	return strings.TrimSpace(s)
}

func titleOf(text, path string) string {
	for _, line := range strings.SplitN(text, "\n", 60) {
		if t := strings.TrimSpace(strings.TrimLeft(line, "#")); strings.HasPrefix(line, "#") && t != "" {
			return clip(t, 150)
		}
	}
	base := filepath.Base(path)
	for _, ext := range []string{".gz", ".md", ".markdown", ".html", ".htm"} {
		base = strings.TrimSuffix(base, ext)
	}
	return base
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
