package api

import (
	"errors"
	"fmt"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
	"unicode"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/internal/blob"
	"github.com/lorekb/lore/internal/blob/local"
)

// Files: uploads kept in the blob store (s.d.Blob). Uploaded objects get a
// generated name "<folder>/<uuid4>.<ext>"; the filename the user chose is
// kept in the object's metadata. Objects under "sites/<site_id>/" belong to
// that site: site admins manage only their sites' objects, every other object
// (the default uploads/ folder) is managed by admins only (others get 404 as
// for a missing file); client reads of site objects go through clientSite
// (active site, access token when the site has a password). Every object name
// from a request is URL-decoded once and checked with blob.ValidateName before
// the store is touched.

// defaultUploadFolder is the folder of uploads that name none.
const defaultUploadFolder = "uploads"

// maxBatchFiles bounds the files of one batch upload.
const maxBatchFiles = 100

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
			Summary: "Delete a file", Description: "Also takes the name the reference admin app derives from a download URL (`files/<object_name>:download`).",
			Response: FileDeleted{}, Handler: s.deleteFile},

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
		{Surface: Admin, Method: http.MethodGet, Path: "/files", Tag: "files", Perm: SiteAdminUp,
			Summary: "List files (the reference's path of files:list)", Query: FileListQuery{},
			Response: Page[FileItem]{}, Handler: s.listFiles},
	}
}

// ---- helpers ----------------------------------------------------------------

func (s *Server) listFiles(c *fiber.Ctx) error {
	store, err := s.blobStore()
	if err != nil {
		return err
	}
	var q FileListQuery
	if err := bindPage(c, &q, 20, 100); err != nil {
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
		if !p.canObject(it.Name) {
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
			ETag: it.ETag, ContentType: ct, URL: s.assetURL(c.UserContext(), store, it.Name)})
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
		URL: s.assetURL(c.UserContext(), store, info.Name)})
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

// presignQuery is the query of :presignedUrl on either surface (they bound
// expires_hours differently).
type presignQuery interface{ hours() *int }

func (q *AdminPresignQuery) hours() *int  { return q.ExpiresHours }
func (q *ClientPresignQuery) hours() *int { return q.ExpiresHours }

// presign reads the object name (by the surface's object), binds the query,
// checks the object exists and returns its URL valid for the hours asked (1
// when none).
func (s *Server) presign(c *fiber.Ctx, object func(*fiber.Ctx) (string, error), q presignQuery) (name, u string, hours int, err error) {
	if name, err = object(c); err != nil {
		return "", "", 0, err
	}
	if err := bindQuery(c, q); err != nil {
		return "", "", 0, err
	}
	hours = 1
	if h := q.hours(); h != nil {
		hours = *h
	}
	store, err := s.blobStore()
	if err != nil {
		return "", "", 0, err
	}
	if _, err := store.Stat(c.UserContext(), name); err != nil {
		return "", "", 0, s.blobError(c, err)
	}
	if u, err = store.URL(c.UserContext(), name, time.Duration(hours)*time.Hour); err != nil {
		return "", "", 0, s.blobError(c, err)
	}
	return name, u, hours, nil
}

func (s *Server) adminPresign(c *fiber.Ctx) error {
	name, u, hours, err := s.presign(c, s.adminObject, &AdminPresignQuery{})
	if err != nil {
		return err
	}
	return ok(c, PresignedURL{ObjectName: name, URL: u, ExpiresHours: hours})
}

func (s *Server) clientPresign(c *fiber.Ctx) error {
	name, u, _, err := s.presign(c, s.clientObject, &ClientPresignQuery{})
	if err != nil {
		return err
	}
	return ok(c, ClientPresignedURL{ObjectName: name, URL: u})
}

func (s *Server) deleteFile(c *fiber.Ctx) error {
	name, err := objectName(c)
	if err != nil {
		return err
	}
	// The reference's document editor deletes a replaced cover by a name
	// it derives from the cover's URL.
	if obj, ok := downloadURLObject(name); ok {
		if err := blob.ValidateName(obj); err != nil {
			return BadRequest("object_name: %v", err)
		}
		name = obj
	}
	if err := checkAdminObject(c, name); err != nil {
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
