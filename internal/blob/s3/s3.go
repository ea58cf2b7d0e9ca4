// Package s3 implements blob.Store on S3-compatible object storage (MinIO,
// AWS S3 and others) with minio-go, for deployments where files must survive
// and be shared between application instances.
package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/s3utils"

	"github.com/lorekb/lore/internal/blob"
)

// Config describes the bucket a Store uses.
type Config struct {
	// Endpoint is the server as host[:port]. A "http://" or "https://"
	// prefix is also accepted and then decides UseSSL.
	Endpoint string
	// AccessKey is the static access key ID.
	AccessKey string
	// SecretKey is the static secret for AccessKey.
	SecretKey string
	// Bucket is created on first use if it does not exist.
	Bucket string
	// Region is optional for MinIO; set it for AWS.
	Region string
	// UseSSL selects https for the API endpoint.
	UseSSL bool
	// Public makes the bucket anonymously readable (GetObject only, never
	// listing), so URL can return permanent direct links that browsers and
	// CDNs can cache. Leave false for confidential uploads: URL then returns
	// short-lived presigned links.
	Public bool
	// PublicBaseURL optionally overrides where direct URLs of a public
	// bucket point (for example a CDN or reverse proxy in front of the
	// bucket, "https://cdn.example.com/files"); the escaped object name is
	// appended. When empty, direct URLs are "<endpoint>/<bucket>/<name>".
	PublicBaseURL string
}

// Store is a blob.Store backed by one S3 bucket. It is safe for concurrent use.
type Store struct {
	client     *minio.Client
	bucket     string
	public     bool
	publicBase string
}

var _ blob.Store = (*Store)(nil)

// partSize bounds memory per upload: minio-go buffers one part at a time for
// streams, and without an explicit size it would pick ~512 MiB parts for
// uploads of unknown length. 16 MiB parts still allow objects of ~156 GiB.
const partSize = 16 << 20

// maxPresignExpiry is the longest lifetime S3 accepts for presigned URLs.
const maxPresignExpiry = 7 * 24 * time.Hour

// metaHeaderPrefix is prepended to metadata keys handed to minio-go so that a
// user key that happens to be a standard header name (e.g. "content-type")
// is still stored as user metadata instead of overriding a real header.
const metaHeaderPrefix = "x-amz-meta-"

// New connects to the server, creates the bucket if missing and, for a public
// bucket, installs an anonymous read-only policy. The context bounds these
// start-up calls.
func New(ctx context.Context, cfg Config) (*Store, error) {
	endpoint, secure := cfg.Endpoint, cfg.UseSSL
	if u, err := url.Parse(endpoint); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
		endpoint, secure = u.Host, u.Scheme == "https"
	}
	if endpoint == "" || cfg.Bucket == "" {
		return nil, errors.New("blob/s3: endpoint and bucket are required")
	}
	client, err := minio.New(endpoint, &minio.Options{
		Creds:  credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure: secure,
		Region: cfg.Region,
	})
	if err != nil {
		return nil, fmt.Errorf("blob/s3: client for %s: %w", endpoint, err)
	}
	exists, err := client.BucketExists(ctx, cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("blob/s3: check bucket %q: %w", cfg.Bucket, err)
	}
	if !exists {
		if err := client.MakeBucket(ctx, cfg.Bucket, minio.MakeBucketOptions{Region: cfg.Region}); err != nil {
			// Another instance may have created it concurrently.
			code := minio.ToErrorResponse(err).Code
			if code != "BucketAlreadyOwnedByYou" && code != "BucketAlreadyExists" {
				return nil, fmt.Errorf("blob/s3: create bucket %q: %w", cfg.Bucket, err)
			}
		}
	}
	if cfg.Public {
		policy := fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":["*"]},"Action":["s3:GetObject"],"Resource":["arn:aws:s3:::%s/*"]}]}`, cfg.Bucket)
		if err := client.SetBucketPolicy(ctx, cfg.Bucket, policy); err != nil {
			return nil, fmt.Errorf("blob/s3: make bucket %q public: %w", cfg.Bucket, err)
		}
	}
	base := strings.TrimRight(cfg.PublicBaseURL, "/")
	if base == "" {
		ep := client.EndpointURL()
		base = ep.Scheme + "://" + ep.Host + "/" + cfg.Bucket
	}
	return &Store{client: client, bucket: cfg.Bucket, public: cfg.Public, publicBase: base}, nil
}

// Client exposes the underlying minio client for administrative tasks (health
// checks, bucket lifecycle rules) that the Store interface does not cover.
func (s *Store) Client() *minio.Client { return s.client }

// Bucket returns the bucket name, for logging and diagnostics.
func (s *Store) Bucket() string { return s.bucket }

// Public reports whether the bucket was configured as anonymously readable.
func (s *Store) Public() bool { return s.public }

// encodeMeta turns validated metadata into S3 user metadata. Values travel as
// HTTP headers, which only carry ASCII safely, so they are URL-encoded (and
// decoded again by decodeMeta); this keeps non-ASCII original filenames intact.
func encodeMeta(meta map[string]string) (map[string]string, error) {
	md, err := blob.NormalizeMetadata(meta)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(md))
	for k, v := range md {
		out[metaHeaderPrefix+k] = url.PathEscape(v)
	}
	return out, nil
}

// decodeMeta reverses encodeMeta. Values that are not valid URL encoding
// (written by other tools) are returned as stored.
func decodeMeta(um map[string]string) map[string]string {
	out := make(map[string]string, len(um))
	for k, v := range um {
		k = strings.TrimPrefix(strings.ToLower(k), metaHeaderPrefix)
		if d, err := url.PathUnescape(v); err == nil {
			v = d
		}
		out[k] = v
	}
	return out
}

func toInfo(oi minio.ObjectInfo) blob.Info {
	return blob.Info{
		Name:         oi.Key,
		Size:         oi.Size,
		ContentType:  oi.ContentType,
		LastModified: oi.LastModified.UTC(),
		ETag:         oi.ETag,
		Metadata:     decodeMeta(oi.UserMetadata),
	}
}

// mapErr converts "no such key" responses to blob.ErrNotFound.
func mapErr(op, name string, err error) error {
	if err == nil {
		return nil
	}
	resp := minio.ToErrorResponse(err)
	if resp.Code == minio.NoSuchKey || resp.StatusCode == http.StatusNotFound && resp.Code != minio.NoSuchBucket {
		return fmt.Errorf("blob/s3: %s %q: %w", op, name, blob.ErrNotFound)
	}
	return fmt.Errorf("blob/s3: %s %q: %w", op, name, err)
}

// Put streams r to the bucket. Objects up to one part are sent in a single
// request; larger or unknown-length streams use multipart upload with bounded
// part buffers. A failed upload leaves any previous object untouched.
func (s *Store) Put(ctx context.Context, name string, r io.Reader, size int64, contentType string, meta map[string]string) (blob.Info, error) {
	if err := blob.ValidateName(name); err != nil {
		return blob.Info{}, err
	}
	um, err := encodeMeta(meta)
	if err != nil {
		return blob.Info{}, err
	}
	if contentType == "" {
		contentType = blob.DefaultContentType
	}
	if size < 0 {
		size = -1
	}
	ui, err := s.client.PutObject(ctx, s.bucket, name, r, size, minio.PutObjectOptions{
		ContentType:  contentType,
		UserMetadata: um,
		PartSize:     partSize,
	})
	if err != nil {
		return blob.Info{}, fmt.Errorf("blob/s3: put %q: %w", name, err)
	}
	if size >= 0 && ui.Size != size {
		return blob.Info{}, fmt.Errorf("blob/s3: put %q: stored %d bytes, expected %d", name, ui.Size, size)
	}
	md, _ := blob.NormalizeMetadata(meta)
	lm := ui.LastModified
	if lm.IsZero() {
		lm = time.Now()
	}
	return blob.Info{
		Name:         name,
		Size:         ui.Size,
		ContentType:  contentType,
		LastModified: lm.UTC(),
		ETag:         ui.ETag,
		Metadata:     md,
	}, nil
}

// Get starts a streaming download. The first response is awaited so a
// missing object is reported here as ErrNotFound rather than on first Read.
func (s *Store) Get(ctx context.Context, name string) (io.ReadCloser, blob.Info, error) {
	if err := blob.ValidateName(name); err != nil {
		return nil, blob.Info{}, err
	}
	obj, err := s.client.GetObject(ctx, s.bucket, name, minio.GetObjectOptions{})
	if err != nil {
		return nil, blob.Info{}, mapErr("get", name, err)
	}
	oi, err := obj.Stat()
	if err != nil {
		obj.Close()
		return nil, blob.Info{}, mapErr("get", name, err)
	}
	return obj, toInfo(oi), nil
}

// Stat issues a HEAD request for the object.
func (s *Store) Stat(ctx context.Context, name string) (blob.Info, error) {
	if err := blob.ValidateName(name); err != nil {
		return blob.Info{}, err
	}
	oi, err := s.client.StatObject(ctx, s.bucket, name, minio.StatObjectOptions{})
	if err != nil {
		return blob.Info{}, mapErr("stat", name, err)
	}
	return toInfo(oi), nil
}

// List pages through ListObjectsV2. Pseudo-directory entries ("common
// prefixes") of non-recursive listings are dropped, as are zero-byte
// "folder/" marker objects created by some S3 consoles. Entries carry no
// ContentType or Metadata; use Stat for those.
func (s *Store) List(ctx context.Context, prefix string, recursive bool) ([]blob.Info, error) {
	if err := blob.ValidatePrefix(prefix); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the lister goroutine if we return early
	out := []blob.Info{}
	for oi := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: recursive}) {
		if oi.Err != nil {
			return nil, fmt.Errorf("blob/s3: list %q: %w", prefix, oi.Err)
		}
		if strings.HasSuffix(oi.Key, "/") {
			continue
		}
		out = append(out, blob.Info{
			Name:         oi.Key,
			Size:         oi.Size,
			LastModified: oi.LastModified.UTC(),
			ETag:         oi.ETag,
		})
	}
	return out, nil
}

// Delete checks that the object exists (S3 deletes of missing keys succeed
// silently) and then removes it.
func (s *Store) Delete(ctx context.Context, name string) error {
	if err := blob.ValidateName(name); err != nil {
		return err
	}
	if _, err := s.client.StatObject(ctx, s.bucket, name, minio.StatObjectOptions{}); err != nil {
		return mapErr("delete", name, err)
	}
	if err := s.client.RemoveObject(ctx, s.bucket, name, minio.RemoveObjectOptions{}); err != nil {
		return mapErr("delete", name, err)
	}
	return nil
}

// DeletePrefix lists the prefix recursively and removes the objects with
// batched multi-object deletes.
func (s *Store) DeletePrefix(ctx context.Context, prefix string) error {
	if prefix == "" {
		return fmt.Errorf("%w: empty prefix for DeletePrefix", blob.ErrInvalidName)
	}
	if err := blob.ValidatePrefix(prefix); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	objects := make(chan minio.ObjectInfo)
	listDone := make(chan struct{})
	var listErr error
	go func() {
		defer close(listDone)
		defer close(objects)
		for oi := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
			if oi.Err != nil {
				listErr = oi.Err
				return
			}
			select {
			case objects <- oi:
			case <-ctx.Done():
				return
			}
		}
	}()
	var errs []error
	for re := range s.client.RemoveObjects(ctx, s.bucket, objects, minio.RemoveObjectsOptions{}) {
		if re.Err != nil && minio.ToErrorResponse(re.Err).Code != minio.NoSuchKey {
			errs = append(errs, fmt.Errorf("%s: %w", re.ObjectName, re.Err))
		}
	}
	cancel() // unblocks the lister if RemoveObjects stopped early
	<-listDone
	if listErr != nil {
		errs = append(errs, listErr)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("blob/s3: delete prefix %q: %w", prefix, err)
	}
	return nil
}

// URL returns a direct object URL for a public bucket and a presigned GET URL
// otherwise. Presigned lifetimes are capped at S3's maximum of seven days.
func (s *Store) URL(ctx context.Context, name string, expires time.Duration) (string, error) {
	if err := blob.ValidateName(name); err != nil {
		return "", err
	}
	if s.public {
		return s.publicBase + "/" + s3utils.EncodePath(name), nil
	}
	if expires <= 0 {
		expires = blob.DefaultURLExpiry
	}
	expires = min(expires, maxPresignExpiry)
	u, err := s.client.PresignedGetObject(ctx, s.bucket, name, expires, nil)
	if err != nil {
		return "", fmt.Errorf("blob/s3: presign %q: %w", name, err)
	}
	return u.String(), nil
}
