package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestLayoutDocMatchesTree keeps the package map of docs/layout.md honest:
// every top-level directory that holds Go code has a line in its layout
// block, every package directly under internal/ a row in its table, and
// everything the page names exists.
func TestLayoutDocMatchesTree(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("docs", "layout.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	block, _, ok := strings.Cut(doc, "\n## internal/")
	if !ok {
		t.Fatal(`docs/layout.md has no "## internal/" section`)
	}
	// The layout block names one top-level entry per line, at its start.
	top := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([a-z][a-z0-9_.-]*)/ `).FindAllStringSubmatch(block, -1) {
		top[m[1]] = true
	}
	internal := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `internal/([a-z0-9]+)` \\|").FindAllStringSubmatch(doc, -1) {
		internal[m[1]] = true
	}

	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && e.Name() != "internal" && holdsGo(t, e.Name()) && !top[e.Name()] {
			t.Errorf("docs/layout.md: the layout block has no line for %s/", e.Name())
		}
	}
	for name := range top {
		if _, err := os.Stat(name); err != nil {
			t.Errorf("docs/layout.md names %s/, which does not exist", name)
		}
	}
	pkgs, err := os.ReadDir("internal")
	if err != nil {
		t.Fatal(err)
	}
	var have []string
	for _, e := range pkgs {
		if e.IsDir() && holdsGo(t, filepath.Join("internal", e.Name())) {
			have = append(have, e.Name())
			if !internal[e.Name()] {
				t.Errorf("docs/layout.md: the internal/ table has no row for internal/%s", e.Name())
			}
		}
	}
	for name := range internal {
		if !slices.Contains(have, name) {
			t.Errorf("docs/layout.md has a row for internal/%s, which is no package", name)
		}
	}
}

// holdsGo reports whether dir or a directory below it has a .go file.
func holdsGo(t *testing.T, dir string) bool {
	t.Helper()
	found := false
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			found = true
			return fs.SkipAll
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}
