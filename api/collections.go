package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/models"
)

// CollectionResponse is a collection as both surfaces show it (WIRE §2).
type CollectionResponse struct {
	ID        int64     `json:"id"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Title     string    `json:"title"`
	TenantID  int64     `json:"tenant_id"`
	SiteID    int64     `json:"site_id"`
	ParentID  *int64    `json:"parent_id"`
	Order     int       `json:"order"`
}

func collectionResponse(c *models.Collection) CollectionResponse {
	return CollectionResponse{ID: c.ID, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt, Title: c.Title,
		TenantID: c.TenantID, SiteID: c.SiteID, ParentID: c.ParentID, Order: c.Order}
}

// TreeNode is one node of a collection tree (WIRE §2). Every key is always
// present: collection nodes have null status, views, tags and collection_id;
// document nodes have null children; children is null, never [], when empty.
// A document node's id is the document id, which may equal a collection id.
type TreeNode struct {
	ID           int64      `json:"id"`
	Title        string     `json:"title"`
	Type         string     `json:"type" enum:"collection,document"`
	Children     []TreeNode `json:"children"`
	Status       *string    `json:"status"`
	Views        *int64     `json:"views"`
	Tags         []string   `json:"tags"`
	CollectionID *int64     `json:"collection_id"`
}

// CollectionListQuery is the query of the admin collection list.
type CollectionListQuery struct {
	PageQuery
	SiteID   int64 `query:"site_id" doc:"site whose collections are listed" validate:"required,min=1"`
	ParentID int64 `query:"parent_id" doc:"list the children of this collection; absent: the root collections" validate:"min=0"`
}

// AdminTreeQuery is the query of the admin collection tree.
type AdminTreeQuery struct {
	SiteID int64  `query:"site_id" validate:"required,min=1"`
	Type   string `query:"type" doc:"collection: collections only; otherwise documents of any status are included" validate:"max=20"`
}

// ClientTreeQuery is the query of the client collection tree.
type ClientTreeQuery struct {
	SiteID           int64 `query:"site_id" validate:"required,min=1"`
	IncludeDocuments bool  `query:"include_documents" doc:"include published document nodes (default false)"`
	ClientTenantQuery
}

// CollectionCreate is the body of POST /collections.
type CollectionCreate struct {
	NewItem
	ParentID *int64 `json:"parent_id" doc:"parent collection of the same site; null or absent: a root collection" validate:"omitempty,min=1"`
	Order    *int   `json:"order" doc:"stored as given; absent: after the last sibling" validate:"omitempty,min=0,max=1000000"`
}

// CollectionUpdate is the body of PUT /collections/{id}; absent fields are
// kept. Sending parent_id (null for the root) that differs from the current
// parent moves the collection like :move, with order as the position.
type CollectionUpdate struct {
	Title    *string `json:"title" validate:"omitempty,max=200"`
	ParentID *int64  `json:"parent_id" validate:"omitempty,min=1"`
	Order    *int    `json:"order" validate:"omitempty,min=0,max=1000000"`
}

// MoveCollectionRequest is the body of POST /collections/{id}:move. The
// new_* names are the spec's; target_parent_id and target_position are
// accepted as aliases. An absent or null parent moves to the root; an absent
// position appends after the last sibling.
type MoveCollectionRequest struct {
	NewParentID    *int64 `json:"new_parent_id" doc:"new parent; null for the root" validate:"omitempty,min=1"`
	NewOrder       *int   `json:"new_order" doc:"position among the new siblings, clamped to their count" validate:"omitempty,min=0"`
	TargetParentID *int64 `json:"target_parent_id" doc:"alias of new_parent_id" validate:"omitempty,min=1"`
	TargetPosition *int   `json:"target_position" doc:"alias of new_order" validate:"omitempty,min=0"`
}

func (s *Server) collectionRoutes() []Route {
	return []Route{
		{Surface: Admin, Method: http.MethodGet, Path: "/collections", Tag: "collections", Perm: EditorUp,
			Summary: "List the collections of a site under a parent (roots by default), by order",
			Query:   CollectionListQuery{}, Response: Page[CollectionResponse]{}, Handler: s.listCollections},
		{Surface: Admin, Method: http.MethodGet, Path: "/collections:tree", Tag: "collections", Perm: EditorUp,
			Summary: "Collection tree of a site, with document nodes of any status unless type=collection",
			Query:   AdminTreeQuery{}, Response: []TreeNode{}, Handler: s.adminTree},
		{Surface: Admin, Method: http.MethodGet, Path: "/collections/{id}", Tag: "collections", Perm: EditorUp,
			Summary: "Get a collection", Response: CollectionResponse{}, Handler: s.getCollection},
		{Surface: Admin, Method: http.MethodPost, Path: "/collections", Tag: "collections", Perm: EditorUp, Created: true,
			Summary: "Create a collection", Body: CollectionCreate{}, Response: CollectionResponse{}, Handler: s.createCollection},
		{Surface: Admin, Method: http.MethodPut, Path: "/collections/{id}", Tag: "collections", Perm: EditorUp,
			Summary: "Update title, parent or order", Body: CollectionUpdate{}, Response: CollectionResponse{}, Handler: s.updateCollection},
		{Surface: Admin, Method: http.MethodPost, Path: "/collections/{id}:move", Tag: "collections", Perm: EditorUp,
			Summary: "Move under a new parent at a position; siblings are renumbered 0..n-1",
			Body:    MoveCollectionRequest{}, Response: CollectionResponse{}, Handler: s.moveCollection},
		{Surface: Admin, Method: http.MethodDelete, Path: "/collections/{id}", Tag: "collections", Perm: SiteAdminUp,
			Summary:  "Delete a collection; refused (400) while it has child collections or documents",
			Response: Message{}, Handler: s.deleteCollection},
		{Surface: Client, Method: http.MethodGet, Path: "/collections:tree", Tag: "collections", Perm: Public,
			Summary:     "Collection tree of an active site, optionally with its published documents",
			Description: privateSiteDoc,
			Query:       ClientTreeQuery{}, Response: []TreeNode{}, Handler: s.clientTree},
	}
}

// adminSite checks that the site exists and is not being deleted (404) and
// that the caller may act on it at level need (403).
func (s *Server) adminSite(c *fiber.Ctx, siteID int64, need Perm) (*models.Site, error) {
	site, err := visibleSite(s.d.DB.GetSite(c.UserContext(), siteID))
	if err != nil {
		return nil, err
	}
	if err := requireSite(c, siteID, need); err != nil {
		return nil, err
	}
	return site, nil
}

// loadCollection reads the {id} collection and checks the caller's right on
// its site.
func (s *Server) loadCollection(c *fiber.Ctx, need Perm) (*models.Collection, error) {
	return loadScoped(c, need, "collection", s.d.DB.GetCollection, func(col *models.Collection) int64 { return col.SiteID })
}

// treeError maps the db package's tree refusals to 400.
func treeError(err error) error {
	for _, e := range []error{db.ErrParentNotFound, db.ErrParentOtherSite, db.ErrMoveIntoSelf,
		db.ErrCollectionNotEmpty, db.ErrCollectionNotInSite} {
		if errors.Is(err, e) {
			return BadRequest("%s", e.Error())
		}
	}
	return err
}

func (s *Server) listCollections(c *fiber.Ctx) error {
	var q CollectionListQuery
	if err := bindPage(c, &q, 20, 100); err != nil {
		return err
	}
	if _, err := s.adminSite(c, q.SiteID, EditorUp); err != nil {
		return err
	}
	var parent *int64
	if q.ParentID > 0 {
		// The parent must be a collection of the site.
		p, err := s.d.DB.GetCollection(c.UserContext(), q.ParentID)
		if errors.Is(err, db.ErrNotFound) || err == nil && p.SiteID != q.SiteID {
			return NotFound("parent collection")
		}
		if err != nil {
			return err
		}
		parent = &q.ParentID
	}
	cols, total, err := s.d.DB.ListCollections(c.UserContext(), q.SiteID, parent, q.Limit(), q.Offset())
	if err != nil {
		return err
	}
	out := make([]CollectionResponse, len(cols))
	for i := range cols {
		out[i] = collectionResponse(&cols[i])
	}
	return paged(c, out, total, q.PageQuery)
}

func (s *Server) getCollection(c *fiber.Ctx) error {
	col, err := s.loadCollection(c, EditorUp)
	if err != nil {
		return err
	}
	return ok(c, collectionResponse(col))
}

func (s *Server) createCollection(c *fiber.Ctx) error {
	var in CollectionCreate
	title, site, err := s.bindNewItem(c, &in)
	if err != nil {
		return err
	}
	col := &models.Collection{TenantID: site.TenantID, SiteID: site.ID, ParentID: in.ParentID, Title: title}
	if err := s.d.DB.CreateCollection(c.UserContext(), col, in.Order); err != nil {
		return treeError(err)
	}
	return created(c, collectionResponse(col))
}

func (s *Server) updateCollection(c *fiber.Ctx) error {
	var in CollectionUpdate
	col, err := loadThenBindAs(c, s.loadCollection, EditorUp, bindJSON, &in)
	if err != nil {
		return err
	}
	if err := optionalTitle(&in.Title); err != nil {
		return err
	}
	ch := db.CollectionChange{Title: in.Title, ParentSet: bodyHas(c, "parent_id"), ParentID: in.ParentID, Order: in.Order}
	out, err := s.d.DB.UpdateCollection(c.UserContext(), col.ID, ch)
	if err != nil {
		return treeError(err)
	}
	return ok(c, collectionResponse(out))
}

func (s *Server) moveCollection(c *fiber.Ctx) error {
	var in MoveCollectionRequest
	col, err := loadThenBindAs(c, s.loadCollection, EditorUp, bindJSON, &in)
	if err != nil {
		return err
	}
	parent, pos := in.NewParentID, in.NewOrder
	if parent == nil && !bodyHas(c, "new_parent_id") {
		parent = in.TargetParentID
	}
	if pos == nil {
		pos = in.TargetPosition
	}
	out, err := s.d.DB.MoveCollection(c.UserContext(), col.ID, parent, pos)
	if err != nil {
		return treeError(err)
	}
	return ok(c, collectionResponse(out))
}

func (s *Server) deleteCollection(c *fiber.Ctx) error {
	col, err := s.loadCollection(c, SiteAdminUp)
	if err != nil {
		return err
	}
	if err := s.d.DB.DeleteCollection(c.UserContext(), col.ID); err != nil {
		return treeError(err)
	}
	return ok(c, Message{Message: "Collection deleted"})
}

func (s *Server) adminTree(c *fiber.Ctx) error {
	var q AdminTreeQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	if _, err := s.adminSite(c, q.SiteID, EditorUp); err != nil {
		return err
	}
	tree, err := s.buildTree(c, q.SiteID, q.Type != "collection", false)
	if err != nil {
		return err
	}
	return ok(c, tree)
}

func (s *Server) clientTree(c *fiber.Ctx) error {
	var q ClientTreeQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	tenant, err := s.clientTenant(c.UserContext(), q.ClientTenantQuery)
	if err != nil {
		return err
	}
	site, err := s.clientSite(c, q.SiteID)
	if err != nil {
		return err
	}
	if !tenant.admits(site.TenantID) {
		return NotFound("site")
	}
	tree, err := s.buildTree(c, q.SiteID, q.IncludeDocuments, true)
	if err != nil {
		return err
	}
	return ok(c, tree)
}

// buildTree reads the site's collections and (when withDocs) its documents'
// node fields with two queries and assembles the tree in memory: roots are
// root collections; in each node child collections come first by order, then
// the collection's documents newest first.
func (s *Server) buildTree(c *fiber.Ctx, siteID int64, withDocs, publishedOnly bool) ([]TreeNode, error) {
	cols, err := s.d.DB.SiteCollections(c.UserContext(), siteID)
	if err != nil {
		return nil, err
	}
	var docs []models.Document
	if withDocs {
		if docs, err = s.d.DB.TreeDocuments(c.UserContext(), siteID, publishedOnly); err != nil {
			return nil, err
		}
	}
	return assembleTree(cols, docs), nil
}

// assembleTree builds tree nodes from collections ordered by (order, id) and
// documents ordered newest first. Collections whose parent is missing (or
// part of a cycle) are not reachable from a root and do not appear.
func assembleTree(cols []models.Collection, docs []models.Document) []TreeNode {
	children := map[int64][]*models.Collection{}
	var roots []*models.Collection
	for i := range cols {
		col := &cols[i]
		if col.ParentID == nil {
			roots = append(roots, col)
		} else {
			children[*col.ParentID] = append(children[*col.ParentID], col)
		}
	}
	docsOf := map[int64][]TreeNode{}
	for i := range docs {
		d := &docs[i]
		if d.CollectionID == nil {
			continue
		}
		status, views, cid := d.Status, d.Views, *d.CollectionID
		docsOf[cid] = append(docsOf[cid], TreeNode{ID: d.ID, Title: d.Title, Type: "document",
			Status: &status, Views: &views, Tags: parseTags(d.Tags), CollectionID: &cid})
	}
	seen := map[int64]bool{}
	var build func(list []*models.Collection) []TreeNode
	build = func(list []*models.Collection) []TreeNode {
		out := make([]TreeNode, 0, len(list))
		for _, col := range list {
			if seen[col.ID] {
				continue
			}
			seen[col.ID] = true
			n := TreeNode{ID: col.ID, Title: col.Title, Type: "collection"}
			n.Children = append(build(children[col.ID]), docsOf[col.ID]...)
			if len(n.Children) == 0 {
				n.Children = nil
			}
			out = append(out, n)
		}
		return out
	}
	return build(roots)
}

// parseTags decodes the stored JSON tag array; anything unreadable is [].
func parseTags(raw string) []string {
	tags := []string{}
	if raw != "" {
		_ = json.Unmarshal([]byte(raw), &tags)
	}
	if tags == nil {
		tags = []string{}
	}
	return tags
}

// bodyHas reports whether the JSON object body has the key, so that an
// explicit null (move to the root) differs from an absent field.
func bodyHas(c *fiber.Ctx, key string) bool {
	var m map[string]json.RawMessage
	if err := json.NewDecoder(bytes.NewReader(c.Body())).Decode(&m); err != nil {
		return false
	}
	_, ok := m[key]
	return ok
}
