package api

import (
	"encoding/json"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/lorekb/lore/internal/analyze"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/models"
)

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
		TenantID: d.TenantID, Summary: nullText(d.Summary), CoverImage: nullText(d.CoverImage), SiteID: d.SiteID,
		CollectionID: d.CollectionID, Category: nullText(d.Category), Author: d.Author, Status: d.Status,
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

// readingTime estimates minutes (see analyze.ReadingTime).
func readingTime(content string) int { return analyze.ReadingTime(content) }

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
