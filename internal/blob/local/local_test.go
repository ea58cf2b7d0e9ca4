package local_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/blob"
	"github.com/lorekb/lore/internal/blob/blobtest"
	"github.com/lorekb/lore/internal/blob/local"
)

const route = "/v1/files-signed/"

// serveSigned is the download route a real server mounts: it verifies the
// signature and streams the object.
func serveSigned(st **local.Store) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, route) {
			http.NotFound(w, r)
			return
		}
		name := strings.TrimPrefix(r.URL.Path, route)
		q := r.URL.Query()
		if err := (*st).VerifySigned(name, q.Get("expires"), q.Get("sig"), time.Now()); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		rc, info, err := (*st).Get(r.Context(), name)
		if errors.Is(err, blob.ErrNotFound) {
			http.NotFound(w, r)
			return
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer rc.Close()
		w.Header().Set("Content-Type", info.ContentType)
		io.Copy(w, rc)
	})
}

func newStore(t *testing.T) (*local.Store, string, *httptest.Server) {
	t.Helper()
	var st *local.Store
	srv := httptest.NewServer(serveSigned(&st))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	var err error
	st, err = local.New(dir, local.Signer{BaseURL: srv.URL + strings.TrimSuffix(route, "/"), Secret: []byte("test-secret-0123456789")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, dir, srv
}

func TestConformance(t *testing.T) {
	st, dir, _ := newStore(t)
	t.Run("Suite", func(t *testing.T) { blobtest.Run(t, st) })

	// After the suite cleaned up, nothing but the reserved areas remain:
	// no leaked temporary files and no empty directory skeletons.
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != ".lore-meta" && e.Name() != ".lore-tmp" {
			t.Errorf("leftover entry in store dir: %s", e.Name())
		}
	}
	tmp, _ := os.ReadDir(filepath.Join(dir, ".lore-tmp"))
	if len(tmp) != 0 {
		t.Errorf("leaked %d temporary files", len(tmp))
	}
	meta, _ := os.ReadDir(filepath.Join(dir, ".lore-meta"))
	if len(meta) != 0 {
		t.Errorf("leaked sidecars: %d entries in .lore-meta", len(meta))
	}
}

func TestFilesAndSidecarsOnDisk(t *testing.T) {
	st, dir, _ := newStore(t)
	ctx := context.Background()
	if _, err := st.Put(ctx, "sites/1/a.txt", strings.NewReader("hello"), 5, "text/plain", map[string]string{"original_filename": "ä.txt"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "sites", "1", "a.txt"))
	if err != nil || string(b) != "hello" {
		t.Fatalf("object file = %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".lore-meta", "sites", "1", "a.txt.meta.json")); err != nil {
		t.Fatalf("sidecar missing: %v", err)
	}
	all, err := st.List(ctx, "", true)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 || all[0].Name != "sites/1/a.txt" {
		t.Fatalf("List shows %+v, want only the object (no sidecars or temp files)", all)
	}
	// Files dropped in by other means are served with guessed metadata.
	if err := os.WriteFile(filepath.Join(dir, "sites", "1", "page.html"), []byte("<p>"), 0o644); err != nil {
		t.Fatal(err)
	}
	info, err := st.Stat(ctx, "sites/1/page.html")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(info.ContentType, "text/html") || info.ETag == "" || info.Size != 3 {
		t.Errorf("Stat of sidecar-less file = %+v", info)
	}
}

func TestReservedNames(t *testing.T) {
	st, _, _ := newStore(t)
	for _, name := range []string{".lore-meta/x", ".lore-tmp/x", ".LORE-META/x.meta.json", ".lore-tmp"} {
		if _, err := st.Put(context.Background(), name, strings.NewReader("x"), 1, "", nil); !errors.Is(err, blob.ErrInvalidName) {
			t.Errorf("Put(%q): err = %v, want ErrInvalidName", name, err)
		}
		if _, err := st.Stat(context.Background(), name); !errors.Is(err, blob.ErrInvalidName) {
			t.Errorf("Stat(%q): err = %v, want ErrInvalidName", name, err)
		}
	}
	if got, err := st.List(context.Background(), ".lore-meta/", true); err != nil || len(got) != 0 {
		t.Errorf("List of reserved tree = %v, %v; want empty", got, err)
	}
}

func TestTraversalNeverTouchesOutside(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "store")
	st, err := local.New(dir, local.Signer{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	secret := filepath.Join(parent, "secret.txt")
	if err := os.WriteFile(secret, []byte("top secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, name := range []string{"../secret.txt", "../x", `..\x`, "%2e%2e/secret.txt", "a/../../secret.txt"} {
		if _, err := st.Put(ctx, name, strings.NewReader("pwned"), 5, "", nil); !errors.Is(err, blob.ErrInvalidName) {
			t.Errorf("Put(%q): %v", name, err)
		}
		if _, _, err := st.Get(ctx, name); !errors.Is(err, blob.ErrInvalidName) {
			t.Errorf("Get(%q): %v", name, err)
		}
		if err := st.Delete(ctx, name); !errors.Is(err, blob.ErrInvalidName) {
			t.Errorf("Delete(%q): %v", name, err)
		}
	}
	if b, _ := os.ReadFile(secret); string(b) != "top secret" {
		t.Fatalf("file outside the store was modified: %q", b)
	}
	if _, err := os.Stat(filepath.Join(parent, "x")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("file created outside the store: %v", err)
	}

	// A symlink planted inside the store must not lead outside it.
	if err := os.Symlink(parent, filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Get(ctx, "escape/secret.txt"); err == nil {
		t.Errorf("Get through an escaping symlink succeeded")
	}
	if _, err := st.Put(ctx, "escape/planted.txt", strings.NewReader("x"), 1, "", nil); err == nil {
		t.Errorf("Put through an escaping symlink succeeded")
	}
	if _, err := os.Stat(filepath.Join(parent, "planted.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Put wrote through a symlink outside the store: %v", err)
	}
	if err := os.Symlink(secret, filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Get(ctx, "link.txt"); err == nil {
		t.Errorf("Get of a symlink to a file outside the store succeeded")
	}
	if got, err := st.List(ctx, "", true); err != nil || len(got) != 0 {
		t.Errorf("List shows %+v, %v; want no entries (symlinks are not objects)", got, err)
	}
}

func TestVerifySigned(t *testing.T) {
	st, _, _ := newStore(t)
	name := "sites/7/ä b.txt"
	u, err := st.URL(context.Background(), name, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	gotName := strings.TrimPrefix(parsed.Path, route)
	if gotName != name {
		t.Fatalf("URL path decodes to %q, want %q (URL %s)", gotName, name, u)
	}
	if !strings.Contains(u, "/sites/7/%C3%A4%20b.txt?") {
		t.Errorf("URL %s does not path-escape the name segment by segment", u)
	}
	exp, sig := parsed.Query().Get("expires"), parsed.Query().Get("sig")
	now := time.Now()
	if err := st.VerifySigned(name, exp, sig, now); err != nil {
		t.Fatalf("VerifySigned(valid) = %v", err)
	}
	if err := st.VerifySigned(name, exp, sig, now.Add(2*time.Hour)); !errors.Is(err, local.ErrExpired) {
		t.Errorf("VerifySigned after expiry = %v, want ErrExpired", err)
	}
	flipped := []byte(sig)
	flipped[0] ^= 1
	for _, c := range []struct{ name, exp, sig string }{
		{"sites/7/other.txt", exp, sig},
		{name, exp + "0", sig},
		{name, "+" + exp, sig},
		{name, exp, string(flipped)},
		{name, exp, sig[:len(sig)-2]},
		{name, exp, ""},
		{name, exp, "zz" + sig[2:]},
		{name, "", sig},
		{name, "soon", sig},
	} {
		if err := st.VerifySigned(c.name, c.exp, c.sig, now); !errors.Is(err, local.ErrBadSignature) {
			t.Errorf("VerifySigned(%q, %q, %q) = %v, want ErrBadSignature", c.name, c.exp, c.sig, err)
		}
	}
	if err := st.VerifySigned("../etc/passwd", exp, sig, now); !errors.Is(err, blob.ErrInvalidName) {
		t.Errorf("VerifySigned with traversal name = %v, want ErrInvalidName", err)
	}
	// A different secret never verifies.
	other, err := local.New(t.TempDir(), local.Signer{BaseURL: "http://x", Secret: []byte("another-secret")})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.VerifySigned(name, exp, sig, now); !errors.Is(err, local.ErrBadSignature) {
		t.Errorf("VerifySigned with another secret = %v, want ErrBadSignature", err)
	}
	// Without a signer, URLs are refused rather than produced unsigned.
	unsigned, err := local.New(t.TempDir(), local.Signer{})
	if err != nil {
		t.Fatal(err)
	}
	defer unsigned.Close()
	if _, err := unsigned.URL(context.Background(), name, time.Minute); !errors.Is(err, local.ErrNoSigner) {
		t.Errorf("URL without signer = %v, want ErrNoSigner", err)
	}
	if err := unsigned.VerifySigned(name, exp, sig, now); err == nil {
		t.Errorf("VerifySigned without signer succeeded")
	}
}

// TestConcurrentPutsAreAtomic checks that a reader never observes a partially
// written object or one writer's content with another writer's metadata.
func TestConcurrentPutsAreAtomic(t *testing.T) {
	st, _, _ := newStore(t)
	ctx := context.Background()
	const name = "race/obj.bin"
	versions := [][]byte{bytes.Repeat([]byte("A"), 256<<10), bytes.Repeat([]byte("B"), 300<<10)}
	if _, err := st.Put(ctx, name, bytes.NewReader(versions[0]), -1, "text/a", map[string]string{"v": "A"}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				v := (i + w) % 2
				tag := string(rune('A' + v))
				if _, err := st.Put(ctx, name, bytes.NewReader(versions[v]), int64(len(versions[v])), "text/"+strings.ToLower(tag), map[string]string{"v": tag}); err != nil {
					t.Errorf("Put: %v", err)
					return
				}
			}
		}()
	}
	deadline := time.Now().Add(1500 * time.Millisecond)
	reads := 0
	for time.Now().Before(deadline) {
		rc, info, err := st.Get(ctx, name)
		if err != nil {
			t.Fatalf("Get during concurrent Puts: %v", err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, versions[0]) && !bytes.Equal(b, versions[1]) {
			t.Fatalf("read a torn object of %d bytes", len(b))
		}
		tag := string(b[0])
		if info.Metadata["v"] != tag || info.ContentType != "text/"+strings.ToLower(tag) || info.Size != int64(len(b)) {
			t.Fatalf("content %s paired with info %+v", tag, info)
		}
		reads++
	}
	close(stop)
	wg.Wait()
	if reads == 0 {
		t.Fatal("no reads completed")
	}
}

func TestPutHonoursContext(t *testing.T) {
	st, dir, _ := newStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	go func() {
		pw.Write([]byte("partial data"))
		cancel()
		pw.Write([]byte("more data"))
		pw.Close()
	}()
	if _, err := st.Put(ctx, "cancel/me.txt", pr, -1, "", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Put with cancelled context: err = %v, want context.Canceled", err)
	}
	if _, err := st.Stat(context.Background(), "cancel/me.txt"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("cancelled Put left an object: %v", err)
	}
	if tmp, _ := os.ReadDir(filepath.Join(dir, ".lore-tmp")); len(tmp) != 0 {
		t.Errorf("cancelled Put leaked %d temp files", len(tmp))
	}
}

func TestNewRemovesStaleTempFiles(t *testing.T) {
	dir := t.TempDir()
	st, err := local.New(dir, local.Signer{})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	stale := filepath.Join(dir, ".lore-tmp", "crashed.tmp")
	fresh := filepath.Join(dir, ".lore-tmp", "in-progress.tmp")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	st, err = local.New(dir, local.Signer{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := os.Stat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale temp file survived New: %v", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("recent temp file (possibly a live upload) was removed: %v", err)
	}
}
