package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"html"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/lorekb/lore/internal/analyze"
)

// prep walks the unpacked packages under root and writes their English text
// as analyzer terms, one paragraph a line, so that the word vectors are
// trained on exactly the terms Lore's analyzer gives at embedding time.
func prep(root, out string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	var paths []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		if kindOf(p) != "" {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(paths) // a fixed order: the same packages give the same corpus
	words, files := 0, 0
	for _, p := range paths {
		text, err := readText(p)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		for _, para := range strings.Split(text, "\n\n") {
			n := 0
			analyze.Each(para, func(t string) {
				if n > 0 {
					w.WriteByte(' ')
				}
				w.WriteString(t)
				n++
			})
			if n > 0 {
				w.WriteByte('\n')
				words += n
			}
		}
		files++
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "prep: %d files, %d terms\n", files, words)
	return nil
}

// kindOf says how a file's text is read, or "" to skip it: English man
// pages, HTML outside the translations, reStructuredText sources and POD.
func kindOf(p string) string {
	slash := filepath.ToSlash(p)
	base := strings.TrimSuffix(filepath.Base(p), ".gz")
	switch {
	case regexp.MustCompile(`/usr/share/man/man[1-9]/`).MatchString(slash):
		return "man"
	case strings.Contains(slash, "/debian-handbook/html/") && !strings.Contains(slash, "/en-US/"):
		return "" // translations
	case strings.Contains(slash, "/python3.11/html/") && !strings.Contains(slash, "/_sources/"):
		return "" // the same text as the reST sources
	case strings.HasSuffix(base, ".html"):
		return "html"
	case strings.HasSuffix(base, ".txt") && strings.Contains(slash, "/_sources/"):
		return "text"
	case strings.HasSuffix(base, ".pod"):
		return "pod"
	}
	return ""
}

var (
	roffEscape = regexp.MustCompile(`\\(f[BIRPC0-9]|f\[[A-Z]*\]|s[-+]?[0-9]|\([a-zA-Z-]{2}|\[[^\]]*\]|\*\(?[a-zA-Z]{1,2}|[&|^%e-])`)
	roffKeep   = regexp.MustCompile(`^[.'](SH|SS|TP|IP|B|I|BR|IR|RB|RI|BI|IB|SM|SB|Nm|Nd|Sh|Ss|It|Fn|Fa|Ar|Fl|Cm|Xr)\b\s*`)
	htmlDrop   = regexp.MustCompile(`(?is)<(script|style)[^>]*>.*?</(script|style)>`)
	htmlBlock  = regexp.MustCompile(`(?i)</?(p|div|h[1-6]|li|dt|dd|pre|tr|table|section|br)\b[^>]*>`)
	htmlTag    = regexp.MustCompile(`<[^>]*>`)
)

func readText(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(p, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return "", nil // not gzip after all: skip
		}
		r = gz
	}
	b, err := io.ReadAll(io.LimitReader(r, 32<<20))
	if err != nil {
		return "", nil
	}
	switch kindOf(p) {
	case "man":
		return roffText(b), nil
	case "html":
		s := htmlDrop.ReplaceAllString(string(b), " ")
		s = htmlBlock.ReplaceAllString(s, "\n\n")
		return html.UnescapeString(htmlTag.ReplaceAllString(s, " ")), nil
	case "pod":
		var out strings.Builder
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "=") {
				if h, ok := strings.CutPrefix(line, "=head"); ok && len(h) > 1 {
					out.WriteString("\n\n" + h[1:] + "\n\n")
				}
				continue
			}
			out.WriteString(line + "\n")
		}
		return out.String(), nil
	}
	return string(b), nil
}

// roffText keeps a man page's words: macro lines that carry text keep their
// arguments, other requests go, and escapes are removed. An .SH or a blank
// line ends a paragraph.
func roffText(b []byte) string {
	var out strings.Builder
	for _, line := range bytes.Split(b, []byte("\n")) {
		s := string(line)
		if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
			m := roffKeep.FindStringSubmatch(s)
			if m == nil {
				if strings.HasPrefix(s, ".PP") || strings.HasPrefix(s, ".LP") || strings.HasPrefix(s, ".P ") || s == ".P" || strings.HasPrefix(s, ".Pp") {
					out.WriteString("\n\n")
				}
				continue
			}
			if m[1] == "SH" || m[1] == "SS" || m[1] == "Sh" || m[1] == "Ss" {
				out.WriteString("\n\n")
			}
			s = strings.ReplaceAll(s[len(m[0]):], `"`, "")
		}
		if strings.TrimSpace(s) == "" {
			out.WriteString("\n\n")
			continue
		}
		out.WriteString(roffEscape.ReplaceAllString(s, " "))
		out.WriteByte('\n')
	}
	return out.String()
}
