package db

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/uptrace/bun"

	"github.com/lorekb/lore/internal/analyze"
	"github.com/lorekb/lore/models"
)

// ErrCollectionNotInSite refuses a document whose collection_id names a
// collection that does not exist or belongs to another site (API: 400).
var ErrCollectionNotInSite = errors.New("collection_id: the collection does not exist in this site")

// DocumentFilter is the query of the admin and client document lists. The
// caller whitelists OrderBy and OrderDir.
type DocumentFilter struct {
	// SiteIDs restricts to these sites (an editor's assigned sites); nil
	// means any site.
	SiteIDs []int64
	SiteID  int64
	// CollectionIDs restricts to these collections (a collection and its
	// descendants); nil means any, empty matches nothing.
	CollectionIDs []int64
	Status        string
	VectorStatus  string
	Keyword       string // matches title, summary, tags or content
	TenantID      int64
	// Public keeps published documents of active sites that are not being
	// deleted: what the Client API may show.
	Public bool
	// NoPasswordSites drops documents of sites that need an access password
	// or are private (is_public=false): client lists not scoped to one site.
	NoPasswordSites bool
	ExcludeContent  bool
	OrderBy         string
	OrderDir        string
	Limit, Offset   int
}

// ListDocuments returns a page of documents (without parse_meta) and the
// total. Keyword search is a case-insensitive substring match of title,
// summary or content with LIKE metacharacters escaped: ILIKE on PostgreSQL,
// LIKE on SQLite.
//
// On PostgreSQL a keyword list is one statement (see listDocumentsByKeyword):
// the matching ids are found once, through the trigram indexes whenever the
// keyword has a trigram, and both the page and the total come from them.
func (d *DB) ListDocuments(ctx context.Context, f DocumentFilter) ([]models.Document, int, error) {
	orderBy, dir := f.OrderBy, f.OrderDir
	if orderBy == "" {
		orderBy = "created_at"
	}
	if dir != "asc" {
		dir = "desc"
	}
	if f.Keyword != "" && d.Postgres() {
		return d.listDocumentsByKeyword(ctx, f, orderBy, dir)
	}
	var docs []models.Document
	// Lists never show parse_meta (WIRE §2: null in lists): it is not read.
	q := d.NewSelect().Model(&docs).ExcludeColumn("parse_meta")
	if f.ExcludeContent {
		q = q.ExcludeColumn("content")
	}
	q = d.whereDocuments(q, f)
	q = q.OrderExpr("? "+dir+", id "+dir, bun.Ident(orderBy)).Limit(int64(f.Limit)).Offset(int64(f.Offset))
	n, err := q.ScanAndCount(ctx)
	return docs, int(n), Classify(err)
}

// whereDocuments adds the conditions of f to a select of documents.
func (d *DB) whereDocuments(q *bun.SelectQuery, f DocumentFilter) *bun.SelectQuery {
	if f.SiteIDs != nil {
		q = q.Where("site_id IN (?)", bun.List(nonEmpty(f.SiteIDs)))
	}
	if f.SiteID > 0 {
		q = q.Where("site_id = ?", f.SiteID)
	}
	if f.CollectionIDs != nil {
		q = q.Where("collection_id IN (?)", bun.List(nonEmpty(f.CollectionIDs)))
	}
	if f.Status != "" {
		q = q.Where("status = ?", f.Status)
	}
	if f.VectorStatus != "" {
		q = q.Where("vector_status = ?", f.VectorStatus)
	}
	if f.TenantID > 0 {
		q = q.Where("tenant_id = ?", f.TenantID)
	}
	if f.Public {
		q = q.Where("status = ?", models.DocPublished)
		sites := d.NewSelect().Model((*models.Site)(nil)).Column("id").
			Where("status = ?", models.SiteActive).Where("deleting = ?", false)
		if f.NoPasswordSites {
			sites = sites.Where("requires_password = ?", false).Where("is_public = ?", true)
		}
		q = q.Where("site_id IN (?)", sites)
	}
	if f.Keyword != "" {
		q = q.WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			return d.whereKeyword(q, f.Keyword)
		})
	}
	return q
}

// whereKeyword matches kw as a case-insensitive substring of title, summary,
// tags (their JSON text) or content. The short columns come first: an OR
// stops at its first true term, so a keyword found in the title, summary or
// tags never reads the content.
//
// SQLite: LIKE (case-insensitive for ASCII), as always.
//
// PostgreSQL: ILIKE, whose cost on a 4 KB content is mostly lower() of the
// whole text (~35 µs). The terms are chosen for a cheap recheck without
// changing the result:
//   - a keyword without cased characters (CJK, digits, punctuation) is
//     matched with LIKE alone: lower() changes neither it nor any character
//     that could match it, so LIKE and ILIKE agree;
//   - otherwise the content is first matched with LIKE on the keyword as
//     typed (~4 µs), then with ILIKE: a LIKE match is an ILIKE match (lower()
//     maps character by character), so "LIKE OR ILIKE" is exactly ILIKE, and
//     most matching documents stop at LIKE.
//
// The content has no index of its own; the trigram index on content_words
// (lower() of the distinct words of the content, see contentwords.go) stands
// for it:
//   - a keyword without word separators (one word, the usual case) is found
//     in the content exactly when it is found in content_words, so the words
//     replace the content: "content_words LIKE lower(kw)", shorter to read
//     than the content and without lower() of it;
//   - a longer keyword, when a word of it has a trigram, is matched as
//     "(title, summary or tags match OR content_words has every such word)
//     AND (title, summary or tags match OR the content matches)",
//     which is "title, summary or tags match OR (the words AND the content
//     match)": the same rows as without the words, since every document
//     whose content matches has the words. The first part is what the
//     trigram indexes serve (pg_trgm ignores case, so LIKE and ILIKE use the
//     same indexes) and what a bitmap scan rechecks on each candidate row,
//     the content is tested in the second part only;
//   - any other keyword (only separators, or words without a trigram) tests
//     the content, as before.
func (d *DB) whereKeyword(q *bun.SelectQuery, kw string) *bun.SelectQuery {
	pat := Like(kw)
	if !d.Postgres() {
		return q.Where("title LIKE ? ESCAPE '\\'", pat).
			WhereOr("summary LIKE ? ESCAPE '\\'", pat).
			WhereOr("tags LIKE ? ESCAPE '\\'", pat).
			WhereOr("content LIKE ? ESCAPE '\\'", pat)
	}
	op := "ILIKE"
	if caseless(kw) {
		op = "LIKE"
	}
	short := func(q *bun.SelectQuery) *bun.SelectQuery {
		return q.Where("title "+op+" ? ESCAPE '\\'", pat).
			WhereOr("summary "+op+" ? ESCAPE '\\'", pat).
			WhereOr("tags "+op+" ? ESCAPE '\\'", pat)
	}
	if words := splitWords(kw); len(words) == 1 && words[0] == kw {
		return short(q).WhereOr("content_words LIKE lower(?) ESCAPE '\\'", pat)
	}
	if words := trigramWords(kw); len(words) > 0 {
		q = q.WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			return short(q).WhereGroup(" OR ", func(q *bun.SelectQuery) *bun.SelectQuery {
				for _, w := range words {
					q = q.Where("content_words LIKE lower(?) ESCAPE '\\'", Like(w))
				}
				return q
			})
		})
	}
	return q.WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
		q = short(q).WhereOr("content LIKE ? ESCAPE '\\'", pat)
		if op == "ILIKE" {
			q = q.WhereOr("content ILIKE ? ESCAPE '\\'", pat)
		}
		return q
	})
}

// trigramWords returns the distinct words of kw (see contentwords.go) that
// have a trigram: the ones the words index can look up. A word without one
// would make the index read all its entries; it is left to the content test.
func trigramWords(kw string) []string {
	var words []string
	for _, w := range splitWords(kw) {
		if hasTrigram(w) && !slices.Contains(words, w) {
			words = append(words, w)
		}
	}
	return words
}

// caseless reports whether s has only characters that no case mapping
// produces or changes: ASCII non-letters, digits, punctuation, spaces, and
// the scripts without case (Han, Hiragana, Katakana, Hangul). For such a
// keyword ILIKE and LIKE agree on any text. Anything else, including every
// letter of a cased script, answers false (ILIKE is kept).
func caseless(s string) bool {
	for _, r := range s {
		switch {
		case r < utf8.RuneSelf:
			if ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') {
				return false
			}
		case unicode.IsDigit(r), unicode.IsPunct(r), unicode.IsSpace(r),
			analyze.IsCJK(r):
		default:
			return false
		}
	}
	return true
}

// documentWithTotal is a row of a keyword list: a document and the number of
// documents that match.
type documentWithTotal struct {
	models.Document `bun:",extend"`
	Total           int `bun:"total,scanonly"`
}

// listDocumentsByKeyword is the PostgreSQL keyword list: page and total in
// one statement,
//
//	WITH keyword_matches AS MATERIALIZED (
//	    SELECT id, <order column> AS sort_key FROM documents WHERE <filters and keyword>)
//	SELECT <columns>, (SELECT count(*) FROM keyword_matches) AS total FROM documents
//	WHERE id = ANY(ARRAY(SELECT id FROM keyword_matches ORDER BY sort_key, id LIMIT/OFFSET))
//	ORDER BY <order column>, id
//
// The materialized CTE is a fence: the planner cannot turn the match into an
// ordered scan of documents that tests ILIKE on the content of every row until
// it has a page (the whole table when the keyword is rare, and the whole
// table again for the count). Matches are found and rechecked once for page
// and total; the page is sorted on the narrow (id, sort_key) rows and only
// its rows are read in full, without content when f.ExcludeContent.
//
// A keyword with a trigram (three letters or digits in a row; such a run is
// inside one word of the keyword, so the content term has one too) must be
// found through the trigram indexes, but the planner cannot be trusted to choose
// them: it costs ILIKE on a 4 KB TOASTed content like any operator (about
// 1/1000 of its real cost), and it prices a GIN scan by the index's pending
// list, which document writes (view count flushes rewrite every index entry of
// a row) fill with hundreds of pages. Measured at 10,000 documents after
// updating a third of them: a sequential scan estimated below the bitmap scan
// took 530 ms, the bitmap scan 7 ms. So the keyword is first matched alone,
// where the trigram indexes are the only index path, with sequential scans
// disabled for this transaction (SET LOCAL), and the filters are applied to
// those ids:
//
//	WITH keyword_ids AS MATERIALIZED (SELECT id FROM documents WHERE <keyword>),
//	     keyword_matches AS MATERIALIZED (
//	         SELECT id, <order column> AS sort_key FROM documents
//	         WHERE id IN (SELECT id FROM keyword_ids) AND <filters>) ...
//
// A shorter keyword has no trigram to look up (a GIN scan would read the whole
// index): it keeps the filters and the keyword in one scan, which the planner
// makes a sequential scan or a scan of the filters' indexes, as it should.
func (d *DB) listDocumentsByKeyword(ctx context.Context, f DocumentFilter, orderBy, dir string) ([]models.Document, int, error) {
	matches := d.NewSelect().Model((*models.Document)(nil)).
		Column("id").ColumnExpr("?TableAlias.? AS sort_key", bun.Ident(orderBy))
	indexed := hasTrigram(f.Keyword)
	var ids *bun.SelectQuery
	if indexed {
		ids = d.NewSelect().Model((*models.Document)(nil)).Column("id").
			WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery { return d.whereKeyword(q, f.Keyword) })
		filters := f
		filters.Keyword = ""
		matches = d.whereDocuments(matches.Where("?TableAlias.id IN (SELECT id FROM keyword_ids)"), filters)
	} else {
		matches = d.whereDocuments(matches, f)
	}
	page := d.NewSelect().Table("keyword_matches").Column("id").
		OrderExpr("sort_key " + dir + ", id " + dir)
	if f.Limit > 0 {
		page = page.Limit(int64(f.Limit))
	}
	if f.Offset > 0 {
		page = page.Offset(int64(f.Offset))
	}
	var rows []documentWithTotal
	total := 0
	list := func(ctx context.Context, db bun.IDB) error {
		with := func(q *bun.SelectQuery) *bun.SelectQuery {
			if ids != nil {
				q = q.WithQuery(bun.NewWithQuery("keyword_ids", ids).Materialized())
			}
			return q.WithQuery(bun.NewWithQuery("keyword_matches", matches).Materialized())
		}
		err := with(db.NewSelect()).Model(&rows).Column(documentColumns(d, !f.ExcludeContent)...).
			ColumnExpr("(SELECT count(*) FROM keyword_matches) AS total").
			Where("?TableAlias.id = ANY(ARRAY(?))", page).
			OrderExpr("?TableAlias.? "+dir+", ?TableAlias.id "+dir, bun.Ident(orderBy)).
			Scan(ctx)
		if err != nil || len(rows) > 0 || f.Offset == 0 {
			return err
		}
		// A page past the end has no row to carry the total.
		return with(db.NewSelect()).Table("keyword_matches").ColumnExpr("count(*)").Scan(ctx, &total)
	}
	var err error
	if indexed {
		err = d.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
			if _, err := tx.ExecContext(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
				return err
			}
			return list(ctx, tx)
		})
	} else {
		err = list(ctx, d.DB)
	}
	if err != nil {
		return nil, 0, Classify(err)
	}
	docs := make([]models.Document, len(rows))
	for i, r := range rows {
		docs[i], total = r.Document, r.Total
	}
	return docs, total, nil
}

// hasTrigram reports whether pg_trgm finds a trigram in the LIKE pattern of
// kw to look up in its indexes: three letters or digits in a row.
func hasTrigram(kw string) bool {
	run := 0
	for _, r := range kw {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			run = 0
			continue
		}
		if run++; run >= 3 {
			return true
		}
	}
	return false
}

// documentColumns names the columns of documents a list reads: never
// parse_meta, and content only when withContent.
func documentColumns(d *DB, withContent bool) []string {
	fields := d.Table(reflect.TypeFor[models.Document]()).Fields
	cols := make([]string, 0, len(fields))
	for _, f := range fields {
		if f.Name != "parse_meta" && (withContent || f.Name != "content") {
			cols = append(cols, f.Name)
		}
	}
	return cols
}

// nonEmpty turns an empty id list into one that matches no row, since
// "IN ()" is not valid SQL.
func nonEmpty(ids []int64) []int64 {
	if len(ids) == 0 {
		return []int64{-1}
	}
	return ids
}

// GetDocument returns a document by id.
func (d *DB) GetDocument(ctx context.Context, id int64) (*models.Document, error) {
	return selectOne[models.Document](ctx, d, "id = ?", id)
}

// DocumentWithSite is a document with the names of its site and tenant, as
// document details show them.
type DocumentWithSite struct {
	models.Document `bun:",extend"`
	SiteName        *string `bun:"site_name"`
	SiteSlug        *string `bun:"site_slug"`
	TenantSlug      *string `bun:"tenant_slug"`
}

// GetDocumentWithSite returns a document with its site's name and slug and
// its tenant's slug in one query (the client detail is a hot path).
func (d *DB) GetDocumentWithSite(ctx context.Context, id int64) (*DocumentWithSite, error) {
	row := new(DocumentWithSite)
	// The model's columns by name: documents has columns the model does not
	// read (content_words on PostgreSQL).
	var cols strings.Builder
	for i, f := range d.Table(reflect.TypeFor[models.Document]()).Fields {
		if i > 0 {
			cols.WriteString(", ")
		}
		cols.WriteString("?TableAlias." + string(f.SQLName))
	}
	err := d.NewSelect().Model(row).ColumnExpr(cols.String()).
		ColumnExpr("s.name AS site_name, s.slug AS site_slug, t.slug AS tenant_slug").
		Join("LEFT JOIN sites AS s ON s.id = ?TableAlias.site_id").
		Join("LEFT JOIN tenants AS t ON t.id = s.tenant_id").
		Where("?TableAlias.id = ?", id).Scan(ctx)
	return row, Classify(err)
}

// SiteInfo names a site and its tenant.
type SiteInfo struct {
	ID         int64  `bun:"id"`
	Name       string `bun:"name"`
	Slug       string `bun:"slug"`
	TenantSlug string `bun:"tenant_slug"`
}

// SiteInfos maps site ids to their names and tenant slugs (one query for a
// page of documents).
func (d *DB) SiteInfos(ctx context.Context, siteIDs []int64) (map[int64]SiteInfo, error) {
	out := map[int64]SiteInfo{}
	if len(siteIDs) == 0 {
		return out, nil
	}
	var rows []SiteInfo
	err := d.NewSelect().TableExpr("sites AS s").
		ColumnExpr("s.id, s.name, s.slug, COALESCE(t.slug, '') AS tenant_slug").
		Join("LEFT JOIN tenants AS t ON t.id = s.tenant_id").
		Where("s.id IN (?)", bun.List(siteIDs)).Scan(ctx, &rows)
	for _, r := range rows {
		out[r.ID] = r
	}
	return out, Classify(err)
}

// CreateDocument inserts doc. A collection_id must name a collection of the
// document's site; on PostgreSQL the collection row is share-locked so that a
// concurrent collection delete cannot orphan the document.
func (d *DB) CreateDocument(ctx context.Context, doc *models.Document) error {
	now := time.Now().UTC()
	err := d.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		return d.insertNewDocument(ctx, tx, doc, now, models.RevisionCreate)
	})
	if err == nil {
		d.changed(ctx, Change{Documents: []int64{doc.ID}})
	}
	return err
}

// insertNewDocument inserts a new document created at now (content version
// 1 unless it has one) and its first revision, by source def when the
// context carries none. Its collection_id must name a collection of its site.
func (d *DB) insertNewDocument(ctx context.Context, tx bun.Tx, doc *models.Document, now time.Time, def string) error {
	doc.CreatedAt, doc.UpdatedAt = now, now
	if doc.ContentVersion == 0 {
		doc.ContentVersion = 1
	}
	if err := d.checkDocCollection(ctx, tx, doc.SiteID, doc.CollectionID); err != nil {
		return err
	}
	if err := d.insertDocuments(ctx, tx, []*models.Document{doc}); err != nil {
		return err
	}
	return d.createdRevisions(ctx, tx, []*models.Document{doc}, def)
}

// UpdateDocument reads the document in a transaction (row-locked on
// PostgreSQL), lets change edit it, and writes it back. It returns the rows
// before and after the change.
//
// Vector bookkeeping: when the title or the content changed, content_version
// is bumped (chunk ids include it, so a later vectorization replaces the old
// chunks) and the new version is stored as a revision (source and author
// from the context, see WithRevision; an identical save stores none), and a document whose vector_status was "completed" becomes
// "outdated": it stays searchable with its old vectors until it is vectorized
// again. Other vector states are left to the vectorization workflow.
func (d *DB) UpdateDocument(ctx context.Context, id int64, change func(doc *models.Document) error) (before, after *models.Document, err error) {
	err = d.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		before, after, err = d.updateDocumentTx(ctx, tx, id, change)
		return err
	})
	if err == nil {
		d.changed(ctx, Change{Documents: []int64{id}})
	}
	return before, after, err
}

// updateDocumentTx is UpdateDocument within a transaction, without the
// change notification.
func (d *DB) updateDocumentTx(ctx context.Context, tx bun.Tx, id int64, change func(doc *models.Document) error) (before, after *models.Document, err error) {
	doc := new(models.Document)
	q := tx.NewSelect().Model(doc).Where("id = ?", id)
	if d.Postgres() {
		q = q.For("UPDATE")
	}
	if err := q.Scan(ctx); err != nil {
		return nil, nil, err
	}
	old := *doc
	if err := change(doc); err != nil {
		return nil, nil, err
	}
	if !sameParent(old.CollectionID, doc.CollectionID) {
		if err := d.checkDocCollection(ctx, tx, doc.SiteID, doc.CollectionID); err != nil {
			return nil, nil, err
		}
	}
	if doc.Title != old.Title || doc.Content != old.Content {
		doc.ContentVersion = old.ContentVersion + 1
		if old.VectorStatus == models.VecCompleted {
			doc.VectorStatus = models.VecOutdated
		}
	}
	doc.UpdatedAt = time.Now().UTC()
	// views is left out: the view flusher increments it concurrently.
	cols := []string{"collection_id", "title", "content", "summary",
		"cover_image", "category", "author", "tags", "status", "vector_status", "content_version",
		"reading_time", "updated_at"}
	var model any = doc
	if d.Postgres() && doc.Content != old.Content {
		model, cols = newDocumentRow(doc), append(cols, "content_words")
	}
	upd := tx.NewUpdate().Model(model).Column(cols...).WherePK()
	if doc.ContentVersion != old.ContentVersion && !d.revisionsOff.Load() {
		if err := d.updateWithRevision(ctx, tx, upd, doc, revisionMeta(ctx, models.RevisionEdit, doc)); err != nil {
			return nil, nil, err
		}
	} else if _, err := upd.Exec(ctx); err != nil {
		return nil, nil, err
	}
	return &old, doc, nil
}

// DeleteDocument deletes a document with its chunk rows and revisions and
// returns the deleted row.
func (d *DB) DeleteDocument(ctx context.Context, id int64) (*models.Document, error) {
	doc := new(models.Document)
	err := d.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := tx.NewSelect().Model(doc).ExcludeColumn("content").Where("id = ?", id).Scan(ctx); err != nil {
			return err
		}
		for _, m := range []any{(*models.Chunk)(nil), (*models.DocumentRevision)(nil)} {
			if _, err := tx.NewDelete().Model(m).Where("document_id = ?", id).Exec(ctx); err != nil {
				return err
			}
		}
		_, err := tx.NewDelete().Model((*models.Document)(nil)).Where("id = ?", id).Exec(ctx)
		return err
	})
	if err == nil {
		d.changed(ctx, Change{Documents: []int64{id}})
	}
	return doc, err
}

// TreeDocuments returns the id, title, status, views, tags and collection of
// every document of the site that sits in a collection (published ones only
// when publishedOnly), newest first: the document nodes of a tree.
func (d *DB) TreeDocuments(ctx context.Context, siteID int64, publishedOnly bool) ([]models.Document, error) {
	var docs []models.Document
	q := d.NewSelect().Model(&docs).Column("id", "title", "status", "views", "tags", "collection_id", "created_at").
		Where("site_id = ?", siteID).Where("collection_id IS NOT NULL")
	if publishedOnly {
		q = q.Where("status = ?", models.DocPublished)
	}
	err := q.Order("created_at DESC", "id DESC").Scan(ctx)
	return docs, Classify(err)
}

func (d *DB) checkDocCollection(ctx context.Context, tx bun.Tx, siteID int64, collectionID *int64) error {
	if collectionID == nil {
		return nil
	}
	var site int64
	q := tx.NewSelect().Model((*models.Collection)(nil)).Column("site_id").Where("id = ?", *collectionID)
	if d.Postgres() {
		q = q.For("SHARE")
	}
	err := q.Scan(ctx, &site)
	if errors.Is(Classify(err), ErrNotFound) || (err == nil && site != siteID) {
		return ErrCollectionNotInSite
	}
	return err
}
