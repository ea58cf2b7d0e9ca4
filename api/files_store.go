package api

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/internal/blob"
	"github.com/lorekb/lore/internal/deps"
)

// blobStore returns the configured store, or else the one deps.OpenBlob
// picks for the configuration (a local directory under the data dir unless
// S3 is configured), opened once.
func (s *Server) blobStore() (blob.Store, error) {
	if s.d.Blob != nil {
		return s.d.Blob, nil
	}
	fb := &s.fallback
	fb.blobOnce.Do(func() { fb.blob, fb.blobErr = deps.OpenBlob(context.Background(), s.d.Cfg) })
	if fb.blobErr != nil {
		s.log.Error("file storage unavailable", "err", fb.blobErr)
		return nil, Unavailable("file storage unavailable")
	}
	return fb.blob, nil
}

// blobError maps store errors to API errors: invalid names and metadata are
// 400, a missing object 404, anything else a logged 503.
func (s *Server) blobError(c *fiber.Ctx, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, blob.ErrInvalidName), errors.Is(err, blob.ErrInvalidMetadata):
		return BadRequest("%v", err)
	case errors.Is(err, blob.ErrNotFound):
		return NotFound("file")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	s.log.Error("file storage failed", "err", err, "path", c.Path(), "request_id", c.Locals(requestIDKey))
	return Unavailable("file storage unavailable")
}

// objectName reads the {object_name+} path parameter, URL-decodes it once and
// validates it (400 for traversal, absolute names, NUL and encoded tricks).
func objectName(c *fiber.Ctx) (string, error) {
	raw := param(c, "object_name")
	name, err := url.PathUnescape(raw)
	if err != nil {
		return "", BadRequest("object_name: invalid URL encoding")
	}
	if err := blob.ValidateName(name); err != nil {
		return "", BadRequest("object_name: %v", err)
	}
	return name, nil
}

// siteOfObject returns the site owning an object name "sites/<id>/...".
func siteOfObject(name string) (int64, bool) { return ownerOfObject(name, "sites/") }

// tenantOfObject returns the tenant owning an object name
// "tenants/<id>/...": the files a tenant's admins upload outside any site's
// folder (the reference admin app's covers/ folder names no site).
func tenantOfObject(name string) (int64, bool) { return ownerOfObject(name, "tenants/") }

// ownerOfObject reads the id after prefix in "<prefix><id>/...".
func ownerOfObject(name, prefix string) (int64, bool) {
	rest, found := strings.CutPrefix(name, prefix)
	if !found {
		return 0, false
	}
	seg, _, _ := strings.Cut(rest, "/")
	id, err := strconv.ParseInt(seg, 10, 64)
	if err != nil || id < 1 {
		return 0, false
	}
	return id, true
}

// adminObject reads the object name and checks the caller may manage it.
func (s *Server) adminObject(c *fiber.Ctx) (string, error) {
	name, err := objectName(c)
	if err != nil {
		return "", err
	}
	return name, checkAdminObject(c, name)
}

// downloadURLObject reads the object name the reference admin app derives
// from a file URL of Lore's by dropping the URL path's first segment: for
// "<public>/v1/files/<name>:download" it sends "files/<name>:download" (or
// "v1/files/<name>:download" when the public URL has a path). No stored name
// ends in ":download" (uploads end in an allowed extension), so such a name
// is read as that URL.
func downloadURLObject(name string) (string, bool) {
	rest, ok := strings.CutSuffix(name, ":download")
	if !ok {
		return "", false
	}
	if obj, ok := strings.CutPrefix(rest, "files/"); ok && obj != "" {
		return obj, true
	}
	if _, obj, ok := strings.Cut("/"+rest, "/v1/files/"); ok && obj != "" {
		return obj, true
	}
	return "", false
}

// checkAdminObject checks the caller may manage the object.
func checkAdminObject(c *fiber.Ctx, name string) error {
	// Objects of a site outside the caller's scope are 404 whether they
	// exist or not (as a missing file); so are objects outside sites/ for
	// all but platform admins (they belong to no tenant).
	if id, ok := siteOfObject(name); ok {
		if err := requireSite(c, id, SiteAdminUp); err != nil {
			return hiddenAs(err, NotFound("file"))
		}
	} else if !principal(c).canObject(name) {
		return NotFound("file")
	}
	return nil
}

// canObject reports whether an admin-surface caller may manage an object:
// objects under sites/<id>/ belong to that site, objects under
// tenants/<id>/ to that tenant's admins, every other object (the default
// uploads/ folder) to platform admins only.
func (p *Principal) canObject(name string) bool {
	if id, ok := siteOfObject(name); ok {
		return p.CanSite(id, SiteAdminUp)
	}
	if id, ok := tenantOfObject(name); ok && p.IsAdmin() && p.User.TenantID == id {
		return true
	}
	return p.IsPlatform()
}

// clientObject reads the object name and checks the reader may see it: files
// of a site need the site active and, when it has a password, the token.
func (s *Server) clientObject(c *fiber.Ctx) (string, error) {
	name, err := objectName(c)
	if err != nil {
		return "", err
	}
	if id, ok := siteOfObject(name); ok {
		if _, err := s.clientSite(c, id); err != nil {
			return "", err
		}
	}
	return name, nil
}

// fileURL returns a download URL for an object, or "" when the store cannot
// make one (for example a local store without a signer).
func (s *Server) fileURL(ctx context.Context, store blob.Store, name string, d time.Duration) string {
	u, err := store.URL(ctx, name, d)
	if err != nil {
		s.log.Debug("no file URL", "object", name, "err", err)
		return ""
	}
	return u
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// ---- upload -------------------------------------------------------------------
