package gitsrc_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
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

// TestFetchesRepacked: each fetch adds a pack to the clone; past a bound
// they are merged into one, and the clone (shared by the process's opens)
// still reads every commit's files and blobs, also while other opens read.
func TestFetchesRepacked(t *testing.T) {
	g, err := testenv.StartGitServer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	write := func(round int) {
		files := map[string][]byte{}
		for i := range 20 {
			files[fmt.Sprintf("docs/p%d.md", i)] = []byte(fmt.Sprintf("# Page %d\n\nround %d\n", i, i%(round+1)))
		}
		if err := g.Write(files); err != nil {
			t.Fatal(err)
		}
		if err := g.Commit(fmt.Sprint("round ", round)); err != nil {
			t.Fatal(err)
		}
	}
	write(0)
	cfg := Config{URL: g.URL(), Branch: "main"}
	cache := t.TempDir()
	cl := &Client{Transport: http.DefaultTransport, CacheDir: cache}
	ctx := context.Background()
	if _, err := cl.Open(ctx, 1, cfg, true, ""); err != nil {
		t.Fatal(err)
	}
	most := 0
	for round := 1; round <= 20; round++ {
		write(round)
		repo, err := cl.Open(ctx, 1, cfg, true, "")
		if err != nil {
			t.Fatal(err)
		}
		packs, _ := filepath.Glob(filepath.Join(cache, "*", "objects", "pack", "*.pack"))
		most = max(most, len(packs))
		head, _ := repo.Head()
		list, err := repo.Files(head, func(string) bool { return true }, 100)
		if err != nil || len(list) != 20 {
			t.Fatalf("round %d: %d files, %v", round, len(list), err)
		}
		var wg sync.WaitGroup
		for _, f := range list {
			wg.Add(1)
			go func() {
				defer wg.Done()
				again, err := cl.Open(ctx, 1, cfg, false, head)
				if err == nil {
					_, err = again.ReadBlob(f.Blob, 1<<20)
				}
				if err != nil {
					t.Errorf("round %d, %s: %v", round, f.Path, err)
				}
			}()
		}
		wg.Wait()
	}
	packs, _ := filepath.Glob(filepath.Join(cache, "*", "objects", "pack", "*.pack"))
	if most > 17 || len(packs) >= most {
		t.Fatalf("packs: at most %d, %d at the end", most, len(packs))
	}
}
