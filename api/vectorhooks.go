package api

import (
	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/models"
)

// afterDocumentSave is called by the document handlers after a create or
// update has been committed (before is nil on create). In automatic mode it
// starts vectorization or removes vectors, as the document's state requires.
func (s *Server) afterDocumentSave(c *fiber.Ctx, before, after *models.Document) error {
	return nil
}

// afterDocumentDelete is called after a document row has been deleted; it
// removes the document's vectors.
func (s *Server) afterDocumentDelete(c *fiber.Ctx, doc *models.Document) error {
	return nil
}
