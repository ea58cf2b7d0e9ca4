package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/telemetry"
	"github.com/lorekb/lore/models"
)

// The MCP server (docs/mcp.md): /mcp speaks the Model Context Protocol over
// Streamable HTTP (the official Go SDK) for AI agents and IDEs, scoped to
// one site by a bot API key of that site, the same keys as
// /v1/bot/chat/completions. It is stateless: every POST carries the key and
// is answered on its own (no session to pin to a process), so a revoked key
// stops working at the next call and any API process can answer. Its tools
// read published content only, through the paths the Client API and the
// chat use; each call counts against the site's chat request limits and is
// logged with its key's id.

// mcpMaxBody bounds an MCP request on the wire: the largest argument (an
// ask question of LORE_CHAT_MESSAGE_MAX_CHARS) fits many times over.
const mcpMaxBody = 256 << 10

func (s *Server) mcpRoutes() []Route {
	doc := "Tools: search, read_document, list_documents, ask (docs/mcp.md). Errors before the MCP layer (a missing, " +
		"unknown or revoked key, a site that is not active) are the HTTP status with a JSON-RPC error body that also " +
		"carries Lore's code and msg."
	h := s.newMCPHandler()
	serve := func(c *fiber.Ctx) error { return s.serveMCP(c, h) }
	var rs []Route
	for _, m := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		summary := "MCP (Streamable HTTP, stateless) for AI agents with Authorization: Bearer <site API key>"
		if m != http.MethodPost {
			summary = "MCP: no server-initiated stream or session to end (405 with a valid key)"
		}
		rs = append(rs, Route{Surface: Root, Method: m, Path: "/mcp", Tag: "mcp", Perm: Public, Raw: "text/event-stream",
			MaxBody: mcpMaxBody, Summary: summary, Description: doc, Handler: serve})
	}
	return rs
}

// mcpCaller is who calls: the key, its site and the client address. The
// tools read it from their context.
type mcpCaller struct {
	Site  *models.Site
	KeyID int64
	IP    string
}

type mcpCallerKey struct{}

func callerOf(ctx context.Context) *mcpCaller {
	c, _ := ctx.Value(mcpCallerKey{}).(*mcpCaller)
	return c
}

// serveMCP authenticates the key and hands the request to the SDK's
// handler through fasthttp's net/http adaptor, which streams (SSE) once the
// handler flushes. The handler's context carries the caller and the
// request's own values (request id, trace).
func (s *Server) serveMCP(c *fiber.Ctx, h http.Handler) error {
	caller, err := s.mcpAuth(c)
	if err != nil {
		return s.mcpRefusal(c, err)
	}
	ctx := context.WithValue(c.UserContext(), mcpCallerKey{}, caller)
	fasthttpadaptor.NewFastHTTPHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(ctx))
	}))(c.Context())
	return nil
}

// mcpAuth resolves Authorization: Bearer <key> to an active key of an
// active site.
func (s *Server) mcpAuth(c *fiber.Ctx) (*mcpCaller, error) {
	key, found := strings.CutPrefix(c.Get(fiber.HeaderAuthorization), "Bearer ")
	key = strings.TrimSpace(key)
	if !found || key == "" {
		return nil, Errf(http.StatusUnauthorized, "a site API key is required (Authorization: Bearer <API_KEY>)")
	}
	k, err := s.d.DB.ActiveSiteAPIKey(c.UserContext(), HashAPIKey(key))
	if errors.Is(err, db.ErrNotFound) {
		return nil, Errf(http.StatusUnauthorized, "invalid or revoked API key")
	}
	if err != nil {
		return nil, err
	}
	site, err := s.siteRow(c.UserContext(), k.SiteID)
	if errors.Is(err, db.ErrNotFound) || err == nil && (site.Status != models.SiteActive || site.Deleting) {
		return nil, NotFound("site")
	}
	if err != nil {
		return nil, err
	}
	return &mcpCaller{Site: site, KeyID: k.ID, IP: s.clientIP(c)}, nil
}

// mcpRefusal answers a request refused before the MCP layer: its HTTP
// status and a JSON-RPC error (which MCP clients show) naming the cause,
// with Lore's envelope fields beside it.
func (s *Server) mcpRefusal(c *fiber.Ctx, err error) error {
	status, msg := classify(err)
	if status >= 500 {
		msg = "internal error (error id " + s.hideError("answer an MCP request", err) + ")"
	}
	if status == http.StatusUnauthorized {
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="lore"`)
	}
	code := -32600 // invalid request
	if status >= 500 {
		code = -32603
	}
	return c.Status(status).JSON(mcpRefused{JSONRPC: "2.0", ID: requestID(c.Body()), Error: mcpRPCError{Code: code, Message: msg},
		Code: status, Msg: msg})
}

// mcpRefused is a JSON-RPC error response with Lore's envelope fields.
type mcpRefused struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   mcpRPCError     `json:"error"`
	Code    int             `json:"code"`
	Msg     string          `json:"msg"`
	Data    any             `json:"data"`
}

type mcpRPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// requestID is the id of a single JSON-RPC request body ("null" when there
// is none: a batch, a notification or no JSON).
func requestID(body []byte) json.RawMessage {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(body, &m) != nil || len(m.ID) == 0 || len(m.ID) > 200 {
		return json.RawMessage("null")
	}
	return m.ID
}

// newMCPHandler is the SDK's Streamable HTTP handler with Lore's tools.
func (s *Server) newMCPHandler() http.Handler {
	srv := mcp.NewServer(&mcp.Implementation{Name: "lore", Title: "Lore knowledge base", Version: BuildVersion()},
		&mcp.ServerOptions{Instructions: mcpInstructions})
	srv.AddReceivingMiddleware(s.mcpLog)
	s.addMCPTools(srv)
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{Stateless: true, MaxRequestBodyBytes: mcpMaxBody})
}

const mcpInstructions = "The published knowledge base of one Lore site (the site of your API key). " +
	"Use search to find passages, read_document to read a whole page, list_documents to browse, " +
	"and ask for an answer written from the knowledge base with numbered sources."

// mcpLog logs every MCP request with its key's id, site, method (and tool),
// time taken and outcome.
func (s *Server) mcpLog(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		start := time.Now()
		res, err := next(ctx, method, req)
		attrs := []any{"method", method, "took_ms", float64(time.Since(start).Microseconds()) / 1000}
		if cl := callerOf(ctx); cl != nil {
			attrs = append(attrs, "key_id", cl.KeyID, "site_id", cl.Site.ID)
		}
		if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok {
			attrs = append(attrs, "tool", p.Name)
		}
		switch r, _ := res.(*mcp.CallToolResult); {
		case err != nil:
			attrs = append(attrs, "outcome", "protocol error", "err", err.Error())
		case r != nil && r.IsError:
			attrs = append(attrs, "outcome", "tool error", "err", toolErrorText(r))
		default:
			attrs = append(attrs, "outcome", "ok")
		}
		if rid := telemetry.RequestID(ctx); rid != "" {
			attrs = append(attrs, "request_id", rid)
		}
		s.log.InfoContext(ctx, "mcp call", attrs...)
		return res, err
	}
}

func toolErrorText(r *mcp.CallToolResult) string {
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			return t.Text
		}
	}
	return ""
}

// toolFailure is the result of a tool call that failed: an MCP tool error
// (isError), which the agent's model reads, with an API error's own message
// (safe to show) or, for anything else, a generic one with the id of the
// logged detail.
func (s *Server) toolFailure(err error) *mcp.CallToolResult {
	status, msg := classify(err)
	if status >= 500 && status != http.StatusServiceUnavailable {
		msg = fmt.Sprintf("internal error (error id %s)", s.hideError("run an MCP tool", err))
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}
