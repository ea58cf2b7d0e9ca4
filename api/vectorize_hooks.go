package api

import (
	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/models"
)

// afterDocumentSave is called by the document handlers after a create or
// update has been committed (before is nil on create). In automatic mode
// (ai-config vectorize_mode, default automatic) publishing or editing a
// published document starts its vectorization, and unpublishing removes its
// vectors. In manual mode only the vectorize endpoints do. A failure to reach
// the workflow engine is logged; the document keeps its status and the save
// stands.
func (s *Server) afterDocumentSave(c *fiber.Ctx, before, after *models.Document) error {
	if !s.automatic(c, after.TenantID) {
		return nil
	}
	wasPublished := before != nil && before.Status == models.DocPublished
	changed := before == nil || before.ContentVersion != after.ContentVersion || !wasPublished
	switch {
	case after.Status == models.DocPublished && changed:
		if _, err := s.queueVectorize(c, after); err != nil {
			s.log.Warn("automatic vectorization not started", "document_id", after.ID, "err", err)
		}
	case wasPublished && after.Status != models.DocPublished:
		s.startRemoveVectors(c, after)
	}
	return nil
}

// afterDocumentDelete is called after a document row has been deleted; it
// removes the document's vectors (in both modes).
func (s *Server) afterDocumentDelete(c *fiber.Ctx, doc *models.Document) error {
	if s.d.Temporal != nil {
		s.startRemoveVectors(c, doc)
	}
	return nil
}

func (s *Server) startRemoveVectors(c *fiber.Ctx, doc *models.Document) {
	if _, err := s.startJob(c, s.removeVectorsJob(c, doc)); err != nil {
		s.log.Warn("removing vectors not started", "document_id", doc.ID, "err", err)
	}
}
