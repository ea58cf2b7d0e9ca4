package db

import (
	"context"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"github.com/lorekb/lore/models"
)

// RevisionMeta says who changed a document and how: what the revision of the
// change records. Writers pass it in the context (WithRevision) so that the
// one document write path (CreateDocument, UpdateDocument, the import's
// creates) records it without a parameter of its own.
type RevisionMeta struct {
	Source       string // models.Revision*; empty: the write path's own (create, edit, import)
	AuthorID     *int64
	Author       string
	RestoredFrom *int64
}

type revisionKey struct{}

// SetRevisionsOff makes this database's UpdateDocument store no revision
// while off is true. It exists for the measurements of what storing a
// revision adds to a document update (db and api, side by side in one
// process); nothing else may call it.
func (d *DB) SetRevisionsOff(off bool) { d.revisionsOff.Store(off) }

// WithRevision returns ctx carrying m for the document writes made with it: a
// data source sync passes Source models.RevisionSync, the API the user.
func WithRevision(ctx context.Context, m RevisionMeta) context.Context {
	return context.WithValue(ctx, revisionKey{}, m)
}

// revisionMeta is the context's RevisionMeta, with def as the source when it
// names none and the document's author when it names nobody.
func revisionMeta(ctx context.Context, def string, doc *models.Document) RevisionMeta {
	m, _ := ctx.Value(revisionKey{}).(RevisionMeta)
	if m.Source == "" {
		m.Source = def
	}
	if m.Author == "" && m.AuthorID == nil {
		m.Author = doc.Author
	}
	return m
}

// newRevision is the revision row of doc's current title and content.
func newRevision(doc *models.Document, m RevisionMeta, at time.Time) *models.DocumentRevision {
	return &models.DocumentRevision{DocumentID: doc.ID, Revision: doc.ContentVersion, SiteID: doc.SiteID,
		TenantID: doc.TenantID, Title: doc.Title, Content: doc.Content,
		ContentHash: models.RevisionHash(doc.Title, doc.Content), Source: m.Source, AuthorID: m.AuthorID,
		Author: truncRunes(m.Author, 200), RestoredFrom: m.RestoredFrom, CreatedAt: at}
}

// SaveDocumentRevision records doc's title and content as its revision
// doc.ContentVersion, on idb (the transaction that wrote the document, so
// the change and its revision commit together). CreateDocument,
// UpdateDocument and the import's creates call it; a writer that changes a
// document's title or content by other means must call it in its own
// transaction after bumping content_version. Content goes as bind
// parameters on PostgreSQL (insertBound), as document writes do.
func (d *DB) SaveDocumentRevision(ctx context.Context, idb bun.IDB, doc *models.Document, m RevisionMeta) error {
	return d.saveRevisions(ctx, idb, []*models.DocumentRevision{newRevision(doc, m, doc.UpdatedAt)})
}

// updateWithRevision runs the update of a document whose title or content
// changed and stores the new revision. On PostgreSQL both are one statement
// (the revision is inserted from the updated row: WITH u AS (UPDATE …
// RETURNING …) INSERT … SELECT … FROM u), so the revision costs no round
// trip of its own and its text is sent once.
func (d *DB) updateWithRevision(ctx context.Context, tx bun.Tx, upd *bun.UpdateQuery, doc *models.Document, m RevisionMeta) error {
	if !d.Postgres() {
		if _, err := upd.Exec(ctx); err != nil {
			return err
		}
		return d.SaveDocumentRevision(ctx, tx, doc, m)
	}
	r := newRevision(doc, m, doc.UpdatedAt)
	update := upd.Returning("id, content_version, site_id, tenant_id, title, content").String()
	_, err := tx.ExecContext(ctx, `WITH u AS (?) INSERT INTO document_revisions (document_id, revision, site_id,
		tenant_id, title, content, content_hash, source, author_id, author, restored_from, created_at)
		SELECT id, content_version, site_id, tenant_id, title, content, ?, ?, ?, ?, ?, ? FROM u`,
		bun.Safe(update), r.ContentHash, r.Source, r.AuthorID, r.Author, r.RestoredFrom, r.CreatedAt)
	return err
}

func (d *DB) saveRevisions(ctx context.Context, idb bun.IDB, rows []*models.DocumentRevision) error {
	if len(rows) == 0 {
		return nil
	}
	if d.Postgres() {
		return insertBound(ctx, idb, rows)
	}
	q, ok := rawQuerier(idb)
	for _, r := range rows {
		if !ok {
			if _, err := idb.NewInsert().Model(r).Exec(ctx); err != nil {
				return err
			}
			continue
		}
		// Bind parameters, not bun's literals: SQLite's parser would read
		// the whole text again on every update.
		res, err := q.QueryContext(ctx, sqliteRevisionInsert, r.DocumentID, r.Revision, r.SiteID, r.TenantID,
			r.Title, r.Content, r.ContentHash, r.Source, r.AuthorID, r.Author, r.RestoredFrom, sqliteTime(idb, r.CreatedAt))
		if err != nil {
			return err
		}
		err = res.Err()
		res.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

const sqliteRevisionInsert = `INSERT INTO document_revisions (document_id, revision, site_id, tenant_id, title,
	content, content_hash, source, author_id, author, restored_from, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// sqliteTime is t as bun writes it on SQLite (so comparisons with bun's
// arguments, and bun's reads, see the same text).
func sqliteTime(idb bun.IDB, t time.Time) string {
	b := idb.Dialect().AppendTime(nil, t)
	return string(b[1 : len(b)-1]) // without the quotes
}

// createdRevisions records the first revision of each new document (after
// the insert has set their ids).
func (d *DB) createdRevisions(ctx context.Context, idb bun.IDB, docs []*models.Document, def string) error {
	rows := make([]*models.DocumentRevision, len(docs))
	for i, doc := range docs {
		rows[i] = newRevision(doc, revisionMeta(ctx, def, doc), doc.UpdatedAt)
	}
	// Bounded statements: a revision has 13 columns, an import batch a few
	// hundred documents.
	for i := 0; i < len(rows); i += 500 {
		if err := d.saveRevisions(ctx, idb, rows[i:min(i+500, len(rows))]); err != nil {
			return err
		}
	}
	return nil
}

// revisionColumns are the columns of a revision list: no content.
var revisionColumns = []string{"document_id", "revision", "site_id", "tenant_id", "title", "content_hash",
	"source", "author_id", "author", "restored_from", "created_at"}

// RevisionInfo is a revision without its text, with the length of its
// content in bytes.
type RevisionInfo struct {
	models.DocumentRevision `bun:",extend"`
	ContentBytes            int `bun:"content_bytes,scanonly"`
}

// ListRevisions returns a page of the document's stored revisions, newest
// first, without content, and how many are stored.
func (d *DB) ListRevisions(ctx context.Context, documentID int64, limit, offset int) ([]RevisionInfo, int, error) {
	rows := []RevisionInfo{}
	q := d.NewSelect().Model(&rows).Column(revisionColumns...).
		ColumnExpr("length(content) AS content_bytes").
		Where("document_id = ?", documentID).Order("revision DESC")
	if limit > 0 {
		q = q.Limit(int64(limit))
	}
	if offset > 0 {
		q = q.Offset(int64(offset))
	}
	n, err := q.ScanAndCount(ctx)
	return rows, int(n), Classify(err)
}

// GetRevision returns one stored revision of a document (ErrNotFound when
// it was never written or has been pruned).
func (d *DB) GetRevision(ctx context.Context, documentID, revision int64) (*models.DocumentRevision, error) {
	return selectOne[models.DocumentRevision](ctx, d, "document_id = ? AND revision = ?", documentID, revision)
}

// PreviousRevision returns the newest stored revision of the document older
// than revision (ErrNotFound when there is none).
func (d *DB) PreviousRevision(ctx context.Context, documentID, revision int64) (*models.DocumentRevision, error) {
	r := new(models.DocumentRevision)
	err := d.NewSelect().Model(r).Where("document_id = ? AND revision < ?", documentID, revision).
		Order("revision DESC").Limit(1).Scan(ctx)
	return r, Classify(err)
}

// CurrentVersions maps each of the ids that still exist to its document's
// content version (its current revision).
func (d *DB) CurrentVersions(ctx context.Context, ids []int64) (map[int64]int64, error) {
	return valuesByID(ctx, d, ids, "content_version", func(doc *models.Document) (int64, int64) { return doc.ID, doc.ContentVersion })
}

// RevisionRetention bounds the revisions kept per document: at most Keep
// (0: no count bound) and none older than MaxAge (0: no age bound). The
// current revision is always kept.
type RevisionRetention struct {
	Keep   int
	MaxAge time.Duration
}

// PruneRevisions deletes, for the next page of documents with revisions
// after the document id after, every revision the retention no longer keeps,
// and every revision of a document that no longer exists. It returns how
// many it deleted and the last document id of the page (0 when no document
// is left after this page: the pass is over). Each page is one statement,
// so a pass can be stopped and resumed from any cursor.
func (d *DB) PruneRevisions(ctx context.Context, r RevisionRetention, now time.Time, after int64, page int) (deleted int, next int64, err error) {
	if page <= 0 {
		page = 500
	}
	var ids []int64
	err = d.NewSelect().Model((*models.DocumentRevision)(nil)).ColumnExpr("DISTINCT document_id").
		Where("document_id > ?", after).Order("document_id").Limit(int64(page)).Scan(ctx, &ids)
	if err != nil || len(ids) == 0 {
		return 0, 0, Classify(err)
	}
	if len(ids) == page {
		next = ids[len(ids)-1]
	}
	// Revisions of a document that is gone go; of the others, any but the
	// current one (its content_version) that is too old or below the
	// Keep-th newest (no such row: fewer than Keep, none go by count).
	where := "NOT EXISTS (SELECT 1 FROM documents AS d WHERE d.id = document_revisions.document_id)"
	args := []any{bun.List(ids)}
	var bounds []string
	if r.MaxAge > 0 {
		bounds = append(bounds, "document_revisions.created_at < ?")
		args = append(args, now.Add(-r.MaxAge).UTC())
	}
	if r.Keep > 0 {
		bounds = append(bounds, `document_revisions.revision < (SELECT r2.revision FROM document_revisions AS r2
			WHERE r2.document_id = document_revisions.document_id ORDER BY r2.revision DESC LIMIT 1 OFFSET ?)`)
		args = append(args, r.Keep-1)
	}
	if len(bounds) > 0 {
		where += ` OR (document_revisions.revision <> (SELECT d.content_version FROM documents AS d
			WHERE d.id = document_revisions.document_id) AND (` + strings.Join(bounds, " OR ") + "))"
	}
	res, err := d.ExecContext(ctx, "DELETE FROM document_revisions WHERE document_id IN (?) AND ("+where+")", args...)
	if err != nil {
		return 0, 0, Classify(err)
	}
	n, _ := res.RowsAffected()
	return int(n), next, nil
}

// CountRevisions counts a document's stored revisions.
func (d *DB) CountRevisions(ctx context.Context, documentID int64) (int, error) {
	n, err := d.NewSelect().Model((*models.DocumentRevision)(nil)).Where("document_id = ?", documentID).Count(ctx)
	return int(n), Classify(err)
}
