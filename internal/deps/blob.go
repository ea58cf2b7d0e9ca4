package deps

import (
	"context"
	"crypto/sha256"
	"path/filepath"
	"strings"

	"github.com/lorekb/lore/internal/blob"
	localblob "github.com/lorekb/lore/internal/blob/local"
	"github.com/lorekb/lore/internal/blob/s3"
	"github.com/lorekb/lore/internal/config"
)

// SignedFilesPath is the Client API route that serves the local store's signed URLs.
const SignedFilesPath = "/v1/files-signed"

// PublicBaseURL is the externally visible base URL of the API.
func PublicBaseURL(cfg *config.Config) string {
	if cfg.PublicURL != "" {
		return strings.TrimRight(cfg.PublicURL, "/")
	}
	if strings.HasPrefix(cfg.HTTPAddr, ":") {
		return "http://127.0.0.1" + cfg.HTTPAddr
	}
	return "http://" + cfg.HTTPAddr
}

// FileSigningKey derives the HMAC key of signed file URLs from the JWT secret.
func FileSigningKey(cfg *config.Config) []byte {
	k := sha256.Sum256([]byte("lore-files:" + cfg.JWTSecret))
	return k[:]
}

// OpenBlob picks MinIO/S3 when S3_ENDPOINT is set, else a local directory.
func OpenBlob(ctx context.Context, cfg *config.Config) (blob.Store, error) {
	if cfg.S3Endpoint != "" {
		return s3.New(ctx, s3.Config{Endpoint: cfg.S3Endpoint, AccessKey: cfg.S3AccessKey, SecretKey: cfg.S3SecretKey,
			Bucket: cfg.S3Bucket, Region: cfg.S3Region, UseSSL: cfg.S3UseSSL, Public: cfg.S3Public, PublicBaseURL: cfg.S3PublicBaseURL})
	}
	return localblob.New(filepath.Join(cfg.DataDir, "files"), localblob.Signer{
		BaseURL: PublicBaseURL(cfg) + SignedFilesPath, Secret: FileSigningKey(cfg)})
}
