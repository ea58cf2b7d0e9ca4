package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/models"
)

// DocumentCollection is the collection of a document with its ancestors
// (root first, excluding itself) and the " > "-joined path including itself.
type DocumentCollection struct {
	ID        int64           `json:"id"`
	Title     string          `json:"title"`
	ParentID  *int64          `json:"parent_id"`
	Ancestors []CollectionRef `json:"ancestors"`
	Path      string          `json:"path"`
}

// CollectionRef names one ancestor collection.
type CollectionRef struct {
	ID    int64  `json:"id"`
	Title string `json:"title"`
}

// DocumentResponse is a document as both surfaces show it (WIRE §2); every
// key is always present. content is null in lists with exclude_content;
// site_name, site_slug and tenant_slug are filled in details and in client
// lists with include_site_info, null otherwise.
type DocumentResponse struct {
	ID           int64               `json:"id"`
	CreatedAt    time.Time           `json:"created_at"`
	UpdatedAt    time.Time           `json:"updated_at"`
	Title        string              `json:"title"`
	TenantID     int64               `json:"tenant_id"`
	Content      *string             `json:"content"`
	Summary      *string             `json:"summary" doc:"null when empty"`
	CoverImage   *string             `json:"cover_image" doc:"null when empty"`
	SiteID       int64               `json:"site_id"`
	CollectionID *int64              `json:"collection_id"`
	Category     *string             `json:"category" doc:"null when empty"`
	Author       string              `json:"author"`
	Status       string              `json:"status" enum:"draft,published"`
	VectorStatus string              `json:"vector_status" enum:"none,pending,processing,completed,failed,outdated"`
	Tags         []string            `json:"tags"`
	Views        int64               `json:"views"`
	ReadingTime  int                 `json:"reading_time" doc:"minutes"`
	VectorError  *string             `json:"vector_error"`
	VectorizedAt *time.Time          `json:"vectorized_at"`
	ChunkCount   int                 `json:"chunk_count" doc:"chunks stored for the vectorized version"`
	Version      int64               `json:"content_version" doc:"bumped on every title or content edit"`
	SiteName     *string             `json:"site_name"`
	SiteSlug     *string             `json:"site_slug"`
	TenantSlug   *string             `json:"tenant_slug"`
	Collection   *DocumentCollection `json:"collection"`
	ParseMeta    map[string]any      `json:"parse_meta"`
	// Sync is a synced document's provenance (admin detail only): its data
	// source, path or URL, commit or ETag, when, and whether it was edited
	// in Lore since (the edit rule says what the next sync does then).
	Sync map[string]any `json:"sync,omitempty" doc:"synced documents (admin detail): data_source_id, key (path or URL), ref (commit or ETag), synced_at, edited_in_lore, edit_rule"`
}

// AdminDocumentQuery is the query of the admin document list.
type AdminDocumentQuery struct {
	PageQuery
	SiteID         int64  `query:"site_id" validate:"min=0"`
	CollectionID   int64  `query:"collection_id" doc:"this collection and all its descendants" validate:"min=0"`
	Status         string `query:"status" validate:"omitempty,oneof=draft published"`
	VectorStatus   string `query:"vector_status" validate:"omitempty,oneof=none pending processing completed failed outdated"`
	Keyword        string `query:"keyword" doc:"case-insensitive substring of title, summary, tags or content" validate:"max=200"`
	OrderBy        string `query:"order_by" doc:"created_at (default) | updated_at | views | title" validate:"omitempty,oneof=created_at updated_at views title"`
	OrderDir       string `query:"order_dir" doc:"asc | desc (default)" validate:"omitempty,oneof=asc desc"`
	ExcludeContent *bool  `query:"exclude_content" doc:"omit content (null) from the list; default true, as the reference"`
}

// ClientDocumentQuery is the query of the client document list.
type ClientDocumentQuery struct {
	PageQuery
	ClientTenantQuery
	SiteID          int64  `query:"site_id" validate:"min=0"`
	CollectionID    int64  `query:"collection_id" doc:"this collection and all its descendants" validate:"min=0"`
	Keyword         string `query:"keyword" doc:"case-insensitive substring of title, summary, tags or content" validate:"max=200"`
	ExcludeContent  *bool  `query:"exclude_content" doc:"omit content (null); default true"`
	IncludeSiteInfo bool   `query:"include_site_info" doc:"fill site_name, site_slug and tenant_slug"`
	OrderBy         string `query:"order_by" doc:"created_at (default) | updated_at | views" validate:"omitempty,oneof=created_at updated_at views"`
	OrderDir        string `query:"order_dir" doc:"asc | desc (default)" validate:"omitempty,oneof=asc desc"`
}

// ClientDocumentDetailQuery optionally pins the document to a site or tenant.
type ClientDocumentDetailQuery struct {
	SiteID int64 `query:"site_id" doc:"when given, the document must belong to this site" validate:"min=0"`
	ClientTenantQuery
}

// DocumentCreate is the body of POST /documents.
type DocumentCreate struct {
	NewItem
	CollectionID *int64         `json:"collection_id" doc:"a collection of the same site" validate:"omitempty,min=1"`
	Author       string         `json:"author" validate:"max=100"`
	Content      string         `json:"content" doc:"Markdown"`
	Summary      string         `json:"summary" validate:"max=5000"`
	CoverImage   string         `json:"cover_image" validate:"max=1000"`
	Category     string         `json:"category" validate:"max=100"`
	Status       string         `json:"status" doc:"draft (default) | published" validate:"omitempty,oneof=draft published"`
	VectorStatus string         `json:"vector_status" enum:"none,pending" doc:"none (default): the server decides; pending: vectorize now as :vectorize does (site_admin or admin); the other states are the server's (422)" validate:"omitempty,oneof=none pending"`
	Tags         []string       `json:"tags" validate:"max=50,dive,max=50"`
	ParseMeta    map[string]any `json:"parse_meta" doc:"parser metadata, a JSON object or null; shown by document details (null in lists)"`
}

// DocumentUpdate is the body of PUT /documents/{id}; absent fields are kept,
// collection_id null detaches the document from its collection, and null
// clears summary, cover_image and category.
type DocumentUpdate struct {
	Title        *string   `json:"title" validate:"omitempty,max=200"`
	CollectionID *int64    `json:"collection_id" validate:"omitempty,min=1"`
	Author       *string   `json:"author" validate:"omitempty,max=100"`
	Content      *string   `json:"content"`
	Summary      *string   `json:"summary" validate:"omitempty,max=5000"`
	CoverImage   *string   `json:"cover_image" validate:"omitempty,max=1000"`
	Category     *string   `json:"category" validate:"omitempty,max=100"`
	Status       *string   `json:"status" validate:"omitempty,oneof=draft published"`
	VectorStatus *string   `json:"vector_status" enum:"none,pending" doc:"none: the server decides; pending: vectorize now as :vectorize does (site_admin or admin); the other states are the server's (422)" validate:"omitempty,oneof=none pending"`
	Tags         *[]string `json:"tags" validate:"omitempty,max=50,dive,max=50"`
}

func (s *Server) documentRoutes() []Route {
	return []Route{
		{Surface: Admin, Method: http.MethodGet, Path: "/documents", Tag: "documents", Perm: EditorUp,
			Summary: "List documents (non-admins: their assigned sites)", Query: AdminDocumentQuery{},
			Response: Page[DocumentResponse]{}, Handler: s.listDocumentsAdmin},
		{Surface: Admin, Method: http.MethodGet, Path: "/documents/{id}", Tag: "documents", Perm: EditorUp,
			Summary: "Get a document with its site and collection path", Response: DocumentResponse{}, Handler: s.getDocumentAdmin},
		{Surface: Admin, Method: http.MethodPost, Path: "/documents", Tag: "documents", Perm: EditorUp, Created: true,
			Summary: "Create a document", Body: DocumentCreate{}, Response: DocumentWritten{}, Handler: s.createDocument},
		{Surface: Admin, Method: http.MethodPut, Path: "/documents/{id}", Tag: "documents", Perm: EditorUp,
			Summary:     "Update a document",
			Description: "Changing the title or content bumps the content version; a document whose vector_status was completed becomes outdated.",
			Body:        DocumentUpdate{}, Response: DocumentWritten{}, Handler: s.updateDocument},
		{Surface: Admin, Method: http.MethodDelete, Path: "/documents/{id}", Tag: "documents", Perm: SiteAdminUp,
			Summary: "Delete a document and its vectors", Response: MessageWithJob{}, Handler: s.deleteDocument},
		{Surface: Client, Method: http.MethodGet, Path: "/documents", Tag: "documents", Perm: Public,
			Summary: "List published documents of active sites", Query: ClientDocumentQuery{},
			Description: "Without site_id, documents of private sites and of sites behind a password are left out. " + privateSiteDoc,
			Response:    Page[DocumentResponse]{}, Handler: s.listDocumentsClient},
		{Surface: Client, Method: http.MethodGet, Path: "/documents/{id}", Tag: "documents", Perm: Public,
			Summary:     "Get a published document; counts a view (IP, user agent, referer)",
			Description: privateSiteDoc,
			Query:       ClientDocumentDetailQuery{}, Response: DocumentResponse{}, Handler: s.getDocumentClient},
	}
}

// --- view counting and the client detail cache ---

// loadDocument reads the {id} document and checks the caller's right on its
// site at level need.
func (s *Server) loadDocument(c *fiber.Ctx, need Perm) (*models.Document, error) {
	return loadScoped(c, need, "document", s.d.DB.GetDocument, func(d *models.Document) int64 { return d.SiteID })
}

// afterSave runs the vectorization hook of a committed write, or, when the
// body asked for it (vector_status pending, see vectorRequest), starts the
// document's vectorization as :vectorize does instead. The write is already
// committed, so a failure is logged rather than turned into an error
// response that would invite the client to repeat the write (a failed start
// leaves the document failed with its vector_error).
func (s *Server) afterSave(c *fiber.Ctx, before, after *models.Document, vectorize bool) {
	if vectorize {
		if _, err := s.queueVectorize(c, after); err != nil {
			s.log.Warn("requested vectorization not started", "document_id", after.ID, "err", err,
				"request_id", c.Locals(requestIDKey))
		}
		return
	}
	if err := s.afterDocumentSave(c, before, after); err != nil {
		s.log.Warn("after document save hook failed", "document_id", after.ID, "err", err,
			"request_id", c.Locals(requestIDKey))
	}
}

// --- admin handlers ---

func (s *Server) listDocumentsAdmin(c *fiber.Ctx) error {
	var q AdminDocumentQuery
	if err := bindPage(c, &q, 10, 1000); err != nil {
		return err
	}
	exclude := q.ExcludeContent == nil || *q.ExcludeContent
	f := db.DocumentFilter{Status: q.Status, VectorStatus: q.VectorStatus, Keyword: q.Keyword,
		OrderBy: q.OrderBy, OrderDir: q.OrderDir, ExcludeContent: exclude,
		Limit: q.Limit(), Offset: q.Offset()}
	if q.SiteID > 0 {
		if _, err := s.adminSite(c, q.SiteID, EditorUp); err != nil {
			return err
		}
		f.SiteID = q.SiteID
	} else {
		f.SiteIDs = principal(c).SiteFilter()
	}
	return s.documentPage(c, f, q.CollectionID, !exclude, false, q.PageQuery)
}

// documentPage writes the page of documents the filter selects, narrowed to
// the collection and its descendants when one is given.
func (s *Server) documentPage(c *fiber.Ctx, f db.DocumentFilter, collectionID int64, withContent, withSite bool, page PageQuery) error {
	if collectionID > 0 {
		ids, err := s.d.DB.CollectionWithDescendants(c.UserContext(), collectionID)
		if err != nil {
			return err
		}
		f.CollectionIDs = ids
	}
	docs, total, err := s.d.DB.ListDocuments(c.UserContext(), f)
	if err != nil {
		return err
	}
	out, err := s.documentResponses(c, docs, withContent, withSite)
	if err != nil {
		return err
	}
	return paged(c, out, total, page)
}

func (s *Server) getDocumentAdmin(c *fiber.Ctx) error {
	doc, err := s.loadDocument(c, EditorUp)
	if err != nil {
		return err
	}
	return s.respondDetail(c, doc.ID, false)
}

// respondDetail reads the document with its site and writes its detail.
func (s *Server) respondDetail(c *fiber.Ctx, id int64, create bool) error {
	row, err := s.d.DB.GetDocumentWithSite(c.UserContext(), id)
	if errors.Is(err, db.ErrNotFound) {
		return NotFound("document")
	}
	if err != nil {
		return err
	}
	out, err := s.documentDetail(c, row)
	if err != nil {
		return err
	}
	out.Sync = s.syncProvenance(c.UserContext(), &row.Document)
	if create {
		return created(c, DocumentWritten{DocumentResponse: out, JobID: startedJob(c)})
	}
	if c.Method() == http.MethodPut {
		return ok(c, DocumentWritten{DocumentResponse: out, JobID: startedJob(c)})
	}
	return ok(c, out)
}

// DocumentWritten is the answer to a document create or update: the
// document, and the job the write started (its vectorization, or the removal
// of its vectors on unpublish), null when it started none.
type DocumentWritten struct {
	DocumentResponse
	JobID *string `json:"job_id" doc:"GET /jobs/{job_id} (or :watch) follows it"`
}

// MessageWithJob is a message with the job the request started (null when
// none).
type MessageWithJob struct {
	Message string  `json:"message"`
	JobID   *string `json:"job_id"`
}

// startedJob is the id of the job this request started, if any.
func startedJob(c *fiber.Ctx) *string {
	if id, ok := c.Locals(jobIDKey).(string); ok && id != "" {
		return &id
	}
	return nil
}

func (s *Server) createDocument(c *fiber.Ctx) error {
	var in DocumentCreate
	title, site, err := s.bindNewItem(c, &in)
	if err != nil {
		return err
	}
	vectorize, err := s.vectorRequest(c, site.ID, in.VectorStatus)
	if err != nil {
		return err
	}
	status := in.Status
	if status == "" {
		status = models.DocDraft
	}
	doc := &models.Document{TenantID: site.TenantID, SiteID: site.ID, CollectionID: in.CollectionID,
		Title: title, Content: in.Content, Summary: in.Summary, CoverImage: in.CoverImage,
		Category: in.Category, Author: in.Author, Tags: cleanTags(in.Tags), Status: status,
		VectorStatus: models.VecNone, ContentVersion: 1, ReadingTime: readingTime(in.Content),
		ParseMeta: encodeParseMeta(in.ParseMeta)}
	if err := s.d.DB.CreateDocument(db.WithRevision(c.UserContext(), revisionAuthor(c, "")), doc); err != nil {
		return treeError(err)
	}
	s.afterSave(c, nil, doc, vectorize)
	return s.respondDetail(c, doc.ID, true)
}

func (s *Server) updateDocument(c *fiber.Ctx) error {
	var in DocumentUpdate
	doc, err := loadThenBindAs(c, s.loadDocument, EditorUp, bindJSON, &in)
	if err != nil {
		return err
	}
	if err := optionalTitle(&in.Title); err != nil {
		return err
	}
	var requested string
	setIf(&requested, in.VectorStatus)
	vectorize, err := s.vectorRequest(c, doc.SiteID, requested)
	if err != nil {
		return err
	}
	setCollection := bodyHas(c, "collection_id")
	// The revision an edit of the title or content stores names the user.
	ctx := db.WithRevision(c.UserContext(), revisionAuthor(c, ""))
	before, after, err := s.d.DB.UpdateDocument(ctx, doc.ID, func(d *models.Document) error {
		clearNulls(c.Body(), map[string]func(){"summary": func() { d.Summary = "" },
			"cover_image": func() { d.CoverImage = "" }, "category": func() { d.Category = "" }})
		setIf(&d.Title, in.Title)
		setIf(&d.Author, in.Author)
		setIf(&d.Summary, in.Summary)
		setIf(&d.CoverImage, in.CoverImage)
		setIf(&d.Category, in.Category)
		setIf(&d.Status, in.Status)
		if in.Content != nil {
			d.Content = *in.Content
			d.ReadingTime = readingTime(d.Content)
		}
		if in.Tags != nil {
			d.Tags = cleanTags(*in.Tags)
		}
		if setCollection {
			d.CollectionID = in.CollectionID
		}
		return nil
	})
	if errors.Is(err, db.ErrNotFound) {
		return NotFound("document")
	}
	if err != nil {
		return treeError(err)
	}
	s.afterSave(c, before, after, vectorize)
	return s.respondDetail(c, doc.ID, false)
}

func (s *Server) deleteDocument(c *fiber.Ctx) error {
	doc, err := s.loadDocument(c, SiteAdminUp)
	if err != nil {
		return err
	}
	deleted, err := s.d.DB.DeleteDocument(c.UserContext(), doc.ID)
	if errors.Is(err, db.ErrNotFound) {
		return NotFound("document")
	}
	if err != nil {
		return err
	}
	if err := s.afterDocumentDelete(c, deleted); err != nil {
		s.log.Warn("after document delete hook failed", "document_id", deleted.ID, "err", err,
			"request_id", c.Locals(requestIDKey))
	}
	return ok(c, MessageWithJob{Message: "Document deleted", JobID: startedJob(c)})
}

// --- client handlers ---

func (s *Server) listDocumentsClient(c *fiber.Ctx) error {
	var q ClientDocumentQuery
	tenant, listed, err := clientPage[DocumentResponse](s, c, &q, &q.ClientTenantQuery)
	if !listed {
		return err
	}
	exclude := q.ExcludeContent == nil || *q.ExcludeContent
	f := db.DocumentFilter{Public: true, Keyword: q.Keyword, TenantID: tenant.id, OrderBy: q.OrderBy,
		OrderDir: q.OrderDir, ExcludeContent: exclude, Limit: q.Limit(), Offset: q.Offset()}
	if q.SiteID > 0 {
		if _, err := s.clientSite(c, q.SiteID); err != nil {
			return err
		}
		f.SiteID = q.SiteID
	} else {
		// Without a site (and so without its access token), sites behind a
		// password stay hidden.
		f.NoPasswordSites = true
	}
	key := msgSuccess(c) + "?" + string(c.Request().URI().QueryString())
	body, ok, gen := s.cache.Lists.Get(key)
	if ok {
		c.Type("json")
		return c.Send(body)
	}
	if err := s.documentPage(c, f, q.CollectionID, !exclude, q.IncludeSiteInfo, q.PageQuery); err != nil {
		return err
	}
	s.cache.Lists.Put(gen, key, append([]byte(nil), c.Response().Body()...))
	return nil
}

func (s *Server) getDocumentClient(c *fiber.Ctx) error {
	id, err := pathInt(c, "id")
	if err != nil {
		return err
	}
	var q ClientDocumentDetailQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	tenant, err := s.clientTenant(c.UserContext(), q.ClientTenantQuery)
	if err != nil {
		return err
	}
	doc, body, err := s.clientDetail(c, id)
	if err != nil {
		return err
	}
	if doc == nil || doc.Status != models.DocPublished || (q.SiteID > 0 && doc.SiteID != q.SiteID) ||
		!tenant.admits(doc.TenantID) {
		return NotFound("document")
	}
	if _, err := s.clientSite(c, doc.SiteID); err != nil {
		return err
	}
	// The view is counted in memory and written by the flusher; readers see
	// the stored count plus the pending ones.
	doc.Views += s.views().Record(doc.SiteID, doc.ID, s.clientIP(c), c.Get(fiber.HeaderUserAgent), c.Get(fiber.HeaderReferer))
	if body.head != nil {
		return body.write(c, doc.Views)
	}
	return ok(c, doc)
}
