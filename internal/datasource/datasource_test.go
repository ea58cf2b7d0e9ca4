package datasource_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/lorekb/lore/internal/blob/local"
	"github.com/lorekb/lore/internal/blob/s3"
	"github.com/lorekb/lore/internal/datasource/blobsrc"
	"github.com/lorekb/lore/internal/datasource/datasourcetest"
	"github.com/lorekb/lore/internal/datasource/s3src"
	"github.com/lorekb/lore/internal/testenv"
)

var srv *testenv.Minio

// TestMain runs the suite against a real MinIO server.
func TestMain(m *testing.M) {
	var err error
	if srv, err = testenv.StartMinio(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
	code := m.Run()
	srv.Stop()
	os.Exit(code)
}

func bucket(t *testing.T, name string) {
	t.Helper()
	mc, err := srv.Client()
	if err != nil {
		t.Fatal(err)
	}
	if err := mc.MakeBucket(context.Background(), name, minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestInternalOnLocalStore(t *testing.T) {
	st, err := local.New(t.TempDir(), local.Signer{})
	if err != nil {
		t.Fatal(err)
	}
	datasourcetest.Run(t, &blobsrc.Source{Store: st, Root: "sites/1/datasources/1/"})
}

func TestInternalOnMinio(t *testing.T) {
	st, err := s3.New(context.Background(), s3.Config{Endpoint: srv.Addr, AccessKey: testenv.MinioUser,
		SecretKey: testenv.MinioPassword, Bucket: "lore-internal"})
	if err != nil {
		t.Fatal(err)
	}
	datasourcetest.Run(t, &blobsrc.Source{Store: st, Root: "datasources/2/"})
}

func TestExternalBucket(t *testing.T) {
	bucket(t, "team-docs")
	for _, prefix := range []string{"", "exports/2026/"} {
		t.Run("prefix="+prefix, func(t *testing.T) {
			if prefix == "" {
				bucket(t, "team-docs-root")
			}
			b := "team-docs"
			if prefix == "" {
				b = "team-docs-root"
			}
			src, err := s3src.New(s3src.Config{Endpoint: "http://" + srv.Addr, Bucket: b, Prefix: prefix,
				AccessKey: testenv.MinioUser, SecretKey: testenv.MinioPassword}, nil)
			if err != nil {
				t.Fatal(err)
			}
			datasourcetest.Run(t, src)
		})
	}
}

func TestExternalBucketErrors(t *testing.T) {
	ctx := context.Background()
	wrong, err := s3src.New(s3src.Config{Endpoint: srv.Addr, Bucket: "team-docs", AccessKey: testenv.MinioUser, SecretKey: "wrong-secret"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := wrong.Check(ctx); err == nil {
		t.Fatal("a wrong secret passed the check")
	}
	missing, _ := s3src.New(s3src.Config{Endpoint: srv.Addr, Bucket: "no-such-bucket", AccessKey: testenv.MinioUser, SecretKey: testenv.MinioPassword}, nil)
	if err := missing.Check(ctx); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("missing bucket: %v", err)
	}
	for _, c := range []s3src.Config{
		{Bucket: "b", AccessKey: "a", SecretKey: "s"},
		{Endpoint: "h:1", AccessKey: "a", SecretKey: "s"},
		{Endpoint: "h:1", Bucket: "b"},
		{Endpoint: "ftp://h", Bucket: "b", AccessKey: "a", SecretKey: "s"},
		{Endpoint: "http://h/path", Bucket: "b", AccessKey: "a", SecretKey: "s"},
		{Endpoint: "h:1", Bucket: "b", AccessKey: "a", SecretKey: "s", Prefix: "../x/"},
	} {
		if _, err := s3src.New(c, nil); err == nil {
			t.Fatalf("config %+v accepted", c)
		}
	}
}
