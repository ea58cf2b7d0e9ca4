package api

import (
	"errors"
	"fmt"
	"mime"
	"mime/multipart"
	"path"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/lorekb/lore/internal/blob"
)

// uploadFolder reads and validates the destination folder (form field, then
// query, default uploads) and checks site folders against the caller.
func (s *Server) uploadFolder(c *fiber.Ctx, formValue string) (string, error) {
	folder := strings.TrimSpace(formValue)
	if folder == "" {
		var q FileUploadQuery
		if err := bindQuery(c, &q); err != nil {
			return "", err
		}
		folder = strings.TrimSpace(q.Folder)
	}
	if folder == "" {
		folder = defaultUploadFolder
	}
	folder = strings.TrimSuffix(folder, "/")
	if len(folder) > 512 {
		return "", BadRequest("folder: longer than 512 bytes")
	}
	bad := blob.ValidatePrefix(folder+"/") != nil || folder == ""
	for _, seg := range strings.Split(folder, "/") {
		bad = bad || strings.HasPrefix(seg, ".") // no hidden or reserved folders
	}
	if bad {
		return "", BadRequest("folder: %q is not a valid folder (a relative path whose segments do not start with '.')", truncate(folder, 80))
	}
	p := principal(c)
	if _, ok := siteOfObject(folder + "/"); !ok && !p.IsPlatform() {
		if _, ok := tenantOfObject(folder + "/"); ok {
			if !p.canObject(folder + "/") {
				return "", Invalid("folder: upload into your own tenant's or sites' folders")
			}
			return folder, nil
		}
		// A folder that names no site (the reference admin app uploads
		// covers to "covers") goes under the caller's own scope: the one
		// site of a site admin, or the tenant of a tenant admin.
		switch {
		case !p.IsAdmin() && len(p.Sites) == 1:
			for id := range p.Sites {
				folder = fmt.Sprintf("sites/%d/%s", id, folder)
			}
		case p.IsAdmin():
			return fmt.Sprintf("tenants/%d/%s", p.User.TenantID, folder), nil
		default:
			return "", Invalid("folder: upload into sites/<site_id>/ (you manage several sites; other folders are for tenant admins)")
		}
	}
	id, ok := siteOfObject(folder + "/")
	if !ok {
		return folder, nil // a platform admin's folder
	}
	if err := requireSite(c, id, SiteAdminUp); err != nil {
		return "", hiddenAs(err, BadRequest("folder: site %d does not exist", id))
	}
	if _, err := visibleSite(s.d.DB.GetSite(c.UserContext(), id)); err != nil {
		return "", BadRequest("folder: site %d does not exist", id)
	}
	return folder, nil
}

// allowedExt reports whether the (lower-case) extension may be uploaded.
func (s *Server) allowedExt(ext string) bool {
	for _, a := range s.d.Cfg.UploadAllowExt {
		if strings.EqualFold(strings.TrimPrefix(strings.TrimSpace(a), "."), ext) && ext != "" {
			return true
		}
	}
	return false
}

func (s *Server) allowedExtList() string {
	var out []string
	for _, a := range s.d.Cfg.UploadAllowExt {
		if a = strings.ToLower(strings.TrimPrefix(strings.TrimSpace(a), ".")); a != "" {
			out = append(out, a)
		}
	}
	return strings.Join(out, ", ")
}

// originalName returns the base name of an uploaded filename, refusing names
// that cannot be kept as metadata.
func originalName(raw string) (string, error) {
	name := path.Base(strings.ReplaceAll(strings.TrimSpace(raw), `\`, "/"))
	if name == "." || name == "/" || name == "" {
		return "", BadRequest("file: the upload has no filename")
	}
	if !utf8.ValidString(name) {
		return "", BadRequest("file: the filename is not valid UTF-8")
	}
	if utf8.RuneCountInString(name) > 255 {
		return "", BadRequest("file: the filename is longer than 255 characters")
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return "", BadRequest("file: the filename contains control characters")
		}
	}
	return name, nil
}

// putUpload checks one multipart file and streams it into the store.
func (s *Server) putUpload(c *fiber.Ctx, store blob.Store, folder string, fh *multipart.FileHeader) (FileUploadResult, error) {
	orig, err := originalName(fh.Filename)
	if err != nil {
		return FileUploadResult{}, err
	}
	ext := strings.ToLower(strings.TrimPrefix(path.Ext(orig), "."))
	if !s.allowedExt(ext) {
		if ext == "" {
			return FileUploadResult{}, BadRequest("file type not allowed: %q has no extension; allowed: %s", orig, s.allowedExtList())
		}
		return FileUploadResult{}, BadRequest("file type not allowed: .%s; allowed: %s", ext, s.allowedExtList())
	}
	if max := s.d.Cfg.UploadMaxBytes; max > 0 && fh.Size > max {
		return FileUploadResult{}, BadRequest("file too large: %d bytes; the limit is %d bytes", fh.Size, max)
	}
	ct := mime.TypeByExtension("." + ext)
	if ct == "" {
		ct = strings.TrimSpace(fh.Header.Get(fiber.HeaderContentType))
	}
	if ct == "" {
		ct = blob.DefaultContentType
	}
	name := folder + "/" + uuid.NewString() + "." + ext
	p := principal(c)
	meta := map[string]string{blob.MetaOriginalFilename: orig}
	if p != nil {
		meta["uploaded_by_id"] = strconv.FormatInt(p.User.ID, 10)
		meta["uploaded_by_email"] = p.User.Email
	}
	f, err := fh.Open()
	if err != nil {
		return FileUploadResult{}, fmt.Errorf("open upload: %w", err)
	}
	defer f.Close()
	info, err := store.Put(c.UserContext(), name, f, fh.Size, ct, meta)
	if err != nil {
		return FileUploadResult{}, s.blobError(c, err)
	}
	return FileUploadResult{ObjectName: info.Name, OriginalFilename: orig, Size: info.Size, ContentType: info.ContentType,
		URL: s.assetURL(c.UserContext(), store, info.Name)}, nil
}

// upload is the request of an upload route, read before anything is stored.
type upload struct {
	store  blob.Store
	form   *multipart.Form // removed by done
	files  []*multipart.FileHeader
	folder string
}

func (u *upload) done() { _ = u.form.RemoveAll() }

// readUpload reads the files of form field (1 to max of them; tooMany is the
// answer to more) and the folder they go to.
func (s *Server) readUpload(c *fiber.Ctx, field string, max int, tooMany string) (*upload, error) {
	store, err := s.blobStore()
	if err != nil {
		return nil, err
	}
	form, err := s.multipartForm(c, field)
	if err != nil {
		return nil, err
	}
	u := &upload{store: store, form: form, files: form.File[field]}
	if len(u.files) == 0 {
		err = Invalid("%s: field required", field)
	} else if len(u.files) > max {
		err = Invalid("%s", tooMany)
	} else {
		u.folder, err = s.uploadFolder(c, firstValue(form.Value["folder"]))
	}
	if err != nil {
		u.done()
		return nil, err
	}
	return u, nil
}

func (s *Server) uploadFile(c *fiber.Ctx) error {
	u, err := s.readUpload(c, "file", 1, "file: send one file (use files:batchUpload for several)")
	if err != nil {
		return err
	}
	defer u.done()
	res, err := s.putUpload(c, u.store, u.folder, u.files[0])
	if err != nil {
		return err
	}
	return ok(c, res)
}

func firstValue(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

func (s *Server) batchUpload(c *fiber.Ctx) error {
	u, err := s.readUpload(c, "files", maxBatchFiles, fmt.Sprintf("files: at most %d files per batch", maxBatchFiles))
	if err != nil {
		return err
	}
	defer u.done()
	out := BatchUploadResult{Results: []FileUploadResult{}, Errors: []FileUploadError{}}
	for _, fh := range u.files {
		res, err := s.putUpload(c, u.store, u.folder, fh)
		if err != nil {
			msg := "upload failed"
			var apiErr *Error
			if errors.As(err, &apiErr) {
				msg = apiErr.Msg
			} else {
				s.log.Error("batch upload failed", "file", fh.Filename, "err", err)
			}
			out.Errors = append(out.Errors, FileUploadError{Filename: fh.Filename, Error: msg})
			continue
		}
		out.Results = append(out.Results, res)
	}
	out.SuccessCount, out.ErrorCount = len(out.Results), len(out.Errors)
	return ok(c, out)
}

// ---- list, info, URLs, delete -------------------------------------------------
