package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/lorekb/lore/activities"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/retrieve"
	"github.com/lorekb/lore/models"
	"github.com/lorekb/lore/workflows"
)

// Bounds of a retrieval test.
const (
	maxRetrieveTopK     = 50
	maxRetrieveDocs     = 100
	maxRetrieveQuery    = retrieve.MaxQueryRunes
	inspectWaitDuration = 45 * time.Second
)

// RetrieveRequest is the body of documents:retrieve.
type RetrieveRequest struct {
	SiteID       int64   `json:"site_id" validate:"required,min=1"`
	Query        string  `json:"query" validate:"required"`
	TopK         int     `json:"top_k" required:"false" doc:"default: RAG_RERANK_TOP_K" validate:"min=0,max=50"`
	CollectionID int64   `json:"collection_id" required:"false" doc:"only this collection and its descendants" validate:"min=0"`
	DocumentIDs  []int64 `json:"document_ids" required:"false" doc:"only these documents (at most 100)" validate:"max=100"`
	// Stages switches pipeline stages off to see what each adds; absent
	// means the chat's pipeline.
	Stages *retrieve.Stages `json:"stages" required:"false" doc:"default: all on (dense, keyword, rerank)"`
}

// RetrieveResponse is the ranked chunks, as the chat's search would get them.
type RetrieveResponse struct {
	Query  string           `json:"query"`
	SiteID int64            `json:"site_id"`
	Stages retrieve.Stages  `json:"stages"`
	Chunks []RetrievedChunk `json:"chunks"`
}

// RetrievedChunk is one ranked chunk with the score of every stage (null:
// the stage did not see it).
type RetrievedChunk struct {
	DocumentID int64    `json:"document_id"`
	Title      string   `json:"title"`
	ChunkIndex int      `json:"chunk_index"`
	Version    int64    `json:"content_version"`
	Heading    string   `json:"heading_path"`
	Text       string   `json:"text"`
	Dense      *float64 `json:"dense_score"`
	Keyword    *float64 `json:"keyword_score"`
	Fused      float64  `json:"fused_score"`
	Rerank     *float64 `json:"rerank_score"`
	Relevance  float64  `json:"relevance"`
	Score      float64  `json:"score"`
}

// DocumentChunksResponse is a document's stored chunks in order.
type DocumentChunksResponse struct {
	DocumentID     int64          `json:"document_id"`
	ContentVersion int64          `json:"content_version"`
	Chunks         []models.Chunk `json:"chunks" doc:"every stored chunk (all versions still stored), by version then index; start/end are rune offsets into the content of that version (-1: not a verbatim slice); index_format is the analyzer and chunking that made it"`
}

func (s *Server) retrievalRoutes() []Route {
	return []Route{
		{Surface: Admin, Method: http.MethodPost, Path: "/documents:retrieve", Tag: "documents", Perm: SiteAdminUp,
			Summary: "Retrieval test: the chunks the chat's search would get for a query, with every stage's score",
			Body:    RetrieveRequest{}, Response: RetrieveResponse{}, Handler: s.retrieveTest},
		{Surface: Admin, Method: http.MethodGet, Path: "/documents/{id}/chunks", Tag: "documents", Perm: EditorUp,
			Summary:  "A document's stored chunks in order, with content version, heading path and character offsets",
			Response: DocumentChunksResponse{}, Handler: s.documentChunks},
	}
}

func (s *Server) retrieveTest(c *fiber.Ctx) error {
	var in RetrieveRequest
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	query, err := retrievalQuery(in.Query)
	if err != nil {
		return err
	}
	site, err := s.bodySite(c, in.SiteID, SiteAdminUp)
	if err != nil {
		return err
	}
	if in.CollectionID != 0 {
		col, err := s.d.DB.GetCollection(c.UserContext(), in.CollectionID)
		if errors.Is(err, db.ErrNotFound) || err == nil && col.SiteID != site.ID {
			return BadRequest("collection_id: collection %d is not in site %d", in.CollectionID, site.ID)
		}
		if err != nil {
			return err
		}
	}
	topK := in.TopK
	if topK == 0 {
		topK = s.d.Cfg.RAGRerankTopK
	}
	stages := retrieve.AllStages()
	if in.Stages != nil {
		stages = *in.Stages
	}
	act := activities.RetrieveInput{TenantID: site.TenantID, SiteID: site.ID, Query: query, TopK: min(topK, maxRetrieveTopK),
		CollectionID: in.CollectionID, DocumentIDs: dedupe(in.DocumentIDs), Stages: stages}
	var out activities.RetrieveOutput
	if err := s.inspect(c.UserContext(), workflows.Retrieve, act, &out); err != nil {
		return err
	}
	chunks, err := s.rankedChunks(c.UserContext(), out.Chunks)
	if err != nil {
		return err
	}
	return ok(c, RetrieveResponse{Query: query, SiteID: site.ID, Stages: stages, Chunks: chunks})
}

// rankedChunks adds to the workflow's ranked ids what an admin reads: the
// chunk's text and heading path (its database row, written with the vectors)
// and the document's title. A chunk whose row is gone (its document was
// re-indexed or deleted since the search) is left out, as the chat would
// no longer get it either.
func (s *Server) rankedChunks(ctx context.Context, ranked []activities.RankedChunk) ([]RetrievedChunk, error) {
	keys := make([]db.ChunkKey, len(ranked))
	ids := make([]int64, len(ranked))
	for i, r := range ranked {
		keys[i] = db.ChunkKey{DocumentID: r.DocumentID, Version: r.Version, Index: r.ChunkIndex}
		ids[i] = r.DocumentID
	}
	rows, err := s.d.DB.ChunksByKey(ctx, keys)
	if err != nil {
		return nil, err
	}
	titles, err := s.d.DB.DocumentTitles(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]RetrievedChunk, 0, len(ranked))
	for i, r := range ranked {
		row, found := rows[keys[i]]
		if !found {
			continue
		}
		out = append(out, RetrievedChunk{DocumentID: r.DocumentID, Title: titles[r.DocumentID], ChunkIndex: r.ChunkIndex,
			Version: r.Version, Heading: row.Heading, Text: row.Text, Dense: r.Dense, Keyword: r.Keyword, Fused: r.Fused,
			Rerank: r.Rerank, Relevance: r.Relevance, Score: r.Score})
	}
	return out, nil
}

// documentChunks lists the document's chunk rows: the database keeps them
// for every vector store backend, so no workflow is needed to read them.
func (s *Server) documentChunks(c *fiber.Ctx) error {
	doc, err := s.loadDocument(c, EditorUp)
	if err != nil {
		return err
	}
	rows, err := s.d.DB.DocumentChunks(c.UserContext(), doc.ID)
	if err != nil {
		return err
	}
	return ok(c, DocumentChunksResponse{DocumentID: doc.ID, ContentVersion: doc.ContentVersion, Chunks: rows})
}

// retrievalQuery trims and checks a query: required, at most
// maxRetrieveQuery runes, valid UTF-8 without control characters (a binary
// query is a client bug, answered 422 rather than searched).
func retrievalQuery(q string) (string, error) {
	q = strings.TrimSpace(q)
	switch {
	case q == "":
		return "", Invalid("query: must not be empty")
	case !utf8.ValidString(q):
		return "", Invalid("query: must be valid UTF-8 text")
	case utf8.RuneCountInString(q) > maxRetrieveQuery:
		return "", Invalid("query: at most %d characters", maxRetrieveQuery)
	}
	for _, r := range q {
		if unicode.IsControl(r) && !unicode.IsSpace(r) {
			return "", Invalid("query: control characters are not allowed")
		}
	}
	return q, nil
}

// inspect runs a short read-only workflow (the retrieval test) and
// waits for its result: only workers touch the vector store.
func (s *Server) inspect(ctx context.Context, wf any, input, out any) error {
	tc, err := s.temporalClient()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, inspectWaitDuration)
	defer cancel()
	run, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: workflows.RetrieveID(uuid.NewString()),
		TaskQueue: s.d.Cfg.TemporalQueue, EnableEagerStart: true, WorkflowExecutionTimeout: inspectWaitDuration,
		WorkflowIDReusePolicy: enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE}, wf, input)
	if err != nil {
		return Unavailable("could not start the workflow: %v", err)
	}
	if err := run.Get(ctx, out); err != nil {
		return Unavailable("%s", workflows.RootMessage(err))
	}
	return nil
}
