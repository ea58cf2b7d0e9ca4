package s3_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/lorekb/lore/internal/blob"
	"github.com/lorekb/lore/internal/blob/blobtest"
	"github.com/lorekb/lore/internal/blob/s3"
	"github.com/lorekb/lore/internal/testenv"
)

const (
	rootUser     = testenv.MinioUser
	rootPassword = testenv.MinioPassword
)

// endpoint is the host:port of the MinIO server started by TestMain.
var endpoint string

// TestMain runs every test in this package against a real MinIO server that
// it starts from a binary and stops afterwards.
func TestMain(m *testing.M) {
	srv, err := testenv.StartMinio()
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\nThe S3 store tests need a real MinIO server binary: run `make tools` (installs bin/minio) or set MINIO_BIN.\n", err)
		os.Exit(1)
	}
	endpoint = srv.Addr
	code := m.Run()
	srv.Stop()
	os.Exit(code)
}

func newStore(t *testing.T, bucket string, public bool) *s3.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := s3.New(ctx, s3.Config{
		Endpoint:  endpoint,
		AccessKey: rootUser,
		SecretKey: rootPassword,
		Bucket:    bucket,
		Public:    public,
	})
	if err != nil {
		t.Fatalf("s3.New(%s): %v", bucket, err)
	}
	return st
}

func TestConformancePrivate(t *testing.T) {
	st := newStore(t, "lore-private", false)
	if st.Public() {
		t.Fatal("private store reports Public")
	}
	blobtest.Run(t, st)
}

func TestConformancePublic(t *testing.T) {
	st := newStore(t, "lore-public", true)
	if !st.Public() {
		t.Fatal("public store reports not Public")
	}
	blobtest.Run(t, st)
}

func TestPrivateBucketRefusesAnonymousReads(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, "lore-private-anon", false)
	if _, err := st.Put(ctx, "secret.txt", strings.NewReader("s"), 1, "text/plain", nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Delete(context.Background(), "secret.txt") })
	resp, err := http.Get("http://" + endpoint + "/lore-private-anon/secret.txt")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("anonymous GET on private bucket = %d, want 403", resp.StatusCode)
	}
}

func TestPublicBucketURLIsDirect(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, "lore-public-direct", true)
	name := "sites/1/logo ü.png"
	if _, err := st.Put(ctx, name, strings.NewReader("png!"), 4, "image/png", nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Delete(context.Background(), name) })
	u, err := st.URL(ctx, name, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := "http://" + endpoint + "/lore-public-direct/sites/1/logo%20%C3%BC.png"
	if u != want {
		t.Errorf("URL = %q, want %q", u, want)
	}
	// A direct URL does not expire.
	time.Sleep(1100 * time.Millisecond)
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(b) != "png!" || resp.Header.Get("Content-Type") != "image/png" {
		t.Errorf("GET %s = %d %q (%s)", u, resp.StatusCode, b, resp.Header.Get("Content-Type"))
	}
	// Listing stays private even on a public bucket.
	resp, err = http.Get("http://" + endpoint + "/lore-public-direct/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		t.Errorf("anonymous bucket listing allowed on public bucket")
	}

	cdn, err := s3.New(ctx, s3.Config{Endpoint: "http://" + endpoint, AccessKey: rootUser, SecretKey: rootPassword,
		Bucket: "lore-public-direct", Public: true, PublicBaseURL: "https://cdn.example.com/files/"})
	if err != nil {
		t.Fatal(err)
	}
	if u, _ := cdn.URL(ctx, name, 0); u != "https://cdn.example.com/files/sites/1/logo%20%C3%BC.png" {
		t.Errorf("URL with PublicBaseURL = %q", u)
	}
}

// TestMetadataEncodedOnTheWire checks that non-ASCII metadata is stored as
// URL-encoded ASCII (what other S3 tools will see) and that keys colliding
// with standard header names stay user metadata.
func TestMetadataEncodedOnTheWire(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, "lore-private", false)
	name := "meta/wire.txt"
	meta := map[string]string{"original_filename": "naïve 文件.txt", "content-type": "not/a-header"}
	if _, err := st.Put(ctx, name, strings.NewReader("x"), 1, "text/plain", meta); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Delete(context.Background(), name) })
	oi, err := st.Client().StatObject(ctx, st.Bucket(), name, minio.StatObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	raw := oi.UserMetadata["Original_filename"]
	if raw != "na%C3%AFve%20%E6%96%87%E4%BB%B6.txt" {
		t.Errorf("raw stored metadata = %q (all: %v)", raw, oi.UserMetadata)
	}
	if oi.ContentType != "text/plain" {
		t.Errorf("metadata key content-type overrode the real Content-Type: %q", oi.ContentType)
	}
	info, err := st.Stat(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if info.Metadata["original_filename"] != "naïve 文件.txt" || info.Metadata["content-type"] != "not/a-header" {
		t.Errorf("decoded metadata = %q", info.Metadata)
	}
}

func TestNewErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s3.New(ctx, s3.Config{Endpoint: endpoint, AccessKey: rootUser, SecretKey: "wrong-password", Bucket: "lore-x"}); err == nil {
		t.Error("New with wrong credentials succeeded")
	}
	if _, err := s3.New(ctx, s3.Config{Endpoint: endpoint, AccessKey: rootUser, SecretKey: rootPassword}); err == nil {
		t.Error("New without bucket succeeded")
	}
	// Creating the store twice on the same bucket is fine (bucket exists).
	newStore(t, "lore-twice", false)
	newStore(t, "lore-twice", false)
}

func TestNotFoundMapping(t *testing.T) {
	st := newStore(t, "lore-private", false)
	ctx := context.Background()
	if _, _, err := st.Get(ctx, "nope/missing.bin"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Get missing: %v", err)
	}
	if _, err := st.Stat(ctx, "nope/missing.bin"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Stat missing: %v", err)
	}
}
