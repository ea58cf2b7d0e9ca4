package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lorekb/lore/activities"
	"github.com/lorekb/lore/internal/chatevent"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/retrieve"
	"github.com/lorekb/lore/models"
	"github.com/lorekb/lore/workflows"
)

// Bounds of the MCP tools' arguments and results.
const (
	mcpReadChars   = 50_000 // characters of a document per read_document call
	mcpListMax     = 100    // documents per list_documents page
	mcpListDefault = 20
	mcpPageMax     = 100_000
	mcpKeywordMax  = 200
)

// SearchArgs are the arguments of the search tool.
type SearchArgs struct {
	Query string `json:"query" jsonschema:"what to look for: a question or keywords"`
	TopK  int    `json:"top_k,omitempty" jsonschema:"how many passages to return"`
}

// SearchResult is what search returns: the ranked passages.
type SearchResult struct {
	Query    string       `json:"query"`
	Passages []MCPPassage `json:"passages"`
}

// MCPPassage is one ranked chunk of a published document.
type MCPPassage struct {
	DocumentID int64   `json:"document_id"`
	Title      string  `json:"title"`
	Section    string  `json:"section" jsonschema:"the heading path of the passage in its document (empty: before any heading)"`
	Score      float64 `json:"score" jsonschema:"the retrieval pipeline's score; higher is better"`
	ChunkIndex int     `json:"chunk_index"`
	Content    string  `json:"content"`
}

// ReadDocumentArgs are the arguments of read_document.
type ReadDocumentArgs struct {
	ID     int64 `json:"id" jsonschema:"the document id (from search or list_documents)"`
	Offset int   `json:"offset,omitempty" jsonschema:"the character to start from, for long documents (next_offset of the previous call)"`
}

// ReadDocumentResult is a published document's Markdown, or a part of it.
type ReadDocumentResult struct {
	ID         int64     `json:"id"`
	Title      string    `json:"title"`
	Collection string    `json:"collection" jsonschema:"the collection path (empty: none)"`
	UpdatedAt  time.Time `json:"updated_at"`
	Version    int64     `json:"content_version"`
	Content    string    `json:"content" jsonschema:"Markdown, from offset"`
	Offset     int       `json:"offset"`
	TotalChars int       `json:"total_chars"`
	NextOffset *int      `json:"next_offset" jsonschema:"where the rest starts; null when the content ends here"`
}

// ListDocumentsArgs are the arguments of list_documents.
type ListDocumentsArgs struct {
	CollectionID int64  `json:"collection_id,omitempty" jsonschema:"only this collection and its descendants"`
	Keyword      string `json:"keyword,omitempty" jsonschema:"case-insensitive substring of the title, summary, tags or content"`
	Page         int    `json:"page,omitempty" jsonschema:"page number, from 1"`
	Size         int    `json:"size,omitempty" jsonschema:"documents per page"`
}

// ListDocumentsResult is a page of the site's published documents, newest
// first.
type ListDocumentsResult struct {
	Documents []MCPDocument `json:"documents"`
	Total     int           `json:"total"`
	Page      int           `json:"page"`
	Size      int           `json:"size"`
	HasMore   bool          `json:"has_more"`
}

// MCPDocument is one document of a list (without its content).
type MCPDocument struct {
	ID           int64     `json:"id"`
	Title        string    `json:"title"`
	Summary      string    `json:"summary"`
	CollectionID *int64    `json:"collection_id"`
	Collection   string    `json:"collection" jsonschema:"the collection path (empty: none)"`
	Tags         []string  `json:"tags"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// AskArgs are the arguments of ask.
type AskArgs struct {
	Question string `json:"question" jsonschema:"the question, in the user's words"`
}

// AskResult is the site assistant's answer with the sources it cites ([n]
// in the answer is the source of that index).
type AskResult struct {
	Answer   string      `json:"answer"`
	ThreadID string      `json:"thread_id" jsonschema:"the stored conversation (site admins see it in the chat sessions)"`
	Sources  []MCPSource `json:"sources"`
}

// MCPSource is one numbered source of an answer.
type MCPSource struct {
	Index      int     `json:"index"`
	DocumentID int64   `json:"document_id"`
	Title      string  `json:"title"`
	Score      float64 `json:"score" jsonschema:"how much of the question the passage states, 0..1"`
	Related    bool    `json:"related" jsonschema:"found by the search but not cited by the answer"`
}

// mcpTool is one tool: its definition, the limits its schema advertises,
// its rate-limit kind and how it runs.
type mcpTool[In, Out any] struct {
	def *mcp.Tool
	// limits adds bounds and defaults to the inferred input schema (the
	// handler checks them itself, with messages naming the argument).
	limits func(props map[string]*jsonschema.Schema)
	kind   string // "mcp", or "chat" for a chat turn (the chat's own buckets)
	check  func(in *In) error
	run    func(ctx context.Context, req *mcp.CallToolRequest, cl *mcpCaller, in In) (Out, error)
}

func ptr[T any](v T) *T { return &v }

func (s *Server) addMCPTools(srv *mcp.Server) {
	cfg := s.d.Cfg
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}
	addTool(s, srv, mcpTool[SearchArgs, SearchResult]{
		def: &mcp.Tool{Name: "search", Title: "Search the knowledge base", Annotations: readOnly,
			Description: "Search the site's published documents with the retrieval pipeline of its chat (dense and keyword " +
				"recall, fusion, rerank). Returns the best passages with their document id, title, section and score; " +
				"read_document gives a whole document."},
		limits: func(p map[string]*jsonschema.Schema) {
			p["query"].MinLength, p["query"].MaxLength = ptr(1), ptr(maxRetrieveQuery)
			p["top_k"].Minimum, p["top_k"].Maximum = ptr(1.0), ptr(float64(maxRetrieveTopK))
			p["top_k"].Default = json.RawMessage(fmt.Sprint(cfg.RAGRerankTopK))
		},
		kind: "mcp",
		check: func(in *SearchArgs) error {
			q, err := retrievalQuery(in.Query)
			in.Query = q
			if err == nil {
				err = intArg("top_k", &in.TopK, cfg.RAGRerankTopK, 1, maxRetrieveTopK)
			}
			return err
		},
		run: s.mcpSearch,
	})
	addTool(s, srv, mcpTool[ReadDocumentArgs, ReadDocumentResult]{
		def: &mcp.Tool{Name: "read_document", Title: "Read a document", Annotations: readOnly,
			Description: fmt.Sprintf("The published Markdown of a document of the site, by id; at most %d characters "+
				"per call (next_offset says where the rest starts).", mcpReadChars)},
		limits: func(p map[string]*jsonschema.Schema) {
			p["id"].Minimum = ptr(1.0)
			p["offset"].Minimum = ptr(0.0)
		},
		kind: "mcp",
		check: func(in *ReadDocumentArgs) error {
			switch {
			case in.ID < 1:
				return Invalid("id: a document id (an integer from 1) is required")
			case in.Offset < 0:
				return Invalid("offset: must be 0 or more")
			}
			return nil
		},
		run: s.mcpReadDocument,
	})
	addTool(s, srv, mcpTool[ListDocumentsArgs, ListDocumentsResult]{
		def: &mcp.Tool{Name: "list_documents", Title: "List documents", Annotations: readOnly,
			Description: "The site's published documents, newest first, without their content: optionally in one " +
				"collection (and its descendants) or matching a keyword; paged."},
		limits: func(p map[string]*jsonschema.Schema) {
			p["collection_id"].Minimum = ptr(1.0)
			p["keyword"].MaxLength = ptr(mcpKeywordMax)
			p["page"].Minimum, p["page"].Maximum, p["page"].Default = ptr(1.0), ptr(float64(mcpPageMax)), json.RawMessage("1")
			p["size"].Minimum, p["size"].Maximum = ptr(1.0), ptr(float64(mcpListMax))
			p["size"].Default = json.RawMessage(fmt.Sprint(mcpListDefault))
		},
		kind: "mcp",
		check: func(in *ListDocumentsArgs) error {
			in.Keyword = strings.TrimSpace(in.Keyword)
			switch n := utf8.RuneCountInString(in.Keyword); {
			case in.CollectionID < 0:
				return Invalid("collection_id: must be a collection id (from 1)")
			case n > mcpKeywordMax:
				return Invalid("keyword: at most %d characters (this one has %d)", mcpKeywordMax, n)
			case !utf8.ValidString(in.Keyword):
				return Invalid("keyword: must be valid UTF-8 text")
			}
			if err := intArg("page", &in.Page, 1, 1, mcpPageMax); err != nil {
				return err
			}
			return intArg("size", &in.Size, mcpListDefault, 1, mcpListMax)
		},
		run: s.mcpListDocuments,
	})
	addTool(s, srv, mcpTool[AskArgs, AskResult]{
		def: &mcp.Tool{Name: "ask", Title: "Ask the site's assistant",
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)},
			Description: "Ask the site's chat assistant: it searches the knowledge base and answers with numbered " +
				"citations [n], listed in sources. Each call is a new conversation, counted against the site's chat " +
				"limits and daily token budget."},
		limits: func(p map[string]*jsonschema.Schema) {
			p["question"].MinLength = ptr(1)
			if n := cfg.ChatMessageMaxChars; n > 0 {
				p["question"].MaxLength = ptr(n)
			}
		},
		kind: "chat",
		check: func(in *AskArgs) error {
			if strings.TrimSpace(in.Question) == "" {
				return Invalid("question: must not be empty")
			}
			return s.checkChatInput("question", []chatMessage{{Role: "user", Text: in.Question}})
		},
		run: s.mcpAsk,
	})
}

// intArg applies an integer argument's default (when 0, i.e. absent) and
// checks its range.
func intArg(name string, v *int, def, lo, hi int) error {
	if *v == 0 {
		*v = def
	}
	if *v < lo || *v > hi {
		return Invalid("%s: must be from %d to %d (got %d)", name, lo, hi, *v)
	}
	return nil
}

// addTool registers t with an input schema inferred from In (plus its
// limits) and an output schema from Out. Arguments are decoded strictly
// and checked here, so that every refusal names the argument and the bound
// in words; failures are tool errors (isError) the agent's model can read.
func addTool[In, Out any](s *Server, srv *mcp.Server, t mcpTool[In, Out]) {
	in, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("mcp tool %s: %v", t.def.Name, err))
	}
	t.limits(in.Properties)
	out, err := jsonschema.For[Out](nil)
	if err != nil {
		panic(fmt.Sprintf("mcp tool %s: %v", t.def.Name, err))
	}
	def := *t.def
	def.InputSchema, def.OutputSchema = in, out
	names := append(make([]string, 0, len(in.Properties)), in.PropertyOrder...)
	if len(names) == 0 {
		for n := range in.Properties {
			names = append(names, n)
		}
	}
	srv.AddTool(&def, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		cl := callerOf(ctx)
		if cl == nil {
			return s.toolFailure(errors.New("an MCP call without its caller")), nil
		}
		var args In
		if err := decodeArgs(req.Params.Arguments, &args, t.def.Name, names); err != nil {
			return s.toolFailure(err), nil
		}
		if err := t.check(&args); err != nil {
			return s.toolFailure(err), nil
		}
		wait, err := s.siteRateLimit(ctx, t.kind, cl.IP, cl.Site)
		if err != nil {
			return s.toolFailure(err), nil
		}
		if wait > 0 {
			return s.toolFailure(Errf(http.StatusTooManyRequests, "too many requests to this site's %s; try again in %d seconds",
				map[string]string{"mcp": "MCP tools", "chat": "chat"}[t.kind], int(wait/time.Second)+1)), nil
		}
		res, err := t.run(ctx, req, cl, args)
		if err != nil {
			return s.toolFailure(err), nil
		}
		b, err := json.Marshal(res)
		if err != nil {
			return s.toolFailure(err), nil
		}
		return &mcp.CallToolResult{StructuredContent: json.RawMessage(b), Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
	})
}

// decodeArgs decodes a tool's arguments (absent: none) strictly: an
// argument the tool does not take, or a value of the wrong type, is refused
// naming it.
func decodeArgs(raw json.RawMessage, v any, tool string, names []string) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	if raw[0] != '{' {
		return Invalid("arguments: must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if dec.Decode(new(json.RawMessage)) != io.EOF {
			return Invalid("arguments: must be one JSON object")
		}
		return nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return Invalid("%s: must be %s", te.Field, jsonKind(te.Type.Kind().String()))
	}
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return Invalid("arguments: %s takes no argument %s (its arguments: %s)", tool, f, strings.Join(names, ", "))
	}
	return Invalid("arguments: %v", err)
}

// jsonKind names a Go kind as the JSON value it decodes from.
func jsonKind(kind string) string {
	switch {
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"):
		return "an integer"
	case strings.HasPrefix(kind, "float"):
		return "a number"
	case kind == "string":
		return "a string"
	case kind == "bool":
		return "true or false"
	}
	return "a " + kind
}

// mcpSearch runs the site's retrieval (SearchRetrieve: the chat's search
// pipeline over published, vectorized documents, as the retrieval test runs
// it) and returns the ranked passages.
func (s *Server) mcpSearch(ctx context.Context, _ *mcp.CallToolRequest, cl *mcpCaller, in SearchArgs) (SearchResult, error) {
	act := activities.RetrieveInput{TenantID: cl.Site.TenantID, SiteID: cl.Site.ID, Query: in.Query, TopK: in.TopK,
		Stages: retrieve.AllStages()}
	var out activities.RetrieveOutput
	if err := s.inspect(ctx, workflows.SearchRetrieve, act, &out); err != nil {
		return SearchResult{}, err
	}
	chunks, err := s.rankedChunks(ctx, out.Chunks)
	if err != nil {
		return SearchResult{}, err
	}
	res := SearchResult{Query: in.Query, Passages: make([]MCPPassage, len(chunks))}
	for i, ch := range chunks {
		res.Passages[i] = MCPPassage{DocumentID: ch.DocumentID, Title: ch.Title, Section: ch.Heading, Score: ch.Score,
			ChunkIndex: ch.ChunkIndex, Content: ch.Text}
	}
	return res, nil
}

// mcpReadDocument returns a published document of the caller's site (any
// other is "not found", whether it exists or not).
func (s *Server) mcpReadDocument(ctx context.Context, _ *mcp.CallToolRequest, cl *mcpCaller, in ReadDocumentArgs) (ReadDocumentResult, error) {
	doc, err := s.d.DB.GetDocument(ctx, in.ID)
	if errors.Is(err, db.ErrNotFound) || err == nil && (doc.SiteID != cl.Site.ID || doc.Status != models.DocPublished) {
		return ReadDocumentResult{}, NotFound(fmt.Sprintf("document %d (in this site's published documents)", in.ID))
	}
	if err != nil {
		return ReadDocumentResult{}, err
	}
	path, err := s.collectionPaths(ctx, []models.Document{*doc})
	if err != nil {
		return ReadDocumentResult{}, err
	}
	runes := []rune(doc.Content)
	if in.Offset > len(runes) {
		return ReadDocumentResult{}, Invalid("offset: the document has %d characters", len(runes))
	}
	end := min(in.Offset+mcpReadChars, len(runes))
	res := ReadDocumentResult{ID: doc.ID, Title: doc.Title, Collection: path[doc.ID], UpdatedAt: doc.UpdatedAt,
		Version: doc.ContentVersion, Content: string(runes[in.Offset:end]), Offset: in.Offset, TotalChars: len(runes)}
	if end < len(runes) {
		res.NextOffset = &end
	}
	return res, nil
}

// collectionPaths gives each document's collection path ("A > B"), by
// document id.
func (s *Server) collectionPaths(ctx context.Context, docs []models.Document) (map[int64]string, error) {
	var ids []int64
	for _, d := range docs {
		if d.CollectionID != nil {
			ids = append(ids, *d.CollectionID)
		}
	}
	chains, err := s.d.DB.CollectionChains(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]string, len(docs))
	for _, d := range docs {
		if d.CollectionID != nil {
			if p := collectionPath(*d.CollectionID, chains); p != nil {
				out[d.ID] = p.Path
			}
		}
	}
	return out, nil
}

// mcpListDocuments lists the site's published documents as the Client API
// does (db.DocumentFilter.Public), in a collection subtree of the site when
// one is named.
func (s *Server) mcpListDocuments(ctx context.Context, _ *mcp.CallToolRequest, cl *mcpCaller, in ListDocumentsArgs) (ListDocumentsResult, error) {
	f := db.DocumentFilter{Public: true, SiteID: cl.Site.ID, TenantID: cl.Site.TenantID, Keyword: in.Keyword,
		ExcludeContent: true, Limit: in.Size, Offset: (in.Page - 1) * in.Size}
	if in.CollectionID > 0 {
		col, err := s.d.DB.GetCollection(ctx, in.CollectionID)
		if errors.Is(err, db.ErrNotFound) || err == nil && col.SiteID != cl.Site.ID {
			return ListDocumentsResult{}, Invalid("collection_id: collection %d is not in this site", in.CollectionID)
		}
		if err != nil {
			return ListDocumentsResult{}, err
		}
		if f.CollectionIDs, err = s.d.DB.CollectionWithDescendants(ctx, in.CollectionID); err != nil {
			return ListDocumentsResult{}, err
		}
	}
	docs, total, err := s.d.DB.ListDocuments(ctx, f)
	if err != nil {
		return ListDocumentsResult{}, err
	}
	paths, err := s.collectionPaths(ctx, docs)
	if err != nil {
		return ListDocumentsResult{}, err
	}
	res := ListDocumentsResult{Documents: make([]MCPDocument, len(docs)), Total: total, Page: in.Page, Size: in.Size,
		HasMore: f.Offset+len(docs) < total}
	for i := range docs {
		d := &docs[i]
		res.Documents[i] = MCPDocument{ID: d.ID, Title: d.Title, Summary: d.Summary, CollectionID: d.CollectionID,
			Collection: paths[d.ID], Tags: parseTags(d.Tags), UpdatedAt: d.UpdatedAt}
	}
	return res, nil
}

// mcpAsk runs one chat turn of the site, as the bot API does (its Temporal
// workflow, the site's model settings, budget and limits), waits for the
// answer and returns it with its numbered sources. A client that sends a
// progress token gets the answer's text as progress notifications while it
// is written.
func (s *Server) mcpAsk(ctx context.Context, req *mcp.CallToolRequest, cl *mcpCaller, in AskArgs) (AskResult, error) {
	if spent, err := s.budgetSpent(ctx, cl.Site); err != nil || spent {
		return AskResult{}, cmpErr(err, errBudgetSpent)
	}
	// The conversation belongs to nobody on the Client API (a secret no one
	// holds); site admins read it with the site's chat sessions.
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return AskResult{}, err
	}
	turn := chatTurn{Site: cl.Site, MemberID: fmt.Sprintf("mcp-key-%d", cl.KeyID), OwnerHash: chatSecretHash(hex.EncodeToString(secret)),
		Source: "mcp", Text: in.Question}
	st, err := s.startChatTurn(ctx, turn)
	if err != nil {
		return AskResult{}, err
	}
	rctx, cancel := context.WithTimeout(ctx, s.d.Cfg.ChatStreamTimeout()+time.Minute)
	defer cancel()
	a := &answer{}
	onEvent := a.add
	if tok := req.Params.GetProgressToken(); tok != nil {
		written := 0
		onEvent = func(ev workflows.ChatEvent) {
			a.add(ev)
			if text, ok := chatevent.TextOf(ev.Data); ok && text != "" {
				written += utf8.RuneCountInString(text)
				_ = req.Session.NotifyProgress(rctx, &mcp.ProgressNotificationParams{ProgressToken: tok,
					Progress: float64(written), Message: text})
			}
		}
	}
	if err := s.followRun(rctx, st.WorkflowID, 0, true, onEvent, nil, nil); err != nil {
		return AskResult{}, Unavailable("the chat run could not be read (error id %s)", s.hideError("read a chat run", err))
	}
	res := AskResult{Answer: a.text.String(), ThreadID: st.ThreadID, Sources: make([]MCPSource, 0, len(a.sources))}
	for _, src := range a.sources {
		res.Sources = append(res.Sources, MCPSource{Index: src.SourceIndex, DocumentID: src.DocumentID, Title: src.Title,
			Score: src.Score, Related: src.Related})
	}
	return res, nil
}

// cmpErr is err, or alt when err is nil.
func cmpErr(err, alt error) error {
	if err != nil {
		return err
	}
	return alt
}
