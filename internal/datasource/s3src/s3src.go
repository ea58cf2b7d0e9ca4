// Package s3src is the external data source: a bucket (and optional prefix)
// on any S3-compatible server, reached with minio-go. Unlike the object
// store of blob/s3 it never creates buckets or changes their policy: the
// bucket is someone else's.
package s3src

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/lorekb/lore/internal/blob"
	"github.com/lorekb/lore/internal/datasource"
)

// Config is an external bucket as a data source stores it.
type Config struct {
	Endpoint  string `json:"endpoint"` // host[:port] or http(s)://host[:port]
	Bucket    string `json:"bucket"`
	Prefix    string `json:"prefix"` // folder inside the bucket, "" or ending in "/"
	AccessKey string `json:"access_key"`
	SecretKey string `json:"secret_key"`
	Region    string `json:"region"`
	UseSSL    bool   `json:"use_ssl"`
}

// Validate reports the first missing or malformed field.
func (c Config) Validate() error {
	switch {
	case strings.TrimSpace(c.Endpoint) == "":
		return errors.New("config.endpoint: required")
	case strings.TrimSpace(c.Bucket) == "":
		return errors.New("config.bucket: required")
	case c.AccessKey == "" || c.SecretKey == "":
		return errors.New("config.access_key and config.secret_key: required")
	}
	if _, _, err := c.hostSecure(); err != nil {
		return err
	}
	if c.Prefix != "" {
		if err := datasource.CheckPrefix(c.Prefix); err != nil {
			return fmt.Errorf("config.prefix: %v", err)
		}
	}
	return nil
}

func (c Config) hostSecure() (string, bool, error) {
	ep, secure := strings.TrimSpace(c.Endpoint), c.UseSSL
	if strings.Contains(ep, "://") {
		u, err := url.Parse(ep)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return "", false, errors.New("config.endpoint: an http(s)://host[:port] URL or host[:port]")
		}
		ep, secure = u.Host, u.Scheme == "https"
	}
	if strings.ContainsAny(ep, "/?#@ ") {
		return "", false, errors.New("config.endpoint: host[:port] without a path")
	}
	return ep, secure, nil
}

// URL is the endpoint as an http(s) URL (the scheme from use_ssl unless the
// endpoint names one), for the outbound-address check made when the data
// source is saved.
func (c Config) URL() (string, error) {
	host, secure, err := c.hostSecure()
	if err != nil {
		return "", err
	}
	if secure {
		return "https://" + host, nil
	}
	return "http://" + host, nil
}

// Source is one bucket.
type Source struct {
	client *minio.Client
	bucket string
	root   string
}

var _ datasource.Source = (*Source)(nil)

// New builds the client; transport, when non-nil, carries every request
// (the outbound-address guard).
func New(c Config, transport http.RoundTripper) (*Source, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	host, secure, _ := c.hostSecure()
	cl, err := minio.New(host, &minio.Options{Creds: credentials.NewStaticV4(c.AccessKey, c.SecretKey, ""),
		Secure: secure, Region: c.Region, Transport: transport, MaxRetries: 1})
	if err != nil {
		return nil, fmt.Errorf("config.endpoint: %v", err)
	}
	return &Source{client: cl, bucket: c.Bucket, root: c.Prefix}, nil
}

// Browse implements datasource.Source.
func (s *Source) Browse(ctx context.Context, prefix string) ([]datasource.Entry, error) {
	if err := datasource.CheckPrefix(prefix); err != nil {
		return nil, err
	}
	out := []datasource.Entry{}
	for obj := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.root + prefix}) {
		if obj.Err != nil {
			return nil, mapErr(obj.Err)
		}
		if len(out) >= datasource.MaxListing {
			break
		}
		key := strings.TrimPrefix(obj.Key, s.root)
		name := strings.TrimPrefix(key, prefix)
		if strings.HasSuffix(key, "/") {
			if name = strings.TrimSuffix(name, "/"); name != "" {
				out = append(out, datasource.Entry{Name: name, Path: key, Type: datasource.TypeDir})
			}
			continue
		}
		size, mod := obj.Size, obj.LastModified.UTC()
		out = append(out, datasource.Entry{Name: name, Path: key, Type: datasource.TypeFile, Size: &size, LastModified: &mod})
	}
	datasource.Sort(out)
	return out, nil
}

// Get implements datasource.Source.
func (s *Source) Get(ctx context.Context, key string) (io.ReadCloser, int64, error) {
	if err := datasource.CheckKey(key); err != nil {
		return nil, 0, err
	}
	obj, err := s.client.GetObject(ctx, s.bucket, s.root+key, minio.GetObjectOptions{})
	if err != nil {
		return nil, 0, mapErr(err)
	}
	st, err := obj.Stat()
	if err != nil {
		obj.Close()
		return nil, 0, mapErr(err)
	}
	return obj, st.Size, nil
}

// Put implements datasource.Source.
func (s *Source) Put(ctx context.Context, key string, r io.Reader, size int64, contentType string) (datasource.Entry, error) {
	if err := datasource.CheckKey(key); err != nil {
		return datasource.Entry{}, err
	}
	info, err := s.client.PutObject(ctx, s.bucket, s.root+key, r, size, minio.PutObjectOptions{ContentType: contentType, PartSize: 16 << 20})
	if err != nil {
		return datasource.Entry{}, mapErr(err)
	}
	name := key[strings.LastIndex(key, "/")+1:]
	mod := info.LastModified.UTC()
	return datasource.Entry{Name: name, Path: key, Type: datasource.TypeFile, Size: &info.Size, LastModified: &mod}, nil
}

// Delete implements datasource.Source; S3 deletes are silent about missing
// keys, so the key is looked up first to answer not found.
func (s *Source) Delete(ctx context.Context, key string) error {
	if err := datasource.CheckKey(key); err != nil {
		return err
	}
	if _, err := s.client.StatObject(ctx, s.bucket, s.root+key, minio.StatObjectOptions{}); err != nil {
		return mapErr(err)
	}
	return mapErr(s.client.RemoveObject(ctx, s.bucket, s.root+key, minio.RemoveObjectOptions{}))
}

// Check implements datasource.Source.
func (s *Source) Check(ctx context.Context) error {
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return mapErr(err)
	}
	if !ok {
		return fmt.Errorf("bucket %q does not exist", s.bucket)
	}
	return nil
}

func mapErr(err error) error {
	if err == nil {
		return nil
	}
	switch minio.ToErrorResponse(err).Code {
	case "NoSuchKey", "NotFound":
		return fmt.Errorf("%w: %v", blob.ErrNotFound, err)
	}
	return err
}
