// Package blobtest is the conformance suite every blob.Store implementation
// must pass, so the local and S3 backends behave identically for the code
// above them. It talks to real backends only: the caller supplies a Store
// connected to a real directory or a real S3 server.
package blobtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/blob"
)

// Run executes the conformance suite against s. All objects are created under
// a random prefix that is removed afterwards, so Run can share a bucket or
// directory with other data. Signed URLs returned by s are fetched over real
// HTTP, so for stores whose URLs point at an application route the caller
// must serve that route (for example with httptest) before calling Run.
func Run(t *testing.T, s blob.Store) {
	t.Helper()
	prefix := "conformance-" + randHex(t, 6) + "/"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.DeletePrefix(ctx, prefix); err != nil {
			t.Errorf("cleanup DeletePrefix(%q): %v", prefix, err)
		}
	})
	t.Run("LargeRoundTrip", func(t *testing.T) { testLargeRoundTrip(t, s, prefix) })
	t.Run("UnknownSize", func(t *testing.T) { testUnknownSize(t, s, prefix) })
	t.Run("EmptyObject", func(t *testing.T) { testEmptyObject(t, s, prefix) })
	t.Run("StatMetadata", func(t *testing.T) { testStatMetadata(t, s, prefix) })
	t.Run("Overwrite", func(t *testing.T) { testOverwrite(t, s, prefix) })
	t.Run("FailedPutKeepsOld", func(t *testing.T) { testFailedPut(t, s, prefix) })
	t.Run("List", func(t *testing.T) { testList(t, s, prefix) })
	t.Run("Delete", func(t *testing.T) { testDelete(t, s, prefix) })
	t.Run("DeletePrefix", func(t *testing.T) { testDeletePrefix(t, s, prefix) })
	t.Run("InvalidNames", func(t *testing.T) { testInvalidNames(t, s, prefix) })
	t.Run("URL", func(t *testing.T) { testURL(t, s, prefix) })
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func randHex(t *testing.T, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// streamOnly hides every optional interface (Seeker, ReaderAt, WriterTo, Len)
// so backends are exercised with a pure stream, as with an HTTP request body.
type streamOnly struct{ r io.Reader }

// Read forwards to the wrapped reader.
func (s streamOnly) Read(p []byte) (int, error) { return s.r.Read(p) }

// content returns a reproducible pseudo-random stream of n bytes.
func content(seed byte, n int64) io.Reader {
	var key [32]byte
	key[0] = seed
	return io.LimitReader(mrand.NewChaCha8(key), n)
}

func digest(t *testing.T, r io.Reader) (string, int64) {
	t.Helper()
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		t.Fatalf("reading content: %v", err)
	}
	return hex.EncodeToString(h.Sum(nil)), n
}

func put(t *testing.T, s blob.Store, name string, data []byte, contentType string, meta map[string]string) blob.Info {
	t.Helper()
	info, err := s.Put(ctxT(t), name, streamOnly{bytes.NewReader(data)}, int64(len(data)), contentType, meta)
	if err != nil {
		t.Fatalf("Put(%q): %v", name, err)
	}
	return info
}

func getBytes(t *testing.T, s blob.Store, name string) ([]byte, blob.Info) {
	t.Helper()
	rc, info, err := s.Get(ctxT(t), name)
	if err != nil {
		t.Fatalf("Get(%q): %v", name, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("Get(%q) read: %v", name, err)
	}
	return b, info
}

func testLargeRoundTrip(t *testing.T, s blob.Store, prefix string) {
	const size = 6<<20 + 12345 // multi-MB and not a multiple of any buffer size
	name := prefix + "large/blob.bin"
	want, _ := digest(t, content(1, size))

	info, err := s.Put(ctxT(t), name, streamOnly{content(1, size)}, size, "application/octet-stream", nil)
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	if info.Name != name || info.Size != size || info.ETag == "" {
		t.Errorf("Put info = %+v, want name %q size %d and an ETag", info, name, size)
	}

	rc, ginfo, err := s.Get(ctxT(t), name)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if ginfo.Size != size || ginfo.ContentType != "application/octet-stream" || ginfo.ETag != info.ETag {
		t.Errorf("Get info = %+v, want size %d, octet-stream, ETag %q", ginfo, size, info.ETag)
	}
	// Get must stream: reading the whole object through a small hash must
	// not allocate anywhere near the object's size.
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got, n := digest(t, rc)
	runtime.ReadMemStats(&after)
	if err := rc.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if n != size || got != want {
		t.Fatalf("Get returned %d bytes with sha256 %s, want %d bytes with %s", n, got, size, want)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size/2 {
		t.Errorf("reading a %d-byte object allocated %d bytes: Get does not stream", size, alloc)
	}
}

func testUnknownSize(t *testing.T, s blob.Store, prefix string) {
	// Larger than the S3 backend's part size, so a streamed multipart upload
	// of unknown length is exercised.
	const size = 17<<20 + 7
	name := prefix + "unknown/stream.bin"
	want, _ := digest(t, content(2, size))
	info, err := s.Put(ctxT(t), name, streamOnly{content(2, size)}, -1, "", nil)
	if err != nil {
		t.Fatalf("Put(size -1): %v", err)
	}
	if info.Size != size {
		t.Errorf("Put(size -1) info.Size = %d, want %d", info.Size, size)
	}
	st, err := s.Stat(ctxT(t), name)
	if err != nil {
		t.Fatalf("Stat: %v", err)
	}
	if st.Size != size || st.ContentType != blob.DefaultContentType {
		t.Errorf("Stat = %+v, want size %d and default content type", st, size)
	}
	rc, _, err := s.Get(ctxT(t), name)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	defer rc.Close()
	if got, n := digest(t, rc); n != size || got != want {
		t.Fatalf("Get returned %d bytes (%s), want %d (%s)", n, got, size, want)
	}
}

func testEmptyObject(t *testing.T, s blob.Store, prefix string) {
	name := prefix + "empty/zero"
	if _, err := s.Put(ctxT(t), name, streamOnly{strings.NewReader("")}, -1, "text/plain", nil); err != nil {
		t.Fatalf("Put empty: %v", err)
	}
	b, info := getBytes(t, s, name)
	if len(b) != 0 || info.Size != 0 {
		t.Fatalf("empty object read back as %d bytes, info size %d", len(b), info.Size)
	}
}

func testStatMetadata(t *testing.T, s blob.Store, prefix string) {
	name := prefix + "meta/doc.pdf"
	original := "Résumé – 日本語 файл 🙂 100%.pdf"
	meta := map[string]string{
		blob.MetaOriginalFilename: original,
		"Uploaded-By":             "user 42 / team=a&b",
	}
	data := []byte("%PDF-1.4 fake")
	pinfo := put(t, s, name, data, "application/pdf", meta)
	want := map[string]string{blob.MetaOriginalFilename: original, "uploaded-by": "user 42 / team=a&b"}

	st, err := s.Stat(ctxT(t), name)
	if err != nil {
		t.Fatalf("Stat: %v", err)
	}
	if st.Name != name || st.Size != int64(len(data)) || st.ContentType != "application/pdf" || st.ETag == "" || st.ETag != pinfo.ETag {
		t.Errorf("Stat = %+v (Put ETag %q)", st, pinfo.ETag)
	}
	if d := time.Since(st.LastModified); d < -time.Minute || d > 5*time.Minute {
		t.Errorf("Stat LastModified = %v, not recent", st.LastModified)
	}
	if !mapsEqual(st.Metadata, want) {
		t.Errorf("Stat metadata = %q, want %q", st.Metadata, want)
	}
	_, ginfo := getBytes(t, s, name)
	if !mapsEqual(ginfo.Metadata, want) || ginfo.ContentType != "application/pdf" {
		t.Errorf("Get info = %+v, want metadata %q", ginfo, want)
	}
	if _, err := s.Put(ctxT(t), prefix+"meta/bad", strings.NewReader("x"), 1, "", map[string]string{"bad key": "v"}); !errors.Is(err, blob.ErrInvalidMetadata) {
		t.Errorf("Put with invalid metadata key: err = %v, want ErrInvalidMetadata", err)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

func testOverwrite(t *testing.T, s blob.Store, prefix string) {
	name := prefix + "overwrite/x.txt"
	first := put(t, s, name, []byte("first version"), "text/plain", map[string]string{"v": "1"})
	second := put(t, s, name, []byte("second, longer version"), "text/markdown", map[string]string{"w": "2"})
	if first.ETag == second.ETag {
		t.Errorf("ETag unchanged after overwrite with different content: %q", first.ETag)
	}
	b, info := getBytes(t, s, name)
	if string(b) != "second, longer version" || info.ContentType != "text/markdown" || !mapsEqual(info.Metadata, map[string]string{"w": "2"}) {
		t.Errorf("after overwrite got %q, %+v", b, info)
	}
}

// failingReader yields n bytes of data and then an error, like a client that
// disconnects in the middle of an upload.
type failingReader struct{ n int }

var errClientGone = errors.New("client went away")

// Read yields the remaining bytes, then errClientGone.
func (f *failingReader) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errClientGone
	}
	k := min(len(p), f.n)
	for i := range k {
		p[i] = 'z'
	}
	f.n -= k
	return k, nil
}

func testFailedPut(t *testing.T, s blob.Store, prefix string) {
	name := prefix + "failed/keep.txt"
	put(t, s, name, []byte("original"), "text/plain", nil)
	for _, size := range []int64{1 << 20, -1} {
		if _, err := s.Put(ctxT(t), name, &failingReader{n: 300 << 10}, size, "text/plain", nil); err == nil {
			t.Errorf("Put with failing reader (size %d) succeeded", size)
		}
		if b, _ := getBytes(t, s, name); string(b) != "original" {
			t.Fatalf("after failed Put (size %d) object holds %d bytes, want the original", size, len(b))
		}
	}
	if _, err := s.Put(ctxT(t), name, streamOnly{strings.NewReader("short")}, 100, "text/plain", nil); err == nil {
		t.Errorf("Put with fewer bytes than size succeeded")
	}
	if b, _ := getBytes(t, s, name); string(b) != "original" {
		t.Fatalf("after short Put object holds %q, want the original", b)
	}
	fresh := prefix + "failed/never.txt"
	if _, err := s.Put(ctxT(t), fresh, &failingReader{n: 1000}, -1, "", nil); err == nil {
		t.Errorf("Put with failing reader succeeded")
	}
	if _, err := s.Stat(ctxT(t), fresh); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Stat after failed first Put: err = %v, want ErrNotFound", err)
	}
}

func names(infos []blob.Info, strip string) []string {
	out := make([]string, len(infos))
	for i, in := range infos {
		out[i] = strings.TrimPrefix(in.Name, strip)
	}
	return out
}

func testList(t *testing.T, s blob.Store, prefix string) {
	p := prefix + "list/"
	files := map[string]int{"a.txt": 1, "b.txt": 2, "sub/c.txt": 3, "sub/deep/d.txt": 4, "sub.txt": 5}
	for rel, n := range files {
		put(t, s, p+rel, bytes.Repeat([]byte("x"), n), "text/plain", nil)
	}
	cases := []struct {
		prefix    string
		recursive bool
		want      []string
	}{
		{p, false, []string{"a.txt", "b.txt", "sub.txt"}},
		{p, true, []string{"a.txt", "b.txt", "sub.txt", "sub/c.txt", "sub/deep/d.txt"}},
		{p + "sub/", false, []string{"sub/c.txt"}},
		{p + "sub/", true, []string{"sub/c.txt", "sub/deep/d.txt"}},
		{p + "sub", false, []string{"sub.txt"}},
		{p + "sub", true, []string{"sub.txt", "sub/c.txt", "sub/deep/d.txt"}},
		{p + "a", false, []string{"a.txt"}},
		{p + "sub/deep/d.txt", true, []string{"sub/deep/d.txt"}},
		{p + "nothing/", true, []string{}},
		{p + "nothing/", false, []string{}},
		{prefix + "no-such-dir/deeper/", true, []string{}},
	}
	for _, c := range cases {
		got, err := s.List(ctxT(t), c.prefix, c.recursive)
		if err != nil {
			t.Errorf("List(%q, %v): %v", c.prefix, c.recursive, err)
			continue
		}
		if g := names(got, p); !slices.Equal(g, c.want) {
			t.Errorf("List(%q, %v) = %q, want %q", c.prefix, c.recursive, g, c.want)
		}
		for _, in := range got {
			rel := strings.TrimPrefix(in.Name, p)
			if in.Size != int64(files[rel]) || in.ETag == "" || in.LastModified.IsZero() {
				t.Errorf("List entry %+v: want size %d, an ETag and a modification time", in, files[rel])
			}
		}
	}
	if _, err := s.List(ctxT(t), "../", true); !errors.Is(err, blob.ErrInvalidName) {
		t.Errorf("List(\"../\"): err = %v, want ErrInvalidName", err)
	}
}

func testDelete(t *testing.T, s blob.Store, prefix string) {
	name := prefix + "delete/gone.txt"
	put(t, s, name, []byte("bye"), "text/plain", nil)
	put(t, s, prefix+"delete/dir/child.txt", []byte("child"), "text/plain", nil)
	if err := s.Delete(ctxT(t), name); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := s.Stat(ctxT(t), name); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Stat after Delete: err = %v, want ErrNotFound", err)
	}
	if rc, _, err := s.Get(ctxT(t), name); !errors.Is(err, blob.ErrNotFound) {
		if rc != nil {
			rc.Close()
		}
		t.Errorf("Get after Delete: err = %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctxT(t), name); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("second Delete: err = %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctxT(t), prefix+"delete/never-existed"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Delete of missing object: err = %v, want ErrNotFound", err)
	}
	// A "directory" is not an object.
	if err := s.Delete(ctxT(t), prefix+"delete/dir"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Delete of a pseudo-directory: err = %v, want ErrNotFound", err)
	}
	if _, err := s.Stat(ctxT(t), prefix+"delete/dir"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Stat of a pseudo-directory: err = %v, want ErrNotFound", err)
	}
	if b, _ := getBytes(t, s, prefix+"delete/dir/child.txt"); string(b) != "child" {
		t.Errorf("sibling object damaged by Delete: %q", b)
	}
}

func testDeletePrefix(t *testing.T, s blob.Store, prefix string) {
	d := prefix + "dp/"
	for _, rel := range []string{"site1/a", "site1/b/c", "site1/b/d/e", "site10/x", "site2/y"} {
		put(t, s, d+rel, []byte(rel), "text/plain", nil)
	}
	if err := s.DeletePrefix(ctxT(t), d+"site1/"); err != nil {
		t.Fatalf("DeletePrefix: %v", err)
	}
	got, err := s.List(ctxT(t), d, true)
	if err != nil {
		t.Fatal(err)
	}
	if g := names(got, d); !slices.Equal(g, []string{"site10/x", "site2/y"}) {
		t.Errorf("after DeletePrefix(site1/) remaining = %q, want site10/x and site2/y", g)
	}
	if _, err := s.Stat(ctxT(t), d+"site1/b/c"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Stat of deleted object: err = %v, want ErrNotFound", err)
	}
	if err := s.DeletePrefix(ctxT(t), d+"nothing-here/"); err != nil {
		t.Errorf("DeletePrefix of empty prefix range: %v", err)
	}
	for _, bad := range []string{"", "../", "/"} {
		if err := s.DeletePrefix(ctxT(t), bad); !errors.Is(err, blob.ErrInvalidName) {
			t.Errorf("DeletePrefix(%q): err = %v, want ErrInvalidName", bad, err)
		}
	}
	if got, _ := s.List(ctxT(t), d, true); len(got) != 2 {
		t.Errorf("refused DeletePrefix calls removed objects: %q", names(got, d))
	}
}

var badNames = []string{
	"../x", "a/../../x", "/etc/passwd", `..\x`, `a\..\..\x`, "%2e%2e/x", "%252e%252e/x", "a%2fb",
	"a\x00b", "C:/x", "dir/", "", "a//b",
}

func testInvalidNames(t *testing.T, s blob.Store, _ string) {
	ctx := ctxT(t)
	for _, bad := range badNames {
		if _, err := s.Put(ctx, bad, strings.NewReader("x"), 1, "text/plain", nil); !errors.Is(err, blob.ErrInvalidName) {
			t.Errorf("Put(%q): err = %v, want ErrInvalidName", bad, err)
		}
		if rc, _, err := s.Get(ctx, bad); !errors.Is(err, blob.ErrInvalidName) {
			if rc != nil {
				rc.Close()
			}
			t.Errorf("Get(%q): err = %v, want ErrInvalidName", bad, err)
		}
		if _, err := s.Stat(ctx, bad); !errors.Is(err, blob.ErrInvalidName) {
			t.Errorf("Stat(%q): err = %v, want ErrInvalidName", bad, err)
		}
		if err := s.Delete(ctx, bad); !errors.Is(err, blob.ErrInvalidName) {
			t.Errorf("Delete(%q): err = %v, want ErrInvalidName", bad, err)
		}
		if _, err := s.URL(ctx, bad, time.Minute); !errors.Is(err, blob.ErrInvalidName) {
			t.Errorf("URL(%q): err = %v, want ErrInvalidName", bad, err)
		}
	}
}

var httpClient = &http.Client{Timeout: 30 * time.Second}

// fetch GETs u and returns the status code and body.
func fetch(t *testing.T, u string) (int, []byte) {
	t.Helper()
	resp, err := httpClient.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading body: %v", u, err)
	}
	return resp.StatusCode, b
}

func testURL(t *testing.T, s blob.Store, prefix string) {
	name := prefix + "url/hello wörld+&=,;~()'![]?#%.txt"
	other := prefix + "url/other.txt"
	data := []byte("downloadable content " + randHex(t, 8))
	put(t, s, name, data, "text/plain", nil)
	put(t, s, other, []byte("a different object"), "text/plain", nil)

	u, err := s.URL(ctxT(t), name, 10*time.Minute)
	if err != nil {
		t.Fatalf("URL: %v", err)
	}
	if _, err := url.Parse(u); err != nil || !strings.HasPrefix(u, "http") {
		t.Fatalf("URL returned %q, not an absolute http(s) URL (%v)", u, err)
	}
	code, body := fetch(t, u)
	if code != http.StatusOK || !bytes.Equal(body, data) {
		t.Fatalf("GET %s = %d %q, want 200 with the object's bytes", u, code, body)
	}
	if def, err := s.URL(ctxT(t), name, 0); err != nil {
		t.Errorf("URL with default expiry: %v", err)
	} else if code, body := fetch(t, def); code != http.StatusOK || !bytes.Equal(body, data) {
		t.Errorf("GET default-expiry URL = %d", code)
	}
	if s.Public() {
		return
	}

	// Private stores: every part of the signed URL must be protected.
	parsed, _ := url.Parse(u)
	q := parsed.Query()
	if len(q) == 0 {
		t.Fatalf("private store returned an unsigned URL %q", u)
	}
	for key := range q {
		tampered := *parsed
		tq := parsed.Query()
		tq.Set(key, tamper(tq.Get(key)))
		tampered.RawQuery = tq.Encode()
		if code, _ := fetch(t, tampered.String()); code < 400 {
			t.Errorf("URL with tampered %s was accepted (%d): %s", key, code, tampered.String())
		}
	}
	unsigned := *parsed
	unsigned.RawQuery = ""
	if code, _ := fetch(t, unsigned.String()); code < 400 {
		t.Errorf("URL without signature was accepted (%d)", code)
	}
	// The signature for one object must not open another.
	ou, err := s.URL(ctxT(t), other, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	op, _ := url.Parse(ou)
	swapped := *op
	swapped.RawQuery = parsed.RawQuery
	if code, body := fetch(t, swapped.String()); code < 400 {
		t.Errorf("signature of %q opened %q (%d %q)", name, other, code, body)
	}

	short, err := s.URL(ctxT(t), name, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2200 * time.Millisecond)
	if code, _ := fetch(t, short); code < 400 {
		t.Errorf("expired URL was accepted (%d): %s", code, short)
	}
}

// tamper changes the last character of v to a different character of the
// same kind, so the value stays well-formed but no longer matches.
func tamper(v string) string {
	if v == "" {
		return "x"
	}
	last := v[len(v)-1]
	var repl byte
	switch {
	case last >= '0' && last <= '8', last >= 'a' && last <= 'e', last >= 'A' && last <= 'E':
		repl = last + 1
	case last == '9':
		repl = '0'
	default:
		repl = 'a'
		if last == 'a' {
			repl = 'b'
		}
	}
	return v[:len(v)-1] + string(repl)
}
