// Package datasourcetest is the conformance suite every data source passes.
package datasourcetest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/lorekb/lore/internal/blob"
	"github.com/lorekb/lore/internal/datasource"
)

// Run checks a data source that starts empty: put, browse by folder, get,
// delete, missing keys, and refused keys and prefixes.
func Run(t *testing.T, src datasource.Source) {
	ctx := context.Background()
	if err := src.Check(ctx); err != nil {
		t.Fatalf("check: %v", err)
	}
	files := map[string]string{"guide.md": "# Guide\n", "docs/intro.md": "# Intro\n", "docs/api/ref.html": "<h1>Ref</h1>",
		"docs/z.txt": "zzz", "其他/说明.md": "# 说明\n"}
	for k, v := range files {
		e, err := src.Put(ctx, k, bytes.NewReader([]byte(v)), int64(len(v)), "text/plain")
		if err != nil {
			t.Fatalf("put %s: %v", k, err)
		}
		if e.Path != k || e.Type != datasource.TypeFile || e.Size == nil || *e.Size != int64(len(v)) {
			t.Fatalf("put %s: entry %+v", k, e)
		}
	}
	root, err := src.Browse(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"dir:docs:docs/", "dir:其他:其他/", "file:guide.md:guide.md"}
	check(t, "root", root, want)
	docs, err := src.Browse(ctx, "docs/")
	if err != nil {
		t.Fatal(err)
	}
	check(t, "docs/", docs, []string{"dir:api:docs/api/", "file:intro.md:docs/intro.md", "file:z.txt:docs/z.txt"})
	if docs[1].LastModified == nil || docs[1].Size == nil || *docs[1].Size != 8 {
		t.Fatalf("file entry lacks size or time: %+v", docs[1])
	}
	empty, err := src.Browse(ctx, "nothing-here/")
	if err != nil || len(empty) != 0 {
		t.Fatalf("empty folder: %v %v", empty, err)
	}
	rc, size, err := src.Get(ctx, "docs/api/ref.html")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(rc)
	rc.Close()
	if string(body) != files["docs/api/ref.html"] || size != int64(len(body)) {
		t.Fatalf("get: %q size %d", body, size)
	}
	if _, _, err := src.Get(ctx, "docs/missing.md"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("get missing: %v, want ErrNotFound", err)
	}
	if err := src.Delete(ctx, "docs/z.txt"); err != nil {
		t.Fatal(err)
	}
	if err := src.Delete(ctx, "docs/z.txt"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("delete twice: %v, want ErrNotFound", err)
	}
	docs, _ = src.Browse(ctx, "docs/")
	check(t, "docs/ after delete", docs, []string{"dir:api:docs/api/", "file:intro.md:docs/intro.md"})
	for _, bad := range []string{"../etc/passwd", "/abs.md", "docs/../../x", "", "a//b", "docs/\x00.md"} {
		if _, _, err := src.Get(ctx, bad); !errors.Is(err, datasource.ErrInvalidKey) {
			t.Fatalf("get %q: %v, want ErrInvalidKey", bad, err)
		}
		if err := src.Delete(ctx, bad); !errors.Is(err, datasource.ErrInvalidKey) {
			t.Fatalf("delete %q: %v, want ErrInvalidKey", bad, err)
		}
		if _, err := src.Put(ctx, bad, bytes.NewReader(nil), 0, ""); !errors.Is(err, datasource.ErrInvalidKey) {
			t.Fatalf("put %q: %v, want ErrInvalidKey", bad, err)
		}
	}
	for _, bad := range []string{"../", "docs", "/docs/", "docs/../../"} {
		if _, err := src.Browse(ctx, bad); !errors.Is(err, datasource.ErrInvalidKey) {
			t.Fatalf("browse %q: %v, want ErrInvalidKey", bad, err)
		}
	}
}

func check(t *testing.T, what string, got []datasource.Entry, want []string) {
	t.Helper()
	var g []string
	for _, e := range got {
		g = append(g, e.Type+":"+e.Name+":"+e.Path)
	}
	if len(g) != len(want) {
		t.Fatalf("%s: %v, want %v", what, g, want)
	}
	for i := range g {
		if g[i] != want[i] {
			t.Fatalf("%s: %v, want %v", what, g, want)
		}
	}
}
