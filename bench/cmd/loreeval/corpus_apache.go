package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/lorekb/lore/internal/convert"
	lorehtml "github.com/lorekb/lore/internal/convert/html"
)

// apacheSkip are the pages of apache2-doc's English manual that are not
// loaded: indexes and directive lists (links, or every module's summary
// again), the licence and the release notes of older versions.
var apacheSkip = map[string]bool{
	"sitemap.html": true, "license.html": true, "glossary.html": true,
	"new_features_2_0.html": true, "new_features_2_2.html": true,
	"mod/directives.html": true, "mod/quickreference.html": true, "mod/overrides.html": true,
}

var reHTMLLang = regexp.MustCompile(`(?i)<html[^>]*\blang="([^"]+)"`)

// apacheCorpus is apache2-doc's English manual (usr/share/doc/apache2-doc/
// manual/en): every page but the index.html of each folder, those of
// apacheSkip and the pages Debian ships in another language under en/
// (their <html lang> says so), each converted to Markdown by Lore's own
// HTML converter, as an import converts it: the site's chrome (link bar,
// breadcrumb, language bar) stays. Its questions confirm on a corpus
// nothing was tuned on.
func apacheCorpus(ctx context.Context, dir string) ([]file, string, error) {
	root, version, err := fetchDeb(ctx, dir, "apache2-doc")
	if err != nil {
		return nil, "", err
	}
	base := filepath.Join(root, "usr/share/doc/apache2-doc/manual/en")
	var paths []string
	_ = filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".html") {
			paths = append(paths, p)
		}
		return nil
	})
	sort.Strings(paths)
	var files []file
	for _, p := range paths {
		rel, _ := filepath.Rel(base, p)
		rel = filepath.ToSlash(rel)
		if apacheSkip[rel] || filepath.Base(rel) == "index.html" {
			continue
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return nil, "", err
		}
		page := strings.ToValidUTF8(string(raw), "\uFFFD")
		if m := reHTMLLang.FindStringSubmatch(page); m == nil || !strings.EqualFold(m[1], "en") {
			continue
		}
		res, err := lorehtml.Converter{}.Convert(ctx, convert.Input{Name: filepath.Base(rel), Data: []byte(page)})
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", rel, err)
		}
		title, md := strings.TrimSuffix(res.Title, " - Apache HTTP Server Version 2.4"), res.Markdown
		if title == "" {
			title = anyHeading(md, strings.TrimSuffix(filepath.Base(rel), ".html"))
		}
		files = append(files, file{rel: rel, title: title, text: strings.TrimSpace(md)})
	}
	if len(files) == 0 {
		return nil, "", fmt.Errorf("no English pages in %s", version)
	}
	return files, version, nil
}
