package api

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/lorekb/lore/internal/blob"
	"github.com/lorekb/lore/internal/blob/local"
	"github.com/lorekb/lore/internal/deps"
)

// Files: uploads kept in the blob store (s.d.Blob). Uploaded objects get a
// generated name "<folder>/<uuid4>.<ext>"; the filename the user chose is
// kept in the object's metadata. Objects under "sites/<site_id>/" belong to
// that site: admins need the site, and client reads go through clientSite
// (active site, access token when the site has a password). Every object name
// from a request is URL-decoded once and checked with blob.ValidateName before
// the store is touched.

// defaultUploadFolder is the folder of uploads that name none.
const defaultUploadFolder = "uploads"

// maxBatchFiles bounds the files of one batch upload.
const maxBatchFiles = 100

// uploadURLExpiry is the lifetime of the URL returned with an upload.
const uploadURLExpiry = time.Hour

// FileUploadResult describes one stored upload.
type FileUploadResult struct {
	ObjectName       string `json:"object_name"`
	OriginalFilename string `json:"original_filename"`
	Size             int64  `json:"size"`
	ContentType      string `json:"content_type"`
	URL              string `json:"url"`
}

// FileUploadError is one failed file of a batch upload.
type FileUploadError struct {
	Filename string `json:"filename"`
	Error    string `json:"error"`
}

// BatchUploadResult is the result of files:batchUpload.
type BatchUploadResult struct {
	SuccessCount int                `json:"success_count"`
	ErrorCount   int                `json:"error_count"`
	Results      []FileUploadResult `json:"results"`
	Errors       []FileUploadError  `json:"errors"`
}

// FileItem is one object of files:list.
type FileItem struct {
	ObjectName   string     `json:"object_name"`
	Size         int64      `json:"size"`
	LastModified *time.Time `json:"last_modified"`
	ETag         string     `json:"etag"`
	ContentType  string     `json:"content_type"`
	URL          string     `json:"url"`
}

// FileInfo is the result of :info. The client version has no uploaded_by_*
// metadata.
type FileInfo struct {
	ObjectName   string            `json:"object_name"`
	Size         int64             `json:"size"`
	ContentType  string            `json:"content_type"`
	LastModified *time.Time        `json:"last_modified"`
	ETag         string            `json:"etag"`
	Metadata     map[string]string `json:"metadata" doc:"original_filename, uploaded_by_id, uploaded_by_email"`
	URL          string            `json:"url"`
}

// PresignedURL is the admin result of :presignedUrl.
type PresignedURL struct {
	ObjectName   string `json:"object_name"`
	URL          string `json:"url"`
	ExpiresHours int    `json:"expires_hours"`
}

// ClientPresignedURL is the client result of :presignedUrl.
type ClientPresignedURL struct {
	ObjectName string `json:"object_name"`
	URL        string `json:"url"`
}

// FileDeleted is the result of DELETE /files/{object_name}.
type FileDeleted struct {
	Message    string `json:"message"`
	ObjectName string `json:"object_name"`
}

// FileUploadForm documents the multipart body of files:upload.
type FileUploadForm struct {
	File   string `json:"file" format:"binary" validate:"required"`
	Folder string `json:"folder" required:"false" doc:"destination folder, default uploads"`
}

// FileBatchUploadForm documents the multipart body of files:batchUpload.
type FileBatchUploadForm struct {
	Files  []string `json:"files" format:"binary" validate:"required"`
	Folder string   `json:"folder" required:"false" doc:"destination folder, default uploads"`
}

// FileUploadQuery lets the folder be given in the query string too.
type FileUploadQuery struct {
	Folder string `query:"folder" doc:"destination folder (the form field wins), default uploads" validate:"max=512"`
}

// FileListQuery is the query of files:list.
type FileListQuery struct {
	PageQuery
	Prefix    string `query:"prefix" doc:"name prefix, e.g. uploads/ or sites/3/" validate:"max=1024"`
	Recursive *bool  `query:"recursive" doc:"include nested folders (default true)"`
}

// AdminPresignQuery is the admin query of :presignedUrl.
type AdminPresignQuery struct {
	ExpiresHours *int `query:"expires_hours" doc:"1..168, default 1" validate:"omitempty,min=1,max=168"`
}

// ClientPresignQuery is the client query of :presignedUrl.
type ClientPresignQuery struct {
	ExpiresHours *int `query:"expires_hours" doc:"1..24, default 1 (ignored for a public bucket)" validate:"omitempty,min=1,max=24"`
}

// SignedFileQuery is the query of a local signed download URL.
type SignedFileQuery struct {
	Expires string `query:"expires" doc:"expiry, Unix seconds" validate:"required,max=20"`
	Sig     string `query:"sig" doc:"HMAC-SHA256 signature" validate:"required,max=128"`
}

func (s *Server) fileRoutes() []Route {
	const obj = "/files/{object_name+}"
	return []Route{
		{Surface: Admin, Method: http.MethodPost, Path: "/files:upload", Tag: "files", Perm: SiteAdminUp, Multipart: true,
			Summary:     "Upload a file (multipart field file) into a folder (default uploads)",
			Description: "The object is stored as <folder>/<uuid4>.<ext>; the extension must be allowed and the size within LORE_UPLOAD_MAX_BYTES.",
			Query:       FileUploadQuery{}, Body: FileUploadForm{}, Response: FileUploadResult{}, Handler: s.uploadFile},
		{Surface: Admin, Method: http.MethodPost, Path: "/files:batchUpload", Tag: "files", Perm: SiteAdminUp, Multipart: true,
			Summary: "Upload several files (multipart field files); failures are reported per file",
			Query:   FileUploadQuery{}, Body: FileBatchUploadForm{}, Response: BatchUploadResult{}, Handler: s.batchUpload},
		{Surface: Admin, Method: http.MethodGet, Path: "/files:list", Tag: "files", Perm: SiteAdminUp,
			Summary: "List stored files by prefix", Query: FileListQuery{}, Response: Page[FileItem]{}, Handler: s.listFiles},
		{Surface: Admin, Method: http.MethodGet, Path: obj + ":download", Tag: "files", Perm: SiteAdminUp, Raw: "application/octet-stream",
			Summary: "Download a file (attachment)", Handler: s.adminDownload},
		{Surface: Admin, Method: http.MethodGet, Path: obj + ":info", Tag: "files", Perm: SiteAdminUp,
			Summary: "File information and metadata", Response: FileInfo{}, Handler: s.adminFileInfo},
		{Surface: Admin, Method: http.MethodGet, Path: obj + ":presignedUrl", Tag: "files", Perm: SiteAdminUp,
			Summary: "A temporary download URL (expires_hours 1..168)", Query: AdminPresignQuery{},
			Response: PresignedURL{}, Handler: s.adminPresign},
		{Surface: Admin, Method: http.MethodDelete, Path: obj, Tag: "files", Perm: SiteAdminUp,
			Summary: "Delete a file", Response: FileDeleted{}, Handler: s.deleteFile},

		{Surface: Client, Method: http.MethodGet, Path: obj + ":download", Tag: "files", Perm: Public, Raw: "application/octet-stream",
			Summary: "Download a file (files of a password-protected site need X-Site-Access-Token)", Handler: s.clientDownload},
		{Surface: Client, Method: http.MethodGet, Path: obj + ":info", Tag: "files", Perm: Public,
			Summary: "Basic file information", Response: FileInfo{}, Handler: s.clientFileInfo},
		{Surface: Client, Method: http.MethodGet, Path: obj + ":presignedUrl", Tag: "files", Perm: Public,
			Summary: "Access URL: direct for a public bucket, presigned otherwise (expires_hours 1..24)",
			Query:   ClientPresignQuery{}, Response: ClientPresignedURL{}, Handler: s.clientPresign},
		{Surface: Client, Method: http.MethodGet, Path: "/files-signed/{object_name+}", Tag: "files", Perm: Public, Raw: "application/octet-stream",
			Summary:     "Serve a signed URL of the local file store",
			Description: "The URLs come from :presignedUrl and uploads when files are stored locally; a tampered or expired signature is 403.",
			Query:       SignedFileQuery{}, Handler: s.signedDownload},
	}
}

// ---- helpers ----------------------------------------------------------------

// fallbackStores holds, per server, the store opened when the dependencies
// came without one (deps built by hand in tools and tests; deps.Open always
// sets Blob).
var fallbackStores sync.Map // *Server → *fallbackStore

type fallbackStore struct {
	once  sync.Once
	store blob.Store
	err   error
}

// blobStore returns the configured store, or else the one deps.OpenBlob
// picks for the configuration (a local directory under the data dir unless
// S3 is configured), opened once.
func (s *Server) blobStore() (blob.Store, error) {
	if s.d.Blob != nil {
		return s.d.Blob, nil
	}
	v, _ := fallbackStores.LoadOrStore(s, &fallbackStore{})
	fb := v.(*fallbackStore)
	fb.once.Do(func() { fb.store, fb.err = deps.OpenBlob(context.Background(), s.d.Cfg) })
	if fb.err != nil {
		s.log.Error("file storage unavailable", "err", fb.err)
		return nil, Unavailable("file storage unavailable")
	}
	return fb.store, nil
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
func siteOfObject(name string) (int64, bool) {
	rest, found := strings.CutPrefix(name, "sites/")
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
	if id, ok := siteOfObject(name); ok {
		if err := requireSite(c, id, SiteAdminUp); err != nil {
			return "", err
		}
	}
	return name, nil
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
	if id, ok := siteOfObject(folder + "/"); ok {
		if err := requireSite(c, id, SiteAdminUp); err != nil {
			return "", err
		}
		if _, err := visibleSite(s.d.DB.GetSite(c.UserContext(), id)); err != nil {
			return "", BadRequest("folder: site %d does not exist", id)
		}
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
		URL: s.fileURL(c.UserContext(), store, info.Name, uploadURLExpiry)}, nil
}

func (s *Server) uploadFile(c *fiber.Ctx) error {
	store, err := s.blobStore()
	if err != nil {
		return err
	}
	form, err := c.MultipartForm()
	if err != nil {
		return Invalid("file: a multipart/form-data body with field file is required")
	}
	files := form.File["file"]
	if len(files) == 0 {
		return Invalid("file: field required")
	}
	if len(files) > 1 {
		return Invalid("file: send one file (use files:batchUpload for several)")
	}
	folder, err := s.uploadFolder(c, firstValue(form.Value["folder"]))
	if err != nil {
		return err
	}
	res, err := s.putUpload(c, store, folder, files[0])
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
	store, err := s.blobStore()
	if err != nil {
		return err
	}
	form, err := c.MultipartForm()
	if err != nil {
		return Invalid("files: a multipart/form-data body with field files is required")
	}
	files := form.File["files"]
	if len(files) == 0 {
		return Invalid("files: field required")
	}
	if len(files) > maxBatchFiles {
		return Invalid("files: at most %d files per batch", maxBatchFiles)
	}
	folder, err := s.uploadFolder(c, firstValue(form.Value["folder"]))
	if err != nil {
		return err
	}
	out := BatchUploadResult{Results: []FileUploadResult{}, Errors: []FileUploadError{}}
	for _, fh := range files {
		res, err := s.putUpload(c, store, folder, fh)
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

func (s *Server) listFiles(c *fiber.Ctx) error {
	store, err := s.blobStore()
	if err != nil {
		return err
	}
	var q FileListQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	if err := q.Defaults(20, 100); err != nil {
		return err
	}
	if err := blob.ValidatePrefix(q.Prefix); err != nil {
		return BadRequest("prefix: %v", err)
	}
	recursive := q.Recursive == nil || *q.Recursive
	all, err := store.List(c.UserContext(), q.Prefix, recursive)
	if err != nil {
		return s.blobError(c, err)
	}
	p := principal(c)
	visible := all[:0]
	for _, it := range all {
		if id, ok := siteOfObject(it.Name); ok && !p.CanSite(id, SiteAdminUp) {
			continue
		}
		visible = append(visible, it)
	}
	total := len(visible)
	lo, hi := min(q.Offset(), total), min(q.Offset()+q.Limit(), total)
	out := make([]FileItem, 0, hi-lo)
	for _, it := range visible[lo:hi] {
		ct := it.ContentType
		if ct == "" {
			ct = mime.TypeByExtension(path.Ext(it.Name))
		}
		out = append(out, FileItem{ObjectName: it.Name, Size: it.Size, LastModified: timePtr(it.LastModified),
			ETag: it.ETag, ContentType: ct, URL: s.fileURL(c.UserContext(), store, it.Name, uploadURLExpiry)})
	}
	return paged(c, out, total, q.PageQuery)
}

func (s *Server) fileInfo(c *fiber.Ctx, name string, client bool) error {
	store, err := s.blobStore()
	if err != nil {
		return err
	}
	info, err := store.Stat(c.UserContext(), name)
	if err != nil {
		return s.blobError(c, err)
	}
	meta := map[string]string{}
	for k, v := range info.Metadata {
		if client && strings.HasPrefix(k, "uploaded_by_") {
			continue
		}
		meta[k] = v
	}
	return ok(c, FileInfo{ObjectName: info.Name, Size: info.Size, ContentType: info.ContentType,
		LastModified: timePtr(info.LastModified), ETag: info.ETag, Metadata: meta,
		URL: s.fileURL(c.UserContext(), store, info.Name, uploadURLExpiry)})
}

func (s *Server) adminFileInfo(c *fiber.Ctx) error {
	name, err := s.adminObject(c)
	if err != nil {
		return err
	}
	return s.fileInfo(c, name, false)
}

func (s *Server) clientFileInfo(c *fiber.Ctx) error {
	name, err := s.clientObject(c)
	if err != nil {
		return err
	}
	return s.fileInfo(c, name, true)
}

// presign checks the object exists and returns its URL valid for hours.
func (s *Server) presign(c *fiber.Ctx, name string, hours int) (string, error) {
	store, err := s.blobStore()
	if err != nil {
		return "", err
	}
	if _, err := store.Stat(c.UserContext(), name); err != nil {
		return "", s.blobError(c, err)
	}
	u, err := store.URL(c.UserContext(), name, time.Duration(hours)*time.Hour)
	if err != nil {
		return "", s.blobError(c, err)
	}
	return u, nil
}

func (s *Server) adminPresign(c *fiber.Ctx) error {
	name, err := s.adminObject(c)
	if err != nil {
		return err
	}
	var q AdminPresignQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	hours := 1
	if q.ExpiresHours != nil {
		hours = *q.ExpiresHours
	}
	u, err := s.presign(c, name, hours)
	if err != nil {
		return err
	}
	return ok(c, PresignedURL{ObjectName: name, URL: u, ExpiresHours: hours})
}

func (s *Server) clientPresign(c *fiber.Ctx) error {
	name, err := s.clientObject(c)
	if err != nil {
		return err
	}
	var q ClientPresignQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	hours := 1
	if q.ExpiresHours != nil {
		hours = *q.ExpiresHours
	}
	u, err := s.presign(c, name, hours)
	if err != nil {
		return err
	}
	return ok(c, ClientPresignedURL{ObjectName: name, URL: u})
}

func (s *Server) deleteFile(c *fiber.Ctx) error {
	name, err := s.adminObject(c)
	if err != nil {
		return err
	}
	store, err := s.blobStore()
	if err != nil {
		return err
	}
	if err := store.Delete(c.UserContext(), name); err != nil {
		return s.blobError(c, err)
	}
	return ok(c, FileDeleted{Message: "File deleted", ObjectName: name})
}

// ---- downloads ----------------------------------------------------------------

// contentDisposition builds the header for a download: an ASCII fallback
// filename and the exact UTF-8 name in RFC 5987 form.
func contentDisposition(kind, filename string) string {
	var ascii strings.Builder
	for _, r := range filename {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			ascii.WriteByte('_')
			continue
		}
		ascii.WriteRune(r)
	}
	var enc strings.Builder
	for _, b := range []byte(filename) {
		if b < 0x80 && (unicode.IsLetter(rune(b)) || unicode.IsDigit(rune(b)) || strings.IndexByte("!#$&+-.^_`|~", b) >= 0) {
			enc.WriteByte(b)
			continue
		}
		fmt.Fprintf(&enc, "%%%02X", b)
	}
	return kind + `; filename="` + ascii.String() + `"; filename*=UTF-8''` + enc.String()
}

// streamObject sends an object's content without buffering it: kind is
// "attachment" for downloads, "inline" for signed URLs (which are sandboxed
// so an uploaded SVG or HTML file cannot run script on the API's origin).
func (s *Server) streamObject(c *fiber.Ctx, name, kind string) error {
	store, err := s.blobStore()
	if err != nil {
		return err
	}
	rc, info, err := store.Get(c.UserContext(), name)
	if err != nil {
		return s.blobError(c, err)
	}
	filename := info.Metadata[blob.MetaOriginalFilename]
	if filename == "" {
		filename = path.Base(name)
	}
	ct := info.ContentType
	if ct == "" {
		ct = blob.DefaultContentType
	}
	c.Set(fiber.HeaderContentType, ct)
	c.Set(fiber.HeaderContentDisposition, contentDisposition(kind, filename))
	c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
	c.Set(fiber.HeaderContentSecurityPolicy, "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; sandbox")
	if info.ETag != "" {
		c.Set(fiber.HeaderETag, `"`+strings.Trim(info.ETag, `"`)+`"`)
	}
	if !info.LastModified.IsZero() {
		c.Set(fiber.HeaderLastModified, info.LastModified.UTC().Format(http.TimeFormat))
	}
	// fasthttp closes the reader once the body is sent.
	return c.SendStream(rc, int(info.Size))
}

func (s *Server) adminDownload(c *fiber.Ctx) error {
	name, err := s.adminObject(c)
	if err != nil {
		return err
	}
	return s.streamObject(c, name, "attachment")
}

func (s *Server) clientDownload(c *fiber.Ctx) error {
	name, err := s.clientObject(c)
	if err != nil {
		return err
	}
	return s.streamObject(c, name, "attachment")
}

// signedDownload serves the local store's signed URLs (deps.SignedFilesPath):
// the signature is the authorisation, so no site token is needed.
func (s *Server) signedDownload(c *fiber.Ctx) error {
	store, err := s.blobStore()
	if err != nil {
		return err
	}
	ls, isLocal := store.(*local.Store)
	if !isLocal {
		return ErrNotFound
	}
	name, err := objectName(c)
	if err != nil {
		return err
	}
	var q SignedFileQuery
	if err := bindQuery(c, &q); err != nil {
		return Errf(http.StatusForbidden, "invalid or missing URL signature")
	}
	switch err := ls.VerifySigned(name, q.Expires, q.Sig, time.Now()); {
	case err == nil:
	case errors.Is(err, local.ErrExpired):
		return Errf(http.StatusForbidden, "the signed URL has expired")
	case errors.Is(err, local.ErrBadSignature):
		return Errf(http.StatusForbidden, "invalid URL signature")
	case errors.Is(err, local.ErrNoSigner):
		return ErrNotFound
	default:
		return s.blobError(c, err)
	}
	return s.streamObject(c, name, "inline")
}
