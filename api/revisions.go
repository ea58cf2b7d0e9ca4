package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/models"
)

// RevisionInfo is one stored revision of a document, without its text.
type RevisionInfo struct {
	DocumentID   int64     `json:"document_id"`
	Revision     int64     `json:"revision" doc:"the document's content_version while this text was current; chat sources name it"`
	Title        string    `json:"title"`
	Source       string    `json:"source" enum:"create,edit,import,restore,sync"`
	AuthorID     *int64    `json:"author_id" doc:"the user who made the change; null for imports, syncs and revisions recorded from older documents"`
	Author       string    `json:"author" doc:"the user's email, else the writer's name (the document's author for imports)"`
	ContentHash  string    `json:"content_hash" doc:"SHA-256 (hex) of the title, a NUL byte and the content"`
	ContentBytes int       `json:"content_bytes"`
	RestoredFrom *int64    `json:"restored_from" doc:"the revision a restore copied"`
	Current      bool      `json:"current" doc:"the document's current title and content"`
	CreatedAt    time.Time `json:"created_at"`
}

// RevisionDetail is a revision with its content.
type RevisionDetail struct {
	RevisionInfo
	Content string `json:"content"`
}

// RevisionDiffQuery names the revision a diff is taken against.
type RevisionDiffQuery struct {
	Against string `query:"against" doc:"the older side's revision number; default the newest stored revision before {rev} (none: the diff from an empty document)"`
}

// RevisionRestored answers a restore: the document as it now is, the
// revision the restore stored (the current one when the text was already
// current and nothing was stored) and the vectorization job it started.
type RevisionRestored struct {
	Document     DocumentResponse `json:"document"`
	Revision     RevisionInfo     `json:"revision"`
	RestoredFrom int64            `json:"restored_from"`
	Restored     bool             `json:"restored" doc:"false when {rev} was already the current title and content (nothing stored, nothing re-indexed)"`
	JobID        *string          `json:"job_id" doc:"the re-index of the restored text (GET /jobs/{job_id}); null when none started"`
}

func (s *Server) revisionRoutes() []Route {
	return []Route{
		{Surface: Admin, Method: http.MethodGet, Path: "/documents/{id}/revisions", Tag: "documents", Perm: EditorUp,
			Summary:     "List a document's stored revisions, newest first",
			Description: "Every change of the title or content (edit, import, sync, restore) stores a revision; identical saves store none. Revisions beyond LORE_REVISIONS_KEEP or older than LORE_REVISIONS_MAX_AGE are pruned, never the current one.",
			Query:       PageQuery{}, Response: Page[RevisionInfo]{}, Handler: s.listRevisions},
		{Surface: Admin, Method: http.MethodGet, Path: "/documents/{id}/revisions/{rev}", Tag: "documents", Perm: EditorUp,
			Summary: "Get one revision with its content", Response: RevisionDetail{}, Handler: s.getRevision},
		{Surface: Admin, Method: http.MethodGet, Path: "/documents/{id}/revisions/{rev}:diff", Tag: "documents", Perm: EditorUp,
			Summary:     "Line diff of a revision against another (default: the one before it)",
			Description: "Hunks with three lines of context and the same diff as unified text. A diff that takes longer than about a second to refine is coarser (whole blocks replaced), and at most 5,000 lines are listed (truncated: true).",
			Query:       RevisionDiffQuery{}, Response: RevisionDiff{}, Handler: s.diffRevision},
		{Surface: Admin, Method: http.MethodPost, Path: "/documents/{id}/revisions/{rev}:restore", Tag: "documents", Perm: EditorUp,
			Summary:     "Make a revision's title and content current again, as a new revision",
			Description: "The document is re-indexed from the restored text through its vectorization job when it had been vectorized (or, in automatic mode, when it is published), so retrieval serves the restored text only; its vector_status shows the run.",
			Response:    RevisionRestored{}, Handler: s.restoreRevision},
	}
}

// revisionInfo is the wire form of a stored revision; current is the
// document's content version.
func revisionInfo(r *models.DocumentRevision, bytes int, current int64) RevisionInfo {
	return RevisionInfo{DocumentID: r.DocumentID, Revision: r.Revision, Title: r.Title, Source: r.Source,
		AuthorID: r.AuthorID, Author: r.Author, ContentHash: r.ContentHash, ContentBytes: bytes,
		RestoredFrom: r.RestoredFrom, Current: r.Revision == current, CreatedAt: r.CreatedAt}
}

// revisionNumber parses a revision number of the path or query.
func revisionNumber(field, raw string) (int64, error) {
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < 1 {
		return 0, Invalid("%s: invalid revision %q (a revision number, from 1)", field, truncate(raw, 40))
	}
	return n, nil
}

// loadRevision reads a stored revision of doc (404 when it was never
// written or has been pruned).
func (s *Server) loadRevision(ctx context.Context, doc *models.Document, field, raw string) (*models.DocumentRevision, error) {
	n, err := revisionNumber(field, raw)
	if err != nil {
		return nil, err
	}
	r, err := s.d.DB.GetRevision(ctx, doc.ID, n)
	if errors.Is(err, db.ErrNotFound) {
		return nil, Errf(http.StatusNotFound, "revision %d of document %d not found (never stored, or pruned)", n, doc.ID)
	}
	return r, err
}

func (s *Server) listRevisions(c *fiber.Ctx) error {
	var q PageQuery
	doc, err := loadThenBindAs(c, s.loadDocument, EditorUp, listPage(20, 100), &q)
	if err != nil {
		return err
	}
	rows, total, err := s.d.DB.ListRevisions(c.UserContext(), doc.ID, q.Limit(), q.Offset())
	if err != nil {
		return err
	}
	out := make([]RevisionInfo, len(rows))
	for i := range rows {
		out[i] = revisionInfo(&rows[i].DocumentRevision, rows[i].ContentBytes, doc.ContentVersion)
	}
	return paged(c, out, total, q)
}

// pathRevision is the document and the revision of it that the path names.
func (s *Server) pathRevision(c *fiber.Ctx) (*models.Document, *models.DocumentRevision, error) {
	doc, err := s.loadDocument(c, EditorUp)
	if err != nil {
		return nil, nil, err
	}
	r, err := s.loadRevision(c.UserContext(), doc, "rev", c.Params("rev"))
	return doc, r, err
}

func (s *Server) getRevision(c *fiber.Ctx) error {
	doc, r, err := s.pathRevision(c)
	if err != nil {
		return err
	}
	return ok(c, RevisionDetail{RevisionInfo: revisionInfo(r, len(r.Content), doc.ContentVersion), Content: r.Content})
}

func (s *Server) diffRevision(c *fiber.Ctx) error {
	var q RevisionDiffQuery
	doc, err := loadThenBindAs(c, s.loadDocument, EditorUp, bindQuery, &q)
	if err != nil {
		return err
	}
	to, err := s.loadRevision(c.UserContext(), doc, "rev", c.Params("rev"))
	if err != nil {
		return err
	}
	var from *models.DocumentRevision
	if c.Context().QueryArgs().Has("against") {
		if from, err = s.loadRevision(c.UserContext(), doc, "against", q.Against); err != nil {
			return err
		}
	} else {
		from, err = s.d.DB.PreviousRevision(c.UserContext(), doc.ID, to.Revision)
		if errors.Is(err, db.ErrNotFound) {
			from, err = nil, nil
		}
		if err != nil {
			return err
		}
	}
	out := RevisionDiff{DocumentID: doc.ID, To: revisionInfo(to, len(to.Content), doc.ContentVersion)}
	oldTitle, oldContent := "", ""
	if from != nil {
		info := revisionInfo(from, len(from.Content), doc.ContentVersion)
		out.From = &info
		oldTitle, oldContent = from.Title, from.Content
	}
	out.TitleChanged = oldTitle != to.Title
	lineDiff(&out, oldContent, to.Content, revisionLabel(from), revisionLabel(to))
	return ok(c, out)
}

func revisionLabel(r *models.DocumentRevision) string {
	if r == nil {
		return "/dev/null"
	}
	return "revision " + strconv.FormatInt(r.Revision, 10)
}

func (s *Server) restoreRevision(c *fiber.Ctx) error {
	doc, r, err := s.pathRevision(c)
	if err != nil {
		return err
	}
	from := r.Revision
	meta := revisionAuthor(c, models.RevisionRestore)
	meta.RestoredFrom = &from
	before, after, err := s.d.DB.UpdateDocument(db.WithRevision(c.UserContext(), meta), doc.ID, func(d *models.Document) error {
		d.Title, d.Content, d.ReadingTime = r.Title, r.Content, readingTime(r.Content)
		return nil
	})
	if errors.Is(err, db.ErrNotFound) {
		return NotFound("document")
	}
	if err != nil {
		return err
	}
	restored := after.ContentVersion != before.ContentVersion
	if restored {
		// A document that had vectors is indexed again from the restored
		// text, whatever the vectorize mode: its old chunks are of a
		// version that is no longer current, so until then retrieval
		// serves none of it. Otherwise the automatic mode's rule for an
		// edit applies.
		s.afterSave(c, before, after, before.VectorStatus != models.VecNone)
	}
	cur, err := s.d.DB.GetRevision(c.UserContext(), doc.ID, after.ContentVersion)
	if err != nil {
		return err
	}
	row, err := s.d.DB.GetDocumentWithSite(c.UserContext(), doc.ID)
	if err != nil {
		return err
	}
	detail, err := s.documentDetail(c, row)
	if err != nil {
		return err
	}
	return ok(c, RevisionRestored{Document: detail, Revision: revisionInfo(cur, len(cur.Content), row.ContentVersion),
		RestoredFrom: from, Restored: restored, JobID: startedJob(c)})
}

// revisionAuthor names the signed-in user as the author of the revisions
// the request stores.
func revisionAuthor(c *fiber.Ctx, source string) db.RevisionMeta {
	m := db.RevisionMeta{Source: source}
	if p := principal(c); p != nil && p.User != nil {
		id := p.User.ID
		m.AuthorID, m.Author = &id, p.User.Email
	}
	return m
}
