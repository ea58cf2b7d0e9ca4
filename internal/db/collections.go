package db

import (
	"context"
	"errors"
	"time"

	"github.com/lorekb/lore/models"
	"github.com/uptrace/bun"
)

// Refusals of collection tree changes. They are business-rule violations the
// API reports as 400 with the error text.
var (
	ErrParentNotFound     = errors.New("parent collection does not exist")
	ErrParentOtherSite    = errors.New("parent collection belongs to another site")
	ErrMoveIntoSelf       = errors.New("a collection cannot be moved under itself or one of its descendants")
	ErrCollectionNotEmpty = errors.New("collection still has child collections or documents")
)

// maxTreeDepth bounds ancestor walks so that a corrupted (cyclic) parent chain
// can never loop forever.
const maxTreeDepth = 256

// ListCollections returns a page of the site's collections under parentID
// (nil: the root collections), ordered by order then id, and the total.
func (d *DB) ListCollections(ctx context.Context, siteID int64, parentID *int64, limit, offset int) ([]models.Collection, int, error) {
	var cols []models.Collection
	q := d.NewSelect().Model(&cols).Where("site_id = ?", siteID)
	q = whereParent(q, parentID).Order("sort_order ASC", "id ASC").Limit(int64(limit)).Offset(int64(offset))
	n, err := q.ScanAndCount(ctx)
	return cols, int(n), Classify(err)
}

// GetCollection returns a collection by id.
func (d *DB) GetCollection(ctx context.Context, id int64) (*models.Collection, error) {
	return selectOne[models.Collection](ctx, d, "id = ?", id)
}

// SiteCollections returns every collection of the site ordered by order then
// id: one query from which trees and descendant sets are built in memory.
func (d *DB) SiteCollections(ctx context.Context, siteID int64) ([]models.Collection, error) {
	return siteCollections(ctx, d.DB, siteID)
}

func siteCollections(ctx context.Context, db bun.IDB, siteID int64) ([]models.Collection, error) {
	var cols []models.Collection
	err := db.NewSelect().Model(&cols).Where("site_id = ?", siteID).Order("sort_order ASC", "id ASC").Scan(ctx)
	return cols, Classify(err)
}

// Descendants returns root and the ids of every collection below it, given all
// collections of its site. A root absent from cols gives nil.
func Descendants(cols []models.Collection, root int64) []int64 {
	children := map[int64][]int64{}
	found := false
	for _, c := range cols {
		if c.ID == root {
			found = true
		}
		if c.ParentID != nil {
			children[*c.ParentID] = append(children[*c.ParentID], c.ID)
		}
	}
	if !found {
		return nil
	}
	out := []int64{root}
	seen := map[int64]bool{root: true}
	for i := 0; i < len(out); i++ {
		for _, ch := range children[out[i]] {
			if !seen[ch] {
				seen[ch] = true
				out = append(out, ch)
			}
		}
	}
	return out
}

// CollectionWithDescendants returns the collection's id and the ids of all its
// descendants (computed from the site's collections in memory), or an empty
// list when the collection does not exist.
func (d *DB) CollectionWithDescendants(ctx context.Context, id int64) ([]int64, error) {
	c, err := d.GetCollection(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return []int64{}, nil
	}
	if err != nil {
		return nil, err
	}
	cols, err := d.SiteCollections(ctx, c.SiteID)
	if err != nil {
		return nil, err
	}
	ids := Descendants(cols, id)
	if ids == nil {
		ids = []int64{}
	}
	return ids, nil
}

// CollectionNode is the id, title and parent of a collection: what ancestor
// paths need.
type CollectionNode struct {
	ID       int64  `bun:"id"`
	Title    string `bun:"title"`
	ParentID *int64 `bun:"parent_id"`
}

// CollectionChains returns the given collections and all their ancestors,
// keyed by id, with one recursive query (documents show their collection's
// ancestor path).
func (d *DB) CollectionChains(ctx context.Context, ids []int64) (map[int64]CollectionNode, error) {
	out := map[int64]CollectionNode{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []CollectionNode
	err := d.NewRaw(`WITH RECURSIVE chain (id, title, parent_id, depth) AS (
	SELECT id, title, parent_id, 0 FROM collections WHERE id IN (?)
	UNION
	SELECT c.id, c.title, c.parent_id, chain.depth + 1 FROM collections AS c
	JOIN chain ON c.id = chain.parent_id WHERE chain.depth < ?
) SELECT DISTINCT id, title, parent_id FROM chain`, bun.List(ids), maxTreeDepth).Scan(ctx, &rows)
	for _, r := range rows {
		out[r.ID] = r
	}
	return out, Classify(err)
}

// CreateCollection inserts c. parent_id must name a collection of the same
// site. With order nil the collection is appended after its last sibling;
// an explicit order is stored as given. The site row is locked (PostgreSQL) so
// that concurrent tree changes of one site are serialised.
func (d *DB) CreateCollection(ctx context.Context, c *models.Collection, order *int) error {
	now := time.Now().UTC()
	c.CreatedAt, c.UpdatedAt = now, now
	return d.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := d.lockSite(ctx, tx, c.SiteID); err != nil {
			return err
		}
		if c.ParentID != nil {
			if err := checkParent(ctx, tx, c.SiteID, *c.ParentID); err != nil {
				return err
			}
		}
		if order != nil {
			c.Order = *order
		} else {
			var next int
			q := tx.NewSelect().Model((*models.Collection)(nil)).ColumnExpr("COALESCE(MAX(sort_order), -1) + 1").
				Where("site_id = ?", c.SiteID)
			if err := whereParent(q, c.ParentID).Scan(ctx, &next); err != nil {
				return err
			}
			c.Order = next
		}
		_, err := tx.NewInsert().Model(c).Exec(ctx)
		return err
	})
}

// CollectionChange is a partial update of a collection. When ParentSet is
// true (parent_id was sent, possibly null) and the parent differs, the
// collection is moved like MoveCollection: to position Order among the new
// siblings, or after the last one when Order is nil. Otherwise an Order is
// stored as given.
type CollectionChange struct {
	Title     *string
	ParentSet bool
	ParentID  *int64
	Order     *int
}

// UpdateCollection applies ch to the collection id in one transaction and
// returns the updated row.
func (d *DB) UpdateCollection(ctx context.Context, id int64, ch CollectionChange) (*models.Collection, error) {
	var out *models.Collection
	err := d.collectionTx(ctx, id, func(ctx context.Context, tx bun.Tx, c *models.Collection) error {
		if ch.Title != nil {
			c.Title = *ch.Title
		}
		c.UpdatedAt = time.Now().UTC()
		if ch.ParentSet && !sameParent(c.ParentID, ch.ParentID) {
			if err := moveTx(ctx, tx, c, ch.ParentID, ch.Order); err != nil {
				return err
			}
		} else if ch.Order != nil {
			c.Order = *ch.Order
		}
		_, err := tx.NewUpdate().Model(c).Column("title", "parent_id", "sort_order", "updated_at").WherePK().Exec(ctx)
		out = c
		return err
	})
	d.collectionsChanged(ctx, err)
	return out, err
}

// MoveCollection moves the collection under newParent (nil: to the root) at
// position pos among its new siblings (nil: after the last one). The position
// is clamped to the sibling count, and the siblings of the old and the new
// parent are renumbered 0..n-1, all in one transaction. Moving under itself, a
// descendant or another site's collection is refused.
func (d *DB) MoveCollection(ctx context.Context, id int64, newParent *int64, pos *int) (*models.Collection, error) {
	var out *models.Collection
	err := d.collectionTx(ctx, id, func(ctx context.Context, tx bun.Tx, c *models.Collection) error {
		c.UpdatedAt = time.Now().UTC()
		if err := moveTx(ctx, tx, c, newParent, pos); err != nil {
			return err
		}
		_, err := tx.NewUpdate().Model(c).Column("parent_id", "sort_order", "updated_at").WherePK().Exec(ctx)
		out = c
		return err
	})
	d.collectionsChanged(ctx, err)
	return out, err
}

// DeleteCollection deletes an empty collection (no child collections, no
// documents) and renumbers its former siblings.
func (d *DB) DeleteCollection(ctx context.Context, id int64) error {
	err := d.collectionTx(ctx, id, func(ctx context.Context, tx bun.Tx, c *models.Collection) error {
		children, err := tx.NewSelect().Model((*models.Collection)(nil)).Where("parent_id = ?", id).Count(ctx)
		if err != nil {
			return err
		}
		docs, err := tx.NewSelect().Model((*models.Document)(nil)).Where("collection_id = ?", id).Count(ctx)
		if err != nil {
			return err
		}
		if children > 0 || docs > 0 {
			return ErrCollectionNotEmpty
		}
		if _, err := tx.NewDelete().Model(c).WherePK().Exec(ctx); err != nil {
			return err
		}
		return renumber(ctx, tx, c.SiteID, c.ParentID, c.ID)
	})
	d.collectionsChanged(ctx, err)
	return err
}

// collectionsChanged reports a committed collection write: document paths
// (titles and places of collections) shown with documents may have changed.
func (d *DB) collectionsChanged(ctx context.Context, err error) {
	if err == nil {
		d.changed(ctx, Change{AllDocuments: true})
	}
}

// collectionTx runs fn in a transaction holding the site lock and the
// collection row (re-read inside the transaction, locked on PostgreSQL so
// that a document being attached to it concurrently is seen or waits).
func (d *DB) collectionTx(ctx context.Context, id int64, fn func(context.Context, bun.Tx, *models.Collection) error) error {
	first, err := d.GetCollection(ctx, id)
	if err != nil {
		return err
	}
	return d.Tx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if err := d.lockSite(ctx, tx, first.SiteID); err != nil {
			return err
		}
		c := new(models.Collection)
		q := tx.NewSelect().Model(c).Where("id = ?", id)
		if d.Postgres() {
			q = q.For("UPDATE")
		}
		if err := q.Scan(ctx); err != nil {
			return err
		}
		return fn(ctx, tx, c)
	})
}

// lockSite serialises tree changes of one site on PostgreSQL (SQLite
// transactions are already exclusive: they begin IMMEDIATE).
func (d *DB) lockSite(ctx context.Context, tx bun.Tx, siteID int64) error {
	if !d.Postgres() {
		return nil
	}
	var id int64
	err := tx.NewSelect().Model((*models.Site)(nil)).Column("id").Where("id = ?", siteID).
		For("NO KEY UPDATE").Scan(ctx, &id)
	return err
}

// checkParent verifies that parentID is a collection of siteID.
func checkParent(ctx context.Context, tx bun.Tx, siteID, parentID int64) error {
	p := new(models.Collection)
	err := tx.NewSelect().Model(p).Where("id = ?", parentID).Scan(ctx)
	if errors.Is(Classify(err), ErrNotFound) {
		return ErrParentNotFound
	}
	if err != nil {
		return err
	}
	if p.SiteID != siteID {
		return ErrParentOtherSite
	}
	return nil
}

// moveTx validates the new parent of c, renumbers the siblings of the old and
// new parent and sets c.ParentID and c.Order (the caller writes c).
func moveTx(ctx context.Context, tx bun.Tx, c *models.Collection, newParent *int64, pos *int) error {
	if newParent != nil {
		if *newParent == c.ID {
			return ErrMoveIntoSelf
		}
		if err := checkParent(ctx, tx, c.SiteID, *newParent); err != nil {
			return err
		}
		cols, err := siteCollections(ctx, tx, c.SiteID)
		if err != nil {
			return err
		}
		for _, id := range Descendants(cols, c.ID) {
			if id == *newParent {
				return ErrMoveIntoSelf
			}
		}
	}
	if !sameParent(c.ParentID, newParent) {
		if err := renumber(ctx, tx, c.SiteID, c.ParentID, c.ID); err != nil {
			return err
		}
	}
	p := -1
	if pos != nil {
		p = *pos
	}
	order, err := renumberInsert(ctx, tx, c.SiteID, newParent, c.ID, p)
	if err != nil {
		return err
	}
	c.ParentID, c.Order = newParent, order
	return nil
}

// renumber sets order 0..n-1 on the children of parent (nil: roots) of the
// site without skipID (a collection leaving that list).
func renumber(ctx context.Context, tx bun.Tx, siteID int64, parent *int64, skipID int64) error {
	_, err := renumberAt(ctx, tx, siteID, parent, skipID, 0, 0)
	return err
}

// renumberInsert renumbers the children of parent with id placed at position
// pos (clamped; negative means last) and returns that position.
func renumberInsert(ctx context.Context, tx bun.Tx, siteID int64, parent *int64, id int64, pos int) (int, error) {
	return renumberAt(ctx, tx, siteID, parent, id, id, pos)
}

// renumberAt lists the children of parent without skipID, inserts insertID
// (when > 0) at pos, and writes order 0..n-1 to the rows whose order
// changes; the inserted row is written by the caller.
func renumberAt(ctx context.Context, tx bun.Tx, siteID int64, parent *int64, skipID, insertID int64, pos int) (int, error) {
	var sibs []models.Collection
	q := tx.NewSelect().Model(&sibs).Column("id", "sort_order").Where("site_id = ?", siteID).Where("id <> ?", skipID)
	if err := whereParent(q, parent).Order("sort_order ASC", "id ASC").Scan(ctx); err != nil {
		return 0, err
	}
	ids := make([]int64, 0, len(sibs)+1)
	old := make(map[int64]int, len(sibs))
	for _, s := range sibs {
		ids = append(ids, s.ID)
		old[s.ID] = s.Order
	}
	at := -1
	if insertID > 0 {
		at = pos
		if at < 0 || at > len(ids) {
			at = len(ids)
		}
		ids = append(ids[:at], append([]int64{insertID}, ids[at:]...)...)
	}
	for i, id := range ids {
		if id == insertID {
			continue
		}
		if o, ok := old[id]; ok && o == i {
			continue
		}
		if _, err := tx.NewUpdate().Model((*models.Collection)(nil)).Set("sort_order = ?", i).
			Where("id = ?", id).Exec(ctx); err != nil {
			return 0, err
		}
	}
	return at, nil
}

func whereParent(q *bun.SelectQuery, parent *int64) *bun.SelectQuery {
	if parent == nil {
		return q.Where("parent_id IS NULL")
	}
	return q.Where("parent_id = ?", *parent)
}

func sameParent(a, b *int64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}
