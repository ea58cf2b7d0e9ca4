package api

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/models"
	"github.com/lorekb/lore/workflows"
)

// VectorizeRequest is the body of documents:batchVectorize.
type VectorizeRequest struct {
	DocumentIDs []int64 `json:"document_ids" validate:"required"`
}

// BatchVectorizeResult reports which documents were queued.
type BatchVectorizeResult struct {
	SuccessCount int     `json:"success_count"`
	FailedCount  int     `json:"failed_count"`
	DocumentIDs  []int64 `json:"document_ids"`
	MissingIDs   []int64 `json:"missing_ids"`
	JobID        string  `json:"job_id"`
}

// VectorizeResult answers :vectorize and :removeVector: the Document, as the
// reference answers, with document_id and the job_id of the run added.
type VectorizeResult struct {
	DocumentResponse
	DocumentID int64  `json:"document_id"`
	JobID      string `json:"job_id"`
}

func (s *Server) vectorizeRoutes() []Route {
	return []Route{
		{Surface: Admin, Method: http.MethodPost, Path: "/documents/{id}:vectorize", Tag: "documents", Perm: SiteAdminUp,
			Summary: "Vectorize a document (a request during a run coalesces into one more pass)", Response: VectorizeResult{}, Handler: s.vectorizeDocument},
		{Surface: Admin, Method: http.MethodPost, Path: "/documents:batchVectorize", Tag: "documents", Perm: SiteAdminUp,
			Summary: "Vectorize many documents as one job with live progress", Body: VectorizeRequest{}, Response: BatchVectorizeResult{}, Handler: s.batchVectorize},
		{Surface: Admin, Method: http.MethodPost, Path: "/documents/{id}:removeVector", Tag: "documents", Perm: SiteAdminUp,
			Summary: "Remove a document's vectors and reset its vector status", Response: VectorizeResult{}, Handler: s.removeVector},
	}
}

func (s *Server) vectorizeDocument(c *fiber.Ctx) error {
	doc, err := s.loadDocument(c, SiteAdminUp)
	if err != nil {
		return err
	}
	if _, err := s.temporalClient(); err != nil {
		return err
	}
	jobID, err := s.queueVectorize(c, doc)
	if err != nil {
		return err
	}
	return s.vectorResult(c, doc.ID, jobID)
}

// vectorRequest reads the vector_status of a document create or update body
// (validation has kept none and pending): absent or none leave vectorization
// to the server; pending asks for it now, which is the :vectorize request and
// so needs the same right (site_admin or admin on the site, 403 otherwise)
// and the workflow engine (503), both checked before anything is written.
func (s *Server) vectorRequest(c *fiber.Ctx, siteID int64, status string) (bool, error) {
	if status != models.VecPending {
		return false, nil
	}
	if err := requireSite(c, siteID, SiteAdminUp); err != nil {
		return false, err
	}
	if _, err := s.temporalClient(); err != nil {
		return false, err
	}
	return true, nil
}

// queueVectorize marks the document pending and signals-with-start its
// workflow.
func (s *Server) queueVectorize(c *fiber.Ctx, doc *models.Document) (string, error) {
	if _, err := s.d.DB.MarkVectorPending(c.UserContext(), []int64{doc.ID}); err != nil {
		return "", err
	}
	jobID, err := s.startJob(c, jobStart{id: workflows.VectorizeDocID(doc.ID), signal: workflows.SignalRevectorize,
		wf: workflows.VectorizeDocument, input: workflows.VectorizeInput{DocumentID: doc.ID},
		meta: s.documentJob(c, JobVectorizeDocument, "Vectorize", doc)})
	if err != nil {
		// Never leave a document pending without a job behind it.
		_ = s.d.DB.FailVectorize(context.WithoutCancel(c.UserContext()), doc.ID, "could not start vectorization: "+err.Error())
	}
	return jobID, err
}

// documentJob says what a job about one document concerns, with its title:
// Vectorize 'Install' (site Handbook).
func (s *Server) documentJob(c *fiber.Ctx, kind, verb string, doc *models.Document) workflows.JobMeta {
	return workflows.JobMeta{Kind: kind, TenantID: doc.TenantID, SiteID: doc.SiteID, DocumentID: doc.ID,
		Title: workflows.JobTitle(verb, doc.Title, s.siteName(c, doc.SiteID))}
}

// siteName is the name of a site for job titles ("" when it cannot be read).
func (s *Server) siteName(c *fiber.Ctx, siteID int64) string {
	st, err := s.d.DB.GetSite(c.UserContext(), siteID)
	if err != nil {
		return ""
	}
	return st.Name
}

// removeVectorsJob is the job that removes a document's vectors.
func (s *Server) removeVectorsJob(c *fiber.Ctx, doc *models.Document) jobStart {
	return jobStart{id: workflows.RemoveVectorsID(doc.ID), wf: workflows.RemoveDocumentVectors,
		input: workflows.RemoveVectorsInput{DocumentID: doc.ID, TenantID: doc.TenantID},
		meta:  s.documentJob(c, JobRemoveVectors, "Remove vectors of", doc)}
}

func (s *Server) vectorResult(c *fiber.Ctx, docID int64, jobID string) error {
	row, err := s.d.DB.GetDocumentWithSite(c.UserContext(), docID)
	if err != nil {
		return err
	}
	doc, err := s.documentDetail(c, row)
	if err != nil {
		return err
	}
	return ok(c, VectorizeResult{DocumentResponse: doc, DocumentID: doc.ID, JobID: jobID})
}

func (s *Server) batchVectorize(c *fiber.Ctx) error {
	var in VectorizeRequest
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	max := s.d.Cfg.BatchVectorizeMaxDocs
	if len(in.DocumentIDs) == 0 {
		return Invalid("document_ids: at least 1 document id is required")
	}
	if len(in.DocumentIDs) > max {
		return Invalid("document_ids: at most %d document ids per batch (got %d); to re-index a whole site of any size use POST /sites/{id}:reindex", max, len(in.DocumentIDs))
	}
	if _, err := s.temporalClient(); err != nil {
		return err
	}
	ids := dedupe(in.DocumentIDs)
	scope, err := s.d.DB.DocumentScope(c.UserContext(), ids)
	if err != nil {
		return err
	}
	found, missing := []int64{}, []int64{}
	var siteID, tenantID int64
	for _, id := range ids {
		// Documents outside the caller's scope are reported missing like
		// ids that do not exist, so a batch reveals nothing about them.
		sc, ok := scope[id]
		if !ok || !principal(c).SeesSite(sc[0]) {
			missing = append(missing, id)
			continue
		}
		if err := requireSite(c, sc[0], SiteAdminUp); err != nil {
			return err
		}
		if siteID != 0 && sc[0] != siteID {
			// A job belongs to one site: its search attributes, its scope
			// and its id name it.
			return Invalid("document_ids: documents of sites %d and %d; a batch covers the documents of one site (send one batch per site)", siteID, sc[0])
		}
		siteID, tenantID = sc[0], sc[1]
		found = append(found, id)
	}
	res := BatchVectorizeResult{DocumentIDs: found, MissingIDs: missing, SuccessCount: len(found), FailedCount: len(missing)}
	if len(found) == 0 {
		return NotFound("documents")
	}
	if _, err := s.d.DB.MarkVectorPending(c.UserContext(), found); err != nil {
		return err
	}
	res.JobID, err = s.startJob(c, jobStart{id: workflows.BatchVectorizeID(siteID, shortID()), wf: workflows.BatchVectorize,
		input: workflows.BatchInput{DocumentIDs: found, Concurrency: s.d.Cfg.BatchVectorizeConcurrency, GroupSize: s.d.Cfg.BatchVectorizeGroup},
		meta: workflows.JobMeta{Kind: JobBatchVectorize, TenantID: tenantID, SiteID: siteID,
			Title: workflows.JobTitle(fmt.Sprintf("Vectorize %d documents", len(found)), "", s.siteName(c, siteID))}})
	if err != nil {
		for _, id := range found {
			_ = s.d.DB.FailVectorize(context.WithoutCancel(c.UserContext()), id, "could not start vectorization: "+err.Error())
		}
		return err
	}
	return ok(c, res)
}

func (s *Server) removeVector(c *fiber.Ctx) error {
	doc, err := s.loadDocument(c, SiteAdminUp)
	if err != nil {
		return err
	}
	jobID, err := s.startJob(c, s.removeVectorsJob(c, doc))
	if err != nil {
		return err
	}
	// Removal is quick; wait for it so the response shows the reset status.
	ctx, cancel := context.WithTimeout(c.UserContext(), 30*time.Second)
	defer cancel()
	if err := s.d.Temporal.GetWorkflow(ctx, jobID, "").Get(ctx, nil); err != nil {
		return Unavailable("removing vectors did not finish: %v", err)
	}
	return s.vectorResult(c, doc.ID, jobID)
}

// vectorizeMode reports whether the tenant vectorizes on document changes.
func (s *Server) automatic(c *fiber.Ctx, tenantID int64) bool {
	ai, err := s.d.AIConfig(c.UserContext(), tenantID)
	return err == nil && ai.VectorizeMode != deps.ModeManual && s.d.Temporal != nil
}

func dedupe(ids []int64) []int64 {
	seen := make(map[int64]bool, len(ids))
	out := make([]int64, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
