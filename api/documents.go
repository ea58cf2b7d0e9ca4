package api

import (
	"bytes"
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

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
	Summary      string              `json:"summary"`
	CoverImage   string              `json:"cover_image"`
	SiteID       int64               `json:"site_id"`
	CollectionID *int64              `json:"collection_id"`
	Category     string              `json:"category"`
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
}

// AdminDocumentQuery is the query of the admin document list.
type AdminDocumentQuery struct {
	PageQuery
	SiteID         int64  `query:"site_id" validate:"min=0"`
	CollectionID   int64  `query:"collection_id" doc:"this collection and all its descendants" validate:"min=0"`
	Status         string `query:"status" validate:"omitempty,oneof=draft published"`
	VectorStatus   string `query:"vector_status" validate:"omitempty,oneof=none pending processing completed failed outdated"`
	Keyword        string `query:"keyword" doc:"case-insensitive substring of title, content or summary" validate:"max=200"`
	OrderBy        string `query:"order_by" doc:"created_at (default) | updated_at | views | title" validate:"omitempty,oneof=created_at updated_at views title"`
	OrderDir       string `query:"order_dir" doc:"asc | desc (default)" validate:"omitempty,oneof=asc desc"`
	ExcludeContent bool   `query:"exclude_content" doc:"omit content (null) from the list; default false"`
}

// ClientDocumentQuery is the query of the client document list.
type ClientDocumentQuery struct {
	PageQuery
	ClientTenantQuery
	SiteID          int64  `query:"site_id" validate:"min=0"`
	CollectionID    int64  `query:"collection_id" doc:"this collection and all its descendants" validate:"min=0"`
	Keyword         string `query:"keyword" doc:"case-insensitive substring of title, content or summary" validate:"max=200"`
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
	Title        string         `json:"title" validate:"required,max=200"`
	SiteID       int64          `json:"site_id" validate:"required,min=1"`
	TenantID     int64          `json:"tenant_id" doc:"optional; must be the site's tenant (400 otherwise)" validate:"min=0"`
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

// DocumentUpdate is the body of PUT /documents/{id}; absent fields are kept
// and collection_id null detaches the document from its collection.
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
			Summary: "Create a document", Body: DocumentCreate{}, Response: DocumentResponse{}, Handler: s.createDocument},
		{Surface: Admin, Method: http.MethodPut, Path: "/documents/{id}", Tag: "documents", Perm: EditorUp,
			Summary:     "Update a document",
			Description: "Changing the title or content bumps the content version; a document whose vector_status was completed becomes outdated.",
			Body:        DocumentUpdate{}, Response: DocumentResponse{}, Handler: s.updateDocument},
		{Surface: Admin, Method: http.MethodDelete, Path: "/documents/{id}", Tag: "documents", Perm: SiteAdminUp,
			Summary: "Delete a document and its vectors", Response: Message{}, Handler: s.deleteDocument},
		{Surface: Client, Method: http.MethodGet, Path: "/documents", Tag: "documents", Perm: Public,
			Summary: "List published documents of active sites", Query: ClientDocumentQuery{},
			Response: Page[DocumentResponse]{}, Handler: s.listDocumentsClient},
		{Surface: Client, Method: http.MethodGet, Path: "/documents/{id}", Tag: "documents", Perm: Public,
			Summary: "Get a published document; counts a view (IP, user agent, referer)",
			Query:   ClientDocumentDetailQuery{}, Response: DocumentResponse{}, Handler: s.getDocumentClient},
	}
}

// --- view counting and the client detail cache ---

// docState is the per-Server state of the client document detail path: the
// lazily started view recorder and the detail cache.
type docState struct {
	once  sync.Once
	rec   atomic.Pointer[db.ViewRecorder]
	cache *docCache
	lists *listCache
}

func newDocState() *docState {
	return &docState{cache: newDocCache(clientDocTTL, clientDocCacheBytes), lists: &listCache{m: map[string]listEntry{}}}
}

// listCache keeps encoded client list responses for clientDocTTL, keyed by
// the query string: a popular search is answered from memory. Any document
// or collection write through this process drops all of them; another
// process's writes show within the TTL. The site visibility and access
// checks still run on every request.
type listCache struct {
	mu sync.Mutex
	m  map[string]listEntry
}

type listEntry struct {
	body []byte
	exp  time.Time
}

const listCacheMax = 4096

func (l *listCache) get(key string) ([]byte, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.m[key]
	if !ok || time.Now().After(e.exp) {
		return nil, false
	}
	return e.body, true
}

func (l *listCache) put(key string, body []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.m) >= listCacheMax {
		l.m = map[string]listEntry{}
	}
	l.m[key] = listEntry{body: body, exp: time.Now().Add(clientDocTTL)}
}

func (l *listCache) clear() {
	l.mu.Lock()
	l.m = map[string]listEntry{}
	l.mu.Unlock()
}

func (s *Server) docState() *docState { return s.docs }

// views returns the server's view recorder, starting it on first use with
// the configured flush interval. A committed flush adds the written views to
// the cached details, which therefore keep showing stored plus pending views
// without being re-read.
func (s *Server) views() *db.ViewRecorder {
	st := s.docState()
	st.once.Do(func() {
		r := db.NewViewRecorder(s.d.DB, s.d.Cfg.ViewFlushInterval)
		r.OnError(func(err error) { s.log.Warn("view flush failed; retrying next tick", "err", err) })
		r.OnFlushed(st.cache.addViews)
		st.rec.Store(r)
	})
	return st.rec.Load()
}

// FlushViews writes the pending document views now (tests, admin stats).
func (s *Server) FlushViews(ctx context.Context) error {
	if r := s.docs.rec.Load(); r != nil {
		return r.Flush(ctx)
	}
	return nil
}

// CloseViews stops the view flusher and writes what is pending; call it on
// shutdown after the HTTP server has stopped.
func (s *Server) CloseViews(ctx context.Context) error {
	if r := s.docs.rec.Load(); r != nil {
		return r.Close(ctx)
	}
	return nil
}

// forgetDocuments drops cached client details after a write; with no ids it
// drops them all (collection renames and moves change many paths).
func (s *Server) forgetDocuments(ids ...int64) {
	s.docs.lists.clear()
	if len(ids) == 0 {
		s.docs.cache.clear()
	} else {
		s.docs.cache.forget(ids...)
	}
}

// The client document detail is the hottest read. Its payload (document,
// site names, collection path) is cached in process for clientDocTTL, bounded
// to clientDocCacheBytes, so that a read costs only the site visibility
// check. Writes through this process drop the entries at once (document
// update and delete, collection changes) and view flushes update them;
// writes and flushes of another API process show within the TTL.
const (
	clientDocTTL        = 5 * time.Second
	clientDocCacheBytes = 64 << 20
)

// docCache is a byte-bounded LRU of document details with expiry. A fill
// started before an invalidation is not stored (generation check), so an
// entry never predates the last write this process made.
type docCache struct {
	mu    sync.Mutex
	ttl   time.Duration
	max   int
	size  int
	gen   uint64
	ll    *list.List
	items map[int64]*list.Element
}

type docEntry struct {
	id      int64
	doc     DocumentResponse // without its content: that is in body only
	body    detailBody       // doc as JSON, cut around its view count
	size    int
	expires time.Time
}

// detailBody is a document's JSON cut at its view count: a cached detail is
// written as head + views + tail, without encoding the document again (its
// content is most of the bytes; the count changes on every read).
type detailBody struct {
	head, tail []byte
}

// viewsMark stands in for the view count while a document is encoded; a
// quote inside a JSON string is escaped, so the sequence occurs only as the
// "views" member itself.
const viewsMark = int64(-7_777_777_777_777)

var viewsMarkJSON = []byte(`"views":` + strconv.FormatInt(viewsMark, 10))

func encodeDetail(doc DocumentResponse) detailBody {
	doc.Views = viewsMark
	b, err := json.Marshal(doc)
	if err != nil {
		return detailBody{}
	}
	i := bytes.Index(b, viewsMarkJSON)
	if i < 0 {
		return detailBody{}
	}
	cut := i + len(`"views":`)
	return detailBody{head: b[:cut], tail: b[i+len(viewsMarkJSON):]}
}

// write writes the success envelope of the document with the given view
// count: byte for byte what ok(c, doc) writes.
func (d detailBody) write(c *fiber.Ctx, views int64) error {
	msg, _ := json.Marshal(msgSuccess(c))
	buf := make([]byte, 0, len(d.head)+len(d.tail)+len(msg)+48)
	buf = append(buf, `{"code":0,"msg":`...)
	buf = append(buf, msg...)
	buf = append(buf, `,"data":`...)
	buf = append(buf, d.head...)
	buf = strconv.AppendInt(buf, views, 10)
	buf = append(buf, d.tail...)
	buf = append(buf, '}')
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(buf)
}

func newDocCache(ttl time.Duration, maxBytes int) *docCache {
	return &docCache{ttl: ttl, max: maxBytes, ll: list.New(), items: map[int64]*list.Element{}}
}

// get returns a copy of the cached detail (its content only in the body)
// and the current generation (to be passed to put after a miss).
func (c *docCache) get(id int64) (DocumentResponse, detailBody, bool, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[id]; ok {
		e := el.Value.(*docEntry)
		if time.Now().Before(e.expires) {
			c.ll.MoveToFront(el)
			return e.doc, e.body, true, c.gen
		}
		c.remove(el)
	}
	return DocumentResponse{}, detailBody{}, false, c.gen
}

// put stores doc unless something was invalidated since gen was read. The
// content is kept once, in the encoded body: the largest part of a document
// is not held twice, so twice as many documents fit in the bound.
func (c *docCache) put(gen uint64, doc DocumentResponse) detailBody {
	body := encodeDetail(doc)
	size := 512 + len(doc.Title) + len(doc.Summary) + len(doc.CoverImage) + len(body.head) + len(body.tail)
	if body.head == nil || size > c.max/16 {
		return body
	}
	doc.Content = nil
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return body
	}
	if el, ok := c.items[doc.ID]; ok {
		c.remove(el)
	}
	c.items[doc.ID] = c.ll.PushFront(&docEntry{id: doc.ID, doc: doc, body: body, size: size, expires: time.Now().Add(c.ttl)})
	c.size += size
	for c.size > c.max {
		c.remove(c.ll.Back())
	}
	return body
}

// addViews adds flushed views to the cached details. It bumps the
// generation so that a fill that read the row before the flush is dropped.
func (c *docCache) addViews(added map[int64]int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for id, n := range added {
		if el, ok := c.items[id]; ok {
			el.Value.(*docEntry).doc.Views += n
		}
	}
}

func (c *docCache) forget(ids ...int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for _, id := range ids {
		if el, ok := c.items[id]; ok {
			c.remove(el)
		}
	}
}

func (c *docCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	c.ll.Init()
	c.items = map[int64]*list.Element{}
	c.size = 0
}

func (c *docCache) remove(el *list.Element) {
	e := el.Value.(*docEntry)
	c.ll.Remove(el)
	delete(c.items, e.id)
	c.size -= e.size
}

// clientDetail returns the detail of a document for the Client API, from the
// cache or from the database (nil, nil when it does not exist). A cached
// detail carries its content in the body only; a detail without a body (not
// encodable) is never cached.
func (s *Server) clientDetail(c *fiber.Ctx, id int64) (*DocumentResponse, detailBody, error) {
	cache := s.docState().cache
	cached, body, hit, gen := cache.get(id)
	if hit {
		return &cached, body, nil
	}
	row, err := s.d.DB.GetDocumentWithSite(c.UserContext(), id)
	if errors.Is(err, db.ErrNotFound) {
		return nil, detailBody{}, nil
	}
	if err != nil {
		return nil, detailBody{}, err
	}
	doc, err := s.documentDetail(c, row)
	if err != nil {
		return nil, detailBody{}, err
	}
	body = cache.put(gen, doc)
	return &doc, body, nil
}

// --- response building ---

// documentResponses shapes documents with their collection paths (one query
// for all of them) and, when siteInfo, their site and tenant names (one more).
func (s *Server) documentResponses(c *fiber.Ctx, docs []models.Document, withContent, siteInfo bool) ([]DocumentResponse, error) {
	ctx := c.UserContext()
	var colIDs, siteIDs []int64
	seenCol, seenSite := map[int64]bool{}, map[int64]bool{}
	for i := range docs {
		if cid := docs[i].CollectionID; cid != nil && !seenCol[*cid] {
			seenCol[*cid] = true
			colIDs = append(colIDs, *cid)
		}
		if !seenSite[docs[i].SiteID] {
			seenSite[docs[i].SiteID] = true
			siteIDs = append(siteIDs, docs[i].SiteID)
		}
	}
	chains, err := s.d.DB.CollectionChains(ctx, colIDs)
	if err != nil {
		return nil, err
	}
	var infos map[int64]db.SiteInfo
	if siteInfo {
		if infos, err = s.d.DB.SiteInfos(ctx, siteIDs); err != nil {
			return nil, err
		}
	}
	out := make([]DocumentResponse, len(docs))
	for i := range docs {
		out[i] = documentResponse(&docs[i], withContent, chains)
		if info, ok := infos[docs[i].SiteID]; ok {
			out[i].SiteName, out[i].SiteSlug, out[i].TenantSlug = &info.Name, &info.Slug, &info.TenantSlug
		}
	}
	return out, nil
}

// documentDetail shapes one document with site info and collection path.
func (s *Server) documentDetail(c *fiber.Ctx, row *db.DocumentWithSite) (DocumentResponse, error) {
	var ids []int64
	if row.CollectionID != nil {
		ids = []int64{*row.CollectionID}
	}
	chains, err := s.d.DB.CollectionChains(c.UserContext(), ids)
	if err != nil {
		return DocumentResponse{}, err
	}
	out := documentResponse(&row.Document, true, chains)
	out.SiteName, out.SiteSlug, out.TenantSlug = row.SiteName, row.SiteSlug, row.TenantSlug
	out.ParseMeta = decodeParseMeta(row.ParseMeta)
	return out, nil
}

// encodeParseMeta stores a parse_meta object as JSON text; nil stays NULL.
func encodeParseMeta(meta map[string]any) *string {
	if meta == nil {
		return nil
	}
	s := mustJSON(meta)
	return &s
}

// decodeParseMeta reads the stored parse_meta; NULL (or anything that is not
// an object) is nil, shown as null.
func decodeParseMeta(raw *string) map[string]any {
	if raw == nil {
		return nil
	}
	var meta map[string]any
	if json.Unmarshal([]byte(*raw), &meta) != nil {
		return nil
	}
	return meta
}

func documentResponse(d *models.Document, withContent bool, chains map[int64]db.CollectionNode) DocumentResponse {
	r := DocumentResponse{ID: d.ID, CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt, Title: d.Title,
		TenantID: d.TenantID, Summary: d.Summary, CoverImage: d.CoverImage, SiteID: d.SiteID,
		CollectionID: d.CollectionID, Category: d.Category, Author: d.Author, Status: d.Status,
		VectorStatus: d.VectorStatus, Tags: parseTags(d.Tags), Views: d.Views, ReadingTime: d.ReadingTime,
		VectorizedAt: d.VectorizedAt, ChunkCount: d.ChunkCount, Version: d.ContentVersion}
	if withContent {
		content := d.Content
		r.Content = &content
	}
	if d.VectorError != "" {
		ve := d.VectorError
		r.VectorError = &ve
	}
	if d.CollectionID != nil {
		r.Collection = collectionPath(*d.CollectionID, chains)
	}
	return r
}

// collectionPath builds the collection reference of a document from the
// collection and its ancestors; nil when the collection no longer exists.
func collectionPath(id int64, chains map[int64]db.CollectionNode) *DocumentCollection {
	self, ok := chains[id]
	if !ok {
		return nil
	}
	anc := []CollectionRef{}
	seen := map[int64]bool{id: true}
	for p := self.ParentID; p != nil && !seen[*p]; {
		n, ok := chains[*p]
		if !ok {
			break
		}
		seen[n.ID] = true
		anc = append(anc, CollectionRef{ID: n.ID, Title: n.Title})
		p = n.ParentID
	}
	titles := make([]string, 0, len(anc)+1)
	for i, j := 0, len(anc)-1; i < j; i, j = i+1, j-1 {
		anc[i], anc[j] = anc[j], anc[i]
	}
	for _, a := range anc {
		titles = append(titles, a.Title)
	}
	titles = append(titles, self.Title)
	return &DocumentCollection{ID: self.ID, Title: self.Title, ParentID: self.ParentID, Ancestors: anc,
		Path: strings.Join(titles, " > ")}
}

// --- helpers ---

// readingTime estimates minutes at 200 words per minute, at least 1. A word
// is a run of letters or digits, except that each CJK character counts as a
// word of its own (those scripts do not separate words with spaces).
func readingTime(content string) int {
	words, inWord := 0, false
	for _, r := range content {
		switch {
		case unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul):
			words++
			inWord = false
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\'' || r == '_':
			if !inWord {
				words++
				inWord = true
			}
		default:
			inWord = false
		}
	}
	return max(1, words/200)
}

// cleanTags trims tags, drops blanks and duplicates, and encodes the JSON
// array stored in the row.
func cleanTags(tags []string) string {
	out := []string{}
	seen := map[string]bool{}
	for _, t := range tags {
		t = strings.TrimSpace(t)
		if t != "" && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return mustJSON(out)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "[]"
	}
	return string(b)
}

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
		if _, err := s.queueVectorize(c, after.ID); err != nil {
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
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	if err := q.Defaults(10, 1000); err != nil {
		return err
	}
	f := db.DocumentFilter{Status: q.Status, VectorStatus: q.VectorStatus, Keyword: q.Keyword,
		OrderBy: q.OrderBy, OrderDir: q.OrderDir, ExcludeContent: q.ExcludeContent,
		Limit: q.Limit(), Offset: q.Offset()}
	if q.SiteID > 0 {
		if _, err := s.adminSite(c, q.SiteID, EditorUp); err != nil {
			return err
		}
		f.SiteID = q.SiteID
	} else {
		f.SiteIDs = principal(c).SiteFilter()
	}
	if q.CollectionID > 0 {
		ids, err := s.d.DB.CollectionWithDescendants(c.UserContext(), q.CollectionID)
		if err != nil {
			return err
		}
		f.CollectionIDs = ids
	}
	docs, total, err := s.d.DB.ListDocuments(c.UserContext(), f)
	if err != nil {
		return err
	}
	out, err := s.documentResponses(c, docs, !q.ExcludeContent, false)
	if err != nil {
		return err
	}
	return paged(c, out, total, q.PageQuery)
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
	if create {
		return created(c, out)
	}
	return ok(c, out)
}

func (s *Server) createDocument(c *fiber.Ctx) error {
	var in DocumentCreate
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	title, err := requiredTitle(in.Title)
	if err != nil {
		return err
	}
	site, err := s.bodySite(c, in.SiteID, EditorUp)
	if err != nil {
		return err
	}
	if err := siteTenant(site, in.TenantID); err != nil {
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
	if err := s.d.DB.CreateDocument(c.UserContext(), doc); err != nil {
		return treeError(err)
	}
	s.afterSave(c, nil, doc, vectorize)
	return s.respondDetail(c, doc.ID, true)
}

func (s *Server) updateDocument(c *fiber.Ctx) error {
	doc, err := s.loadDocument(c, EditorUp)
	if err != nil {
		return err
	}
	var in DocumentUpdate
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	if in.Title != nil {
		t, err := requiredTitle(*in.Title)
		if err != nil {
			return err
		}
		in.Title = &t
	}
	var requested string
	setIf(&requested, in.VectorStatus)
	vectorize, err := s.vectorRequest(c, doc.SiteID, requested)
	if err != nil {
		return err
	}
	setCollection := bodyHas(c, "collection_id")
	before, after, err := s.d.DB.UpdateDocument(c.UserContext(), doc.ID, func(d *models.Document) error {
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
	s.forgetDocuments(doc.ID)
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
	s.forgetDocuments(deleted.ID)
	if err := s.afterDocumentDelete(c, deleted); err != nil {
		s.log.Warn("after document delete hook failed", "document_id", deleted.ID, "err", err,
			"request_id", c.Locals(requestIDKey))
	}
	return ok(c, Message{Message: "Document deleted"})
}

// --- client handlers ---

func (s *Server) listDocumentsClient(c *fiber.Ctx) error {
	var q ClientDocumentQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	if err := q.Defaults(10, 1000); err != nil {
		return err
	}
	tenant, err := s.clientTenant(c.UserContext(), q.ClientTenantQuery)
	if err != nil {
		return err
	}
	if tenant.none {
		return paged[DocumentResponse](c, nil, 0, q.PageQuery)
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
	if body, ok := s.docs.lists.get(key); ok {
		c.Type("json")
		return c.Send(body)
	}
	if q.CollectionID > 0 {
		ids, err := s.d.DB.CollectionWithDescendants(c.UserContext(), q.CollectionID)
		if err != nil {
			return err
		}
		f.CollectionIDs = ids
	}
	docs, total, err := s.d.DB.ListDocuments(c.UserContext(), f)
	if err != nil {
		return err
	}
	out, err := s.documentResponses(c, docs, !exclude, q.IncludeSiteInfo)
	if err != nil {
		return err
	}
	if err := paged(c, out, total, q.PageQuery); err != nil {
		return err
	}
	s.docs.lists.put(key, append([]byte(nil), c.Response().Body()...))
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
	doc.Views += s.views().Record(doc.SiteID, doc.ID, c.IP(), c.Get(fiber.HeaderUserAgent), c.Get(fiber.HeaderReferer))
	if body.head != nil {
		return body.write(c, doc.Views)
	}
	return ok(c, doc)
}
