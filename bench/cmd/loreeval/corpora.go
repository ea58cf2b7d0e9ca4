package main

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lorekb/lore/bench/internal/corpus"
	"github.com/lorekb/lore/bench/internal/env"
)

// file is one corpus file loaded as one document; rel names it in the
// questions ("api/fs.md", "man1/ls.1").
type file struct {
	rel, title, text string
}

// fetchDeb downloads a Debian package into dir and unpacks it; apt-get
// update runs once if apt cannot find it (as root).
func fetchDeb(ctx context.Context, dir, pkg string) (root, version string, err error) {
	pdir := filepath.Join(dir, pkg)
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		return "", "", err
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if _, err := env.Run(dctx, pdir, "apt-get", "download", pkg); err != nil {
		if os.Geteuid() != 0 {
			return "", "", err
		}
		if _, uerr := env.Run(dctx, pdir, "apt-get", "update"); uerr != nil {
			return "", "", fmt.Errorf("%v; apt-get update: %v", err, uerr)
		}
		if _, err := env.Run(dctx, pdir, "apt-get", "download", pkg); err != nil {
			return "", "", err
		}
	}
	debs, _ := filepath.Glob(filepath.Join(pdir, "*.deb"))
	if len(debs) == 0 {
		return "", "", fmt.Errorf("apt-get download %s left no .deb", pkg)
	}
	root = filepath.Join(pdir, "root")
	if _, err := env.Run(dctx, pdir, "dpkg", "-x", debs[0], root); err != nil {
		return "", "", err
	}
	return root, strings.TrimSuffix(filepath.Base(debs[0]), ".deb"), nil
}

// englishCorpus is nodejs-doc's API reference: one document per Markdown
// file.
func englishCorpus(ctx context.Context, dir string) ([]file, string, error) {
	root, version, err := fetchDeb(ctx, dir, "nodejs-doc")
	if err != nil {
		return nil, "", err
	}
	paths, _ := filepath.Glob(filepath.Join(root, "usr/share/doc/nodejs/api/*.md.gz"))
	sort.Strings(paths)
	var files []file
	for _, p := range paths {
		text, err := gunzip(p)
		if err != nil {
			return nil, "", err
		}
		rel := "api/" + strings.TrimSuffix(filepath.Base(p), ".gz")
		files = append(files, file{rel: rel, title: firstHeading(text, rel), text: text})
	}
	if len(files) == 0 {
		return nil, "", fmt.Errorf("no api/*.md.gz in %s", version)
	}
	return files, version, nil
}

// sqliteSkip are the pages of sqlite3-doc's top directory that are not
// loaded: generated indexes and cross-references (lists of links), the
// release history and news, the machine-extracted requirements list (every
// other page's sentences again) and the C API reference as one 0.5 MB page
// (its per-function pages under c3ref/ are not loaded either).
var sqliteSkip = map[string]bool{
	"requirements.html": true, "capi3ref.html": true, "changes.html": true, "chronology.html": true,
	"news.html": true, "oldnews.html": true, "keyword_index.html": true, "sitemap.html": true,
	"doclist.html": true, "docs.html": true, "doc_backlink_crossref.html": true,
	"doc_keyword_crossref.html": true, "doc_pagelink_crossref.html": true, "doc_target_crossref.html": true,
}

var (
	reRefresh  = regexp.MustCompile(`(?i)<meta[^>]+http-equiv=["']?refresh`)
	reModified = regexp.MustCompile(`(?m)^This page last modified on .*$`)
)

// sqliteCorpus is sqlite3-doc's documentation: every HTML page of its top
// directory (usr/share/doc/sqlite3/*.html, in name order) but those of
// sqliteSkip, redirects, pages with under 200 characters of text and
// byte-for-byte copies of an earlier page (fileformat2.html), each converted
// to Markdown (corpus.HTMLToMarkdown) without its "last modified" footer.
func sqliteCorpus(ctx context.Context, dir string) ([]file, string, error) {
	root, version, err := fetchDeb(ctx, dir, "sqlite3-doc")
	if err != nil {
		return nil, "", err
	}
	paths, _ := filepath.Glob(filepath.Join(root, "usr/share/doc/sqlite3/*.html"))
	sort.Strings(paths)
	var files []file
	seen := map[string]bool{}
	for _, p := range paths {
		base := filepath.Base(p)
		raw, err := os.ReadFile(p)
		if err != nil {
			return nil, "", err
		}
		page := strings.ToValidUTF8(string(raw), "\uFFFD")
		if sqliteSkip[base] || seen[page] || reRefresh.MatchString(page) {
			continue
		}
		seen[page] = true
		title, md := corpus.HTMLToMarkdown(page)
		md = strings.TrimSpace(reModified.ReplaceAllString(md, ""))
		if title == "No Title" { // mingw.html
			title, md = "", strings.TrimSpace(strings.TrimPrefix(md, "# No Title"))
		}
		if title == "" {
			title = anyHeading(md, strings.TrimSuffix(base, ".html"))
		}
		if len(md)-len(title) < 200 {
			continue
		}
		files = append(files, file{rel: base, title: title, text: md})
	}
	if len(files) == 0 {
		return nil, "", fmt.Errorf("no HTML pages in %s", version)
	}
	return files, version, nil
}

// chineseCorpus is manpages-zh's Simplified Chinese pages, rendered by
// mandoc (installed with apt-get when absent) as text and turned into
// Markdown: the unindented lines of a man page are its section headings.
func chineseCorpus(ctx context.Context, dir string, logf func(string, ...any)) ([]file, string, error) {
	if _, err := exec.LookPath("mandoc"); err != nil {
		logf("mandoc not found: apt-get install -y mandoc")
		ictx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		_, err := env.Run(ictx, "", "apt-get", "install", "-y", "mandoc")
		cancel()
		if err != nil {
			return nil, "", fmt.Errorf("install mandoc: %w", err)
		}
	}
	root, version, err := fetchDeb(ctx, dir, "manpages-zh")
	if err != nil {
		return nil, "", err
	}
	paths, _ := filepath.Glob(filepath.Join(root, "usr/share/man/zh_CN/man*/*"))
	sort.Strings(paths)
	var files []file
	for _, p := range paths {
		if fi, err := os.Lstat(p); err != nil || !fi.Mode().IsRegular() {
			continue // links (.so pages) repeat another page
		}
		out, err := exec.CommandContext(ctx, "mandoc", "-T", "utf8", p).Output()
		if err != nil || len(out) == 0 {
			continue
		}
		rel := filepath.Base(filepath.Dir(p)) + "/" + strings.TrimSuffix(filepath.Base(p), ".gz")
		md, title := manToMarkdown(string(out), rel)
		if strings.TrimSpace(md) == "" {
			continue
		}
		files = append(files, file{rel: rel, title: title, text: md})
	}
	if len(files) == 0 {
		return nil, "", fmt.Errorf("no man pages rendered from %s", version)
	}
	return files, version, nil
}

var overstrike = regexp.MustCompile(".\b")

// reNameHeading is a man page's NAME section heading as the Chinese pages
// write it: NAME, 名称, 名字 or 命令名, alone or together ("NAME(名称)",
// "NAME 名称", "NAME[名字]").
var reNameHeading = regexp.MustCompile(`^(?:NAME|名称|名字|命令名)(?:\s*[(（\[]?\s*(?:名称|名字|命令名)\s*[)）\]]?)?$`)

// manToMarkdown turns mandoc's text rendering into Markdown: the header and
// footer lines go, unindented lines become "## " headings, the rest keeps
// its lines. The title is the page name with its NAME line.
func manToMarkdown(text, rel string) (string, string) {
	text = overstrike.ReplaceAllString(text, "")
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) > 2 {
		lines = lines[1 : len(lines)-1]
	}
	var b strings.Builder
	title, inName := "", false
	for _, l := range lines {
		l = strings.TrimRight(l, " ")
		switch {
		case l == "":
			b.WriteString("\n")
		case l[0] != ' ':
			fmt.Fprintf(&b, "\n## %s\n\n", l)
			inName = title == "" && reNameHeading.MatchString(l)
		default:
			if inName && title == "" {
				title = strings.TrimSpace(l)
			}
			b.WriteString(strings.TrimSpace(l) + "\n")
		}
	}
	name := strings.TrimSuffix(filepath.Base(rel), filepath.Ext(rel))
	if title == "" {
		title = name
	} else if !strings.HasPrefix(title, name) {
		title = name + ": " + title
	}
	if utf8.RuneCountInString(title) > 150 {
		title = string([]rune(title)[:150])
	}
	return b.String(), title
}

func gunzip(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return "", err
	}
	b, err := io.ReadAll(zr)
	return strings.ToValidUTF8(string(b), "\uFFFD"), err
}

// anyHeading is the text of the first heading of any level, else rel.
func anyHeading(text, rel string) string {
	for _, l := range strings.Split(text, "\n") {
		if t := strings.TrimSpace(strings.TrimLeft(l, "#")); strings.HasPrefix(l, "#") && t != "" {
			return t
		}
	}
	return rel
}

func firstHeading(text, rel string) string {
	for _, l := range strings.SplitN(text, "\n", 40) {
		if strings.HasPrefix(l, "# ") {
			return strings.TrimSpace(l[2:])
		}
	}
	return rel
}
