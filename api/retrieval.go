package api

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
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
	"github.com/lorekb/lore/workflows"
)

// Bounds of a retrieval test.
const (
	maxRetrieveTopK     = 50
	maxRetrieveDocs     = 100
	maxRetrieveQuery    = retrieve.MaxQueryRunes
	inspectWaitDuration = 45 * time.Second
)

// RetrieveRequest is the body of documents:retrieve. It also takes the
// reference admin app's body ({query, k, threshold, filter: {site_id, id},
// enable_rerank, rerank_k}).
type RetrieveRequest struct {
	SiteID       int64   `json:"site_id" required:"false" doc:"required unless filter.site_id is given" validate:"min=0"`
	Query        string  `json:"query" validate:"required"`
	TopK         int     `json:"top_k" required:"false" doc:"default: rerank_k, then k, then RAG_RERANK_TOP_K" validate:"min=0,max=50"`
	CollectionID int64   `json:"collection_id" required:"false" doc:"only this collection and its descendants" validate:"min=0"`
	DocumentIDs  []int64 `json:"document_ids" required:"false" doc:"only these documents (at most 100)" validate:"max=100"`
	// Stages switches pipeline stages off to see what each adds; absent
	// means the chat's pipeline.
	Stages *retrieve.Stages `json:"stages" required:"false" doc:"default: all on (dense, keyword, rerank)"`
	// Threshold drops chunks whose dense (cosine) score is below it; a chunk
	// the dense stage did not score (a keyword hit) is kept.
	Threshold *float64 `json:"threshold" required:"false" doc:"dense cosine floor, 0..1" validate:"omitempty,min=0,max=1"`
	// The reference app's names: k and rerank_k (the number returned when
	// given, as the reference returns rerank_k chunks), enable_rerank (false
	// switches the rerank stage off when stages is absent) and filter.
	K            int             `json:"k" required:"false" doc:"the reference's recall depth; the number returned when rerank_k is absent (at most 50 are returned)" validate:"min=0,max=100"`
	RerankK      int             `json:"rerank_k" required:"false" doc:"the number returned (at most 50)" validate:"min=0,max=100"`
	EnableRerank *bool           `json:"enable_rerank" required:"false" doc:"false: no rerank stage (when stages is absent)"`
	Filter       *RetrieveFilter `json:"filter" required:"false"`
}

// RetrieveFilter is the reference app's filter: the site, and one document
// (its id as a string). tenant_id and source are accepted and ignored: the
// site fixes the tenant, and Lore's chunks all come from documents.
type RetrieveFilter struct {
	SiteID   int64  `json:"site_id" required:"false" validate:"min=0"`
	ID       string `json:"id" required:"false" doc:"a document id" validate:"max=20"`
	TenantID *int64 `json:"tenant_id" required:"false"`
	Source   string `json:"source" required:"false" validate:"max=100"`
}

// RetrieveResponse is the ranked chunks, as the chat's search would get them.
type RetrieveResponse struct {
	Query  string           `json:"query"`
	SiteID int64            `json:"site_id"`
	Stages retrieve.Stages  `json:"stages"`
	Chunks []RetrievedChunk `json:"chunks"`
	// List is the same chunks in the reference's shape, which its admin app
	// reads.
	List []RetrieveListItem `json:"list"`
}

// RetrieveListItem is one ranked chunk as the reference shows it: score is
// the rerank score when the reranker scored the chunk, else its dense
// (cosine) score, else its relevance; original_score is the dense score
// (else relevance) of a reranked chunk, null otherwise.
type RetrieveListItem struct {
	Content       string         `json:"content"`
	Score         float64        `json:"score"`
	OriginalScore *float64       `json:"original_score"`
	DocumentID    int64          `json:"document_id"`
	DocumentTitle string         `json:"document_title"`
	Metadata      map[string]any `json:"metadata" doc:"chunk_index, content_version, heading_path and every stage's score"`
}

func retrieveListItem(ch RetrievedChunk, siteID int64) RetrieveListItem {
	recall := ch.Relevance
	if ch.Dense != nil {
		recall = *ch.Dense
	}
	it := RetrieveListItem{Content: ch.Text, Score: recall, DocumentID: ch.DocumentID, DocumentTitle: ch.Title,
		Metadata: map[string]any{"chunk_index": ch.ChunkIndex, "content_version": ch.Version, "heading_path": ch.Heading,
			"document_id": ch.DocumentID, "title": ch.Title, "site_id": siteID, "dense_score": ch.Dense,
			"keyword_score": ch.Keyword, "fused_score": ch.Fused, "rerank_score": ch.Rerank, "relevance": ch.Relevance}}
	if ch.Rerank != nil {
		it.Score, it.OriginalScore = *ch.Rerank, &recall
	}
	return it
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

// DocumentChunk is one stored chunk in the shape the reference's chunk
// viewer reads: an id, the text as content, and the rest as metadata.
type DocumentChunk struct {
	ID       string            `json:"id" doc:"<document_id>:<content_version>:<chunk_index>"`
	Content  string            `json:"content"`
	Metadata DocumentChunkMeta `json:"metadata"`
}

// DocumentChunkMeta locates a chunk: start/end are rune offsets into the
// content of its version (-1: not a verbatim slice); index_format is the
// analyzer and chunking that made it.
type DocumentChunkMeta struct {
	ChunkIndex     int    `json:"chunk_index"`
	ContentVersion int64  `json:"content_version"`
	DocumentID     int64  `json:"document_id"`
	SiteID         int64  `json:"site_id"`
	Title          string `json:"title"`
	HeadingPath    string `json:"heading_path"`
	Start          int    `json:"start"`
	End            int    `json:"end"`
	IndexFormat    string `json:"index_format"`
}

func (s *Server) retrievalRoutes() []Route {
	return []Route{
		{Surface: Admin, Method: http.MethodPost, Path: "/documents:retrieve", Tag: "documents", Perm: SiteAdminUp,
			Summary: "Retrieval test: the chunks the chat's search would get for a query, with every stage's score",
			Body:    RetrieveRequest{}, Response: RetrieveResponse{}, Handler: s.retrieveTest},
		{Surface: Admin, Method: http.MethodGet, Path: "/documents/{id}/chunks", Tag: "documents", Perm: EditorUp,
			Summary:     "A document's stored chunks in order, with content version, heading path and character offsets",
			Description: "Every stored chunk (all versions still stored), by version then index; the document's current version is its content_version.",
			Response:    []DocumentChunk{}, Handler: s.documentChunks},
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
	docIDs := in.DocumentIDs
	if f := in.Filter; f != nil {
		if in.SiteID == 0 {
			in.SiteID = f.SiteID
		}
		if id := strings.TrimSpace(f.ID); id != "" {
			n, err := strconv.ParseInt(id, 10, 64)
			if err != nil || n < 1 {
				return Invalid("filter.id: must be a document id")
			}
			docIDs = append(docIDs, n)
		}
	}
	if in.SiteID == 0 {
		return Invalid("site_id: field required (or filter.site_id)")
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
	topK := cmp.Or(in.TopK, in.RerankK, in.K, s.d.Cfg.RAGRerankTopK)
	stages := retrieve.AllStages()
	if in.EnableRerank != nil {
		stages.Rerank = *in.EnableRerank
	}
	if in.Stages != nil {
		stages = *in.Stages
	}
	act := activities.RetrieveInput{TenantID: site.TenantID, SiteID: site.ID, Query: query, TopK: min(topK, maxRetrieveTopK),
		CollectionID: in.CollectionID, DocumentIDs: dedupe(docIDs), Stages: stages}
	var out activities.RetrieveOutput
	if err := s.inspect(c.UserContext(), workflows.Retrieve, act, &out); err != nil {
		return err
	}
	chunks, err := s.rankedChunks(c.UserContext(), out.Chunks)
	if err != nil {
		return err
	}
	kept, list := chunks[:0], make([]RetrieveListItem, 0, len(chunks))
	for _, ch := range chunks {
		if in.Threshold != nil && ch.Dense != nil && *ch.Dense < *in.Threshold {
			continue
		}
		kept = append(kept, ch)
		list = append(list, retrieveListItem(ch, site.ID))
	}
	return ok(c, RetrieveResponse{Query: query, SiteID: site.ID, Stages: stages, Chunks: kept, List: list})
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
	out := make([]DocumentChunk, len(rows))
	for i, r := range rows {
		out[i] = DocumentChunk{ID: fmt.Sprintf("%d:%d:%d", r.DocumentID, r.Version, r.Index), Content: r.Text,
			Metadata: DocumentChunkMeta{ChunkIndex: r.Index, ContentVersion: r.Version, DocumentID: r.DocumentID,
				SiteID: r.SiteID, Title: doc.Title, HeadingPath: r.Heading, Start: r.Start, End: r.End, IndexFormat: r.IndexFormat}}
	}
	return ok(c, out)
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
