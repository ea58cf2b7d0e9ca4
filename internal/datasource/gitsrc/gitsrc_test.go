package gitsrc_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	. "github.com/lorekb/lore/internal/datasource/gitsrc"
	"github.com/lorekb/lore/internal/testenv"
)

// TestCloneFetchAndList clones a real repository (git http-backend), lists
// the files matching the globs with their blob ids, reads a blob, and sees
// a new commit after a fetch.
func TestCloneFetchAndList(t *testing.T) {
	g, err := testenv.StartGitServer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	files := map[string][]byte{"README.md": []byte("# r\n")}
	for i := range 1000 {
		files[fmt.Sprintf("docs/d%d/p%d.md", i%10, i)] = []byte(fmt.Sprintf("# Page %d\n", i))
	}
	if err := g.Write(files); err != nil {
		t.Fatal(err)
	}
	if err := g.Commit("one"); err != nil {
		t.Fatal(err)
	}
	cfg := Config{URL: g.URL(), Paths: []string{"docs/**/*.md"}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cl := &Client{Transport: http.DefaultTransport, CacheDir: t.TempDir()}
	ctx := context.Background()
	if cfg.Branch, err = cl.DefaultBranch(ctx, cfg); err != nil || cfg.Branch != "main" {
		t.Fatalf("branch %q: %v", cfg.Branch, err)
	}
	repo, err := cl.Open(ctx, 1, cfg, true, "")
	if err != nil {
		t.Fatal(err)
	}
	head, _ := repo.Head()
	list, err := repo.Files(head, cfg.Matcher(), 5000)
	if err != nil || len(list) != 1000 {
		t.Fatalf("%d files: %v", len(list), err)
	}
	if data, err := repo.ReadBlob(list[0].Blob, 1<<20); err != nil || len(data) == 0 {
		t.Fatalf("blob: %v", err)
	}
	if _, err := repo.Files(head, cfg.Matcher(), 10); err == nil {
		t.Fatal("more files than the bound listed")
	}
	if err := g.Write(map[string][]byte{"docs/new.md": []byte("# New\n")}); err != nil {
		t.Fatal(err)
	}
	if err := g.Commit("two"); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	repo, err = cl.Open(ctx, 1, cfg, true, "")
	if err != nil {
		t.Fatal(err)
	}
	fetched := time.Since(t0)
	next, _ := repo.Head()
	t0 = time.Now()
	list, err = repo.Files(next, cfg.Matcher(), 5000)
	t.Logf("fetch %s, list %s", fetched, time.Since(t0))
	if next == head || err != nil || len(list) != 1001 {
		t.Fatalf("after the fetch: head %s → %s, %d files, %v", head, next, len(list), err)
	}
	// A request without the package's transport is refused.
	if _, err := (&Client{CacheDir: t.TempDir()}).DefaultBranch(ctx, cfg); err == nil {
		t.Fatal("a request went out without a transport")
	}
}

func TestGlobs(t *testing.T) {
	c := Config{Paths: []string{"docs/**/*.md", "*.txt"}}
	m := c.Matcher()
	for p, want := range map[string]bool{"docs/a.md": true, "docs/x/y/a.md": true, "a.txt": true, "x/a.txt": false, "docs/a.go": false} {
		if m(p) != want {
			t.Errorf("%s: %v", p, !want)
		}
	}
}
