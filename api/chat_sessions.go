package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/models"
)

// ChatSessionResponse is a chat session as the Client API shows it (WIRE §2);
// the conversation memory (summary) is never exposed.
type ChatSessionResponse struct {
	ID              int64     `json:"id"`
	ThreadID        string    `json:"thread_id"`
	SiteID          *int64    `json:"site_id"`
	TenantID        int64     `json:"tenant_id"`
	MemberID        string    `json:"member_id"`
	Title           string    `json:"title" doc:"first 50 characters of the first user message, else \"New conversation\""`
	Source          string    `json:"source" doc:"web_chat | api | bot_api | wecom_kefu | wecom_app"`
	LastMessage     string    `json:"last_message" doc:"at most 200 characters"`
	LastMessageRole string    `json:"last_message_role" doc:"user | assistant"`
	MessageCount    int       `json:"message_count"`
	CreatedAt       time.Time `json:"created_at"`
	UpdatedAt       time.Time `json:"updated_at"`
}

func chatSessionResponse(s *models.ChatSession) ChatSessionResponse {
	return ChatSessionResponse{ID: s.ID, ThreadID: s.ThreadID, SiteID: s.SiteID, TenantID: s.TenantID,
		MemberID: s.MemberID, Title: s.Title, Source: s.Source, LastMessage: s.LastMessage,
		LastMessageRole: s.LastMessageRole, MessageCount: s.MessageCount,
		CreatedAt: s.CreatedAt.UTC(), UpdatedAt: s.UpdatedAt.UTC()}
}

// ChatSessionList is the data of GET /chat/sessions: the sessions under
// items (SPEC.md) and, the same array, under list (the reference's client
// reads list), with the total and the effective page and size.
type ChatSessionList struct {
	Items []ChatSessionResponse `json:"items"`
	List  []ChatSessionResponse `json:"list"`
	Total int                   `json:"total"`
	Page  int                   `json:"page"`
	Size  int                   `json:"size"`
}

// ChatSessionListQuery is the query of GET /chat/sessions.
type ChatSessionListQuery struct {
	PageQuery
	MemberID string `query:"member_id" doc:"the member whose sessions are listed (required)" validate:"required,max=64"`
	SiteID   int64  `query:"site_id" doc:"only sessions of this site" validate:"min=0"`
	Keyword  string `query:"keyword" doc:"case-insensitive substring of title or last_message" validate:"max=200"`
	ClientTenantQuery
}

// ChatSessionQuery optionally pins a session to its member and site; a
// mismatch is 403.
type ChatSessionQuery struct {
	MemberID string `query:"member_id" doc:"when given, must own the session" validate:"max=64"`
	SiteID   int64  `query:"site_id" doc:"when given, must be the session's site" validate:"min=0"`
}

// ChatMemberQuery optionally pins a session to its member; a mismatch is 403.
type ChatMemberQuery struct {
	MemberID string `query:"member_id" doc:"when given, must own the session" validate:"max=64"`
}

// ChatDeleteQuery names the member whose session(s) are deleted.
type ChatDeleteQuery struct {
	MemberID string `query:"member_id" doc:"must own the session (required)" validate:"required,max=64"`
	SiteID   int64  `query:"site_id" doc:"one session: when given, must be its site; all sessions: only this site's (without it, sessions of sites that need an access password are kept)" validate:"min=0"`
}

// ChatMessageOutput is one stored message in the flat OpenAI-style format
// (WIRE §2); every key is always present.
type ChatMessageOutput struct {
	Role             string          `json:"role" doc:"user | assistant | tool"`
	Content          *string         `json:"content" doc:"null on assistant rows without text (the tool-call rows), as the reference stores them"`
	ID               *string         `json:"id" doc:"always null"`
	ToolCalls        json.RawMessage `json:"tool_calls" doc:"[{id, type:\"function\", function:{name, arguments}, elapsed_ms?}], default []"`
	ToolCallID       *string         `json:"tool_call_id" doc:"tool rows: the call answered; else null"`
	Sources          json.RawMessage `json:"sources" doc:"final assistant rows: [{id, title, siteId, documentId, score, sourceIndex, related?, revision?, changed_since, current_revision}] (related: found by the search, not cited by the answer; revision: the document revision quoted; changed_since: the document changed since (true when it is gone, null for answers stored before revisions); current_revision: its revision now, null when gone); else null"`
	AdditionalKwargs json.RawMessage `json:"additional_kwargs" doc:"e.g. {trace, usage_metadata}; default {}"`
	CreatedAt        string          `json:"created_at" doc:"ISO-8601 with +00:00"`
	MessageSeq       *int            `json:"message_seq" doc:"0-based index among the thread's assistant rows with content (the key of feedback); else null"`
	ChatMessageID    string          `json:"chat_message_id"`
	ElapsedMS        int64           `json:"elapsed_ms"`
}

// ChatMessages is the data of GET /chat/sessions/{thread_id}/messages.
type ChatMessages struct {
	ThreadID string              `json:"thread_id"`
	Messages []ChatMessageOutput `json:"messages"`
}

// ToolResultResponse is the stored result of one search tool call.
type ToolResultResponse struct {
	ToolCallID string `json:"tool_call_id"`
	Content    string `json:"content" doc:"the stored JSON text, as a string"`
}

// ChatSessionDeleted confirms the deletion of one session.
type ChatSessionDeleted struct {
	Message  string `json:"message"`
	ThreadID string `json:"thread_id"`
}

// ChatSessionsDeleted confirms the deletion of a member's sessions.
type ChatSessionsDeleted struct {
	Message string `json:"message"`
	Deleted int    `json:"deleted"`
}

// FeedbackIn is the body of POST /chat/feedback.
type FeedbackIn struct {
	ThreadID   string  `json:"thread_id" validate:"required,max=100"`
	MessageSeq *int    `json:"message_seq" doc:"0-based index among the thread's answers" validate:"required,min=0,max=1000000"`
	MemberID   string  `json:"member_id" validate:"required,max=64"`
	Rating     *string `json:"rating" doc:"up | down | null" validate:"omitnil,oneof=up down"`
	Reason     *string `json:"reason" doc:"incorrect | irrelevant | incomplete | slow | null" validate:"omitnil,oneof=incorrect irrelevant incomplete slow"`
}

// FeedbackOut is the bare (not enveloped) response of POST /chat/feedback.
type FeedbackOut struct {
	ChatMessageID int64   `json:"chat_message_id" doc:"row id of the rated answer (a number, as the reference's)"`
	MemberID      string  `json:"member_id"`
	Rating        *string `json:"rating"`
	Reason        *string `json:"reason"`
}

func (s *Server) chatSessionRoutes() []Route {
	return []Route{
		{Surface: Client, Method: http.MethodGet, Path: "/chat/sessions", Tag: "chat", Perm: Public,
			Summary:     "List a member's chat sessions, most recently updated first",
			Description: "Only sessions opened under the caller's owner secret (" + chatSecretDoc + ") or with member_id when it is a strong member id (" + strongMemberDoc + "); without either the list is empty. Without site_id, sessions of sites that need an access password are left out.",
			Query:       ChatSessionListQuery{}, Response: ChatSessionList{}, Handler: s.listChatSessions},
		{Surface: Client, Method: http.MethodGet, Path: "/chat/sessions/{thread_id}", Tag: "chat", Perm: Public,
			Summary: "Get a chat session's metadata", Description: chatOwnedDoc, Query: ChatSessionQuery{}, Response: ChatSessionResponse{},
			Handler: s.getChatSession},
		{Surface: Client, Method: http.MethodGet, Path: "/chat/sessions/{thread_id}/messages", Tag: "chat", Perm: Public,
			Summary: "Full message history of a thread, in order", Description: chatOwnedDoc, Query: ChatMemberQuery{}, Response: ChatMessages{},
			Handler: s.chatSessionMessages},
		{Surface: Client, Method: http.MethodGet, Path: "/chat/sessions/{thread_id}/tool-result/{tool_call_id}", Tag: "chat",
			Perm: Public, Summary: "Retrieval result of one search tool call of the thread", Description: chatOwnedDoc, Query: ChatMemberQuery{},
			Response: ToolResultResponse{}, Handler: s.chatToolResult},
		{Surface: Client, Method: http.MethodDelete, Path: "/chat/sessions/{thread_id}", Tag: "chat", Perm: Public,
			Summary:     "Delete a session after an ownership check",
			Description: "Deletes the session with its messages, tool results, feedback and stored conversation memory. " + chatOwnedDoc,
			Query:       ChatDeleteQuery{}, Response: ChatSessionDeleted{}, Handler: s.deleteChatSession},
		{Surface: Client, Method: http.MethodDelete, Path: "/chat/sessions", Tag: "chat", Perm: Public,
			Summary:     "Delete every session of a member opened under the caller's owner secret or strong member id",
			Description: "Sessions of other owner secrets are kept (without a secret or a strong member_id nothing is deleted); a site that needs an access password needs its token (X-Site-Access-Token) as every chat route does.",
			Query:       ChatDeleteQuery{}, Response: ChatSessionsDeleted{},
			Handler: s.deleteMemberChatSessions},
		{Surface: Client, Method: http.MethodPost, Path: "/chat/feedback", Tag: "chat", Perm: Public,
			Summary: "Rate an answer (thread_id and message_seq); one rating per member and message",
			Description: chatOwnedDoc + " The answer is persisted just after its stream ends, so the lookup is retried for about 1.4 s " +
				"before 404. The response is the bare JSON {chat_message_id, member_id, rating, reason}, not enveloped.",
			Body: FeedbackIn{}, Raw: "application/json", Handler: s.chatFeedback},
	}
}

// chatSecretDoc and chatOwnedDoc explain the owner secret in the OpenAPI
// (see chat_owner.go).
const (
	chatSecretDoc = "the " + chatSecretHeader + " header, or the " + chatSecretCookie + " cookie, that the first chat answer returned"
	chatOwnedDoc  = "Needs the session's owner secret (" + chatSecretDoc + "), or member_id naming the strong member id the session was opened with (" + strongMemberDoc + "); other sessions, messenger ones included, are 404."
	// strongMemberDoc states strongMemberID's rule.
	strongMemberDoc = "an unguessable visitor id: 18 to 64 characters of letters, digits, '-' and '_', at least 6 of them distinct, not containing 'anonymous', such as the reference client's v_ and 16 random hex digits"
)

func (s *Server) listChatSessions(c *fiber.Ctx) error {
	var q ChatSessionListQuery
	if err := bindPage(c, &q, 20, 100); err != nil {
		return err
	}
	owner, err := callerOwnerHash(c)
	if err != nil {
		return err
	}
	memberOwner := memberOwnerHash(q.MemberID)
	tenant, err := s.clientTenant(c.UserContext(), q.ClientTenantQuery)
	if err != nil {
		return err
	}
	page, size := q.reported(0)
	empty := ChatSessionList{Items: []ChatSessionResponse{}, List: []ChatSessionResponse{}, Page: page, Size: size}
	if tenant.none { // an unknown tenant slug: nothing to list
		return ok(c, empty)
	}
	f := db.ChatSessionFilter{MemberID: q.MemberID, OwnerHash: owner, OwnerMemberHash: memberOwner, TenantID: tenant.id, Keyword: q.Keyword,
		Limit: q.Limit(), Offset: q.Offset()}
	if q.SiteID > 0 {
		if _, err := s.clientSite(c, q.SiteID); err != nil {
			return err
		}
		f.SiteID = q.SiteID
	} else {
		f.NoPasswordSites = true
	}
	if owner == "" && memberOwner == "" { // no owner secret nor strong member id: no sessions (after the site's access is checked)
		return ok(c, empty)
	}
	rows, total, err := s.d.DB.ListChatSessions(c.UserContext(), f)
	if err != nil {
		return err
	}
	out := ChatSessionList{Items: make([]ChatSessionResponse, len(rows)), Total: total}
	out.Page, out.Size = q.reported(total)
	for i := range rows {
		out.Items[i] = chatSessionResponse(&rows[i])
	}
	out.List = out.Items
	return ok(c, out)
}

// loadChatSession reads the {thread_id} session (404 if absent or not the
// caller's: see ownedChatSession), checks the optional member and site (403
// on mismatch) and, when the session has a site, the client's access to it.
func (s *Server) loadChatSession(c *fiber.Ctx, memberID string, siteID int64) (*models.ChatSession, error) {
	sess, err := s.ownedChatSession(c, param(c, "thread_id"), memberID)
	if err != nil {
		return nil, err
	}
	if memberID != "" && sess.MemberID != memberID {
		return nil, Errf(http.StatusForbidden, "the session belongs to another member")
	}
	if siteID > 0 && (sess.SiteID == nil || *sess.SiteID != siteID) {
		return nil, Errf(http.StatusForbidden, "the session belongs to another site")
	}
	if sess.SiteID != nil {
		if _, err := s.clientSite(c, *sess.SiteID); err != nil {
			return nil, err
		}
	}
	return sess, nil
}

// ownedChatSession reads a session the caller owns (its owner secret, or
// member when that is the strong member id the session was opened with):
// absent and not owned are the same 404.
func (s *Server) ownedChatSession(c *fiber.Ctx, threadID, member string) (*models.ChatSession, error) {
	sess, err := s.d.DB.ChatSessionByThread(c.UserContext(), threadID)
	if errors.Is(err, db.ErrNotFound) {
		return nil, NotFound("chat session")
	}
	if err != nil {
		return nil, err
	}
	owns, err := ownsChatSession(c, sess, member)
	if err != nil {
		return nil, err
	}
	if !owns {
		return nil, NotFound("chat session")
	}
	return sess, nil
}

func (s *Server) getChatSession(c *fiber.Ctx) error {
	var q ChatSessionQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	sess, err := s.loadChatSession(c, q.MemberID, q.SiteID)
	if err != nil {
		return err
	}
	return ok(c, chatSessionResponse(sess))
}

// memberSession is the session the path names, as the member the query
// names may see it.
func (s *Server) memberSession(c *fiber.Ctx) (*models.ChatSession, error) {
	var q ChatMemberQuery
	if err := bindQuery(c, &q); err != nil {
		return nil, err
	}
	return s.loadChatSession(c, q.MemberID, 0)
}

func (s *Server) chatSessionMessages(c *fiber.Ctx) error {
	sess, err := s.memberSession(c)
	if err != nil {
		return err
	}
	rows, err := s.d.DB.ChatThreadMessages(c.UserContext(), sess.ThreadID)
	if err != nil {
		return err
	}
	if err := s.toolRowsAsPassages(c.UserContext(), sess.ThreadID, rows); err != nil {
		return err
	}
	out := ChatMessages{ThreadID: sess.ThreadID, Messages: make([]ChatMessageOutput, len(rows))}
	for i := range rows {
		out.Messages[i] = chatMessageOutput(&rows[i])
	}
	if err := s.markChangedSources(c.UserContext(), out.Messages); err != nil {
		return err
	}
	return ok(c, out)
}

func chatMessageOutput(m *models.ChatMessage) ChatMessageOutput {
	out := ChatMessageOutput{Role: m.Role, Content: &m.Content,
		ToolCalls:        storedJSON(m.ToolCalls, '[', "[]"),
		AdditionalKwargs: storedJSON(m.Extra, '{', "{}"),
		CreatedAt:        chatISOTime(m.CreatedAt), MessageSeq: m.MessageSeq,
		ChatMessageID: m.ChatMessageID, ElapsedMS: m.ElapsedMS}
	if m.Role == "assistant" && m.Content == "" {
		out.Content = nil
	}
	if m.ToolCallID != "" {
		id := m.ToolCallID
		out.ToolCallID = &id
	}
	if m.Role == "assistant" && m.Sources != "" {
		out.Sources = storedJSON(m.Sources, '[', "")
	}
	return out
}

// storedJSON returns stored JSON text whose top-level value opens with open
// ('[' or '{'), else def (nil, so null, when def is empty).
func storedJSON(stored string, open byte, def string) json.RawMessage {
	b := bytes.TrimSpace([]byte(stored))
	if len(b) > 0 && b[0] == open && json.Valid(b) {
		return b
	}
	if def == "" {
		return nil
	}
	return json.RawMessage(def)
}

// chatISOTime formats a time as Python's isoformat does for UTC datetimes:
// microseconds only when non-zero, and a "+00:00" offset.
func chatISOTime(t time.Time) string {
	t = t.UTC()
	if t.Nanosecond()/1000 == 0 {
		return t.Format("2006-01-02T15:04:05") + "+00:00"
	}
	return t.Format("2006-01-02T15:04:05.000000") + "+00:00"
}

func (s *Server) chatToolResult(c *fiber.Ctx) error {
	sess, err := s.memberSession(c)
	if err != nil {
		return err
	}
	r, err := s.d.DB.ThreadToolResult(c.UserContext(), sess.ThreadID, param(c, "tool_call_id"))
	if errors.Is(err, db.ErrNotFound) {
		return NotFound("tool result")
	}
	if err != nil {
		return err
	}
	content, err := s.toolResultContent(c.UserContext(), sess.ThreadID, r)
	if err != nil {
		return err
	}
	return ok(c, ToolResultResponse{ToolCallID: r.ToolCallID, Content: content})
}

func (s *Server) deleteChatSession(c *fiber.Ctx) error {
	var q ChatDeleteQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	ctx := c.UserContext()
	threadID := param(c, "thread_id")
	sess, err := s.ownedChatSession(c, threadID, q.MemberID)
	if err != nil {
		return err
	}
	if sess.MemberID != q.MemberID {
		return Errf(http.StatusForbidden, "the session belongs to another member")
	}
	if q.SiteID > 0 && (sess.SiteID == nil || *sess.SiteID != q.SiteID) {
		return Errf(http.StatusForbidden, "the session belongs to another site")
	}
	// A session of a live site needs the site's access like any read of it;
	// one whose site is gone or disabled can still be deleted by its owner.
	if sess.SiteID != nil {
		site, err := s.d.DB.GetSite(ctx, *sess.SiteID)
		switch {
		case err == nil && site.Status == models.SiteActive && !site.Deleting:
			if err := s.requireSiteAccess(c, site); err != nil {
				return err
			}
		case err != nil && !errors.Is(err, db.ErrNotFound):
			return err
		}
	}
	// The delete itself re-checks the owner, so a concurrent change of the
	// row can never delete another member's thread.
	if err := s.d.DB.DeleteChatSession(ctx, threadID, q.MemberID, sess.OwnerHash); err != nil {
		if errors.Is(err, db.ErrNotFound) {
			return NotFound("chat session")
		}
		return err
	}
	return ok(c, ChatSessionDeleted{Message: "Session deleted", ThreadID: threadID})
}

func (s *Server) deleteMemberChatSessions(c *fiber.Ctx) error {
	var q ChatDeleteQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	owner, err := callerOwnerHash(c)
	if err != nil {
		return err
	}
	memberOwner := memberOwnerHash(q.MemberID)
	if owner == "" && memberOwner == "" {
		return ok(c, ChatSessionsDeleted{Message: "Sessions deleted", Deleted: 0})
	}
	// As the list: one site needs its access; without a site, sessions of
	// sites that need a password are kept.
	f := db.ChatSessionFilter{MemberID: q.MemberID, OwnerHash: owner, OwnerMemberHash: memberOwner, SiteID: q.SiteID, NoPasswordSites: q.SiteID == 0}
	if q.SiteID > 0 {
		if _, err := s.clientSite(c, q.SiteID); err != nil {
			return err
		}
	}
	n, err := s.d.DB.DeleteMemberChatSessions(c.UserContext(), f)
	if err != nil {
		return err
	}
	return ok(c, ChatSessionsDeleted{Message: "Sessions deleted", Deleted: n})
}

// feedbackRetryDelays are the pauses between the attempts to find the rated
// answer, which is persisted in the background just after its stream ends:
// four attempts within about 1.4 s (SPEC.md, retrieval and chat point 7).
var feedbackRetryDelays = []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond}

func (s *Server) chatFeedback(c *fiber.Ctx) error {
	var in FeedbackIn
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	msg, err := s.resolveFeedbackMessage(c, in.ThreadID, *in.MessageSeq, in.MemberID)
	if err != nil {
		return err
	}
	fb := &models.Feedback{ChatMessageID: msg.ChatMessageID, ThreadID: in.ThreadID, MemberID: in.MemberID,
		Rating: in.Rating, Reason: in.Reason}
	if err := s.d.DB.UpsertFeedback(c.UserContext(), fb); err != nil {
		return err
	}
	return c.JSON(FeedbackOut{ChatMessageID: msg.ID, MemberID: fb.MemberID, Rating: fb.Rating, Reason: fb.Reason})
}

// resolveFeedbackMessage finds the answer (thread_id, message_seq) names,
// trying up to len(feedbackRetryDelays)+1 times. The session is checked once
// found: another member's thread is 403, and a site's access is enforced.
// Still missing after the last attempt is 404.
func (s *Server) resolveFeedbackMessage(c *fiber.Ctx, threadID string, seq int, memberID string) (*models.ChatMessage, error) {
	ctx := c.UserContext()
	checked := false
	for attempt := 0; ; attempt++ {
		if !checked {
			sess, err := s.d.DB.ChatSessionByThread(ctx, threadID)
			switch {
			case err == nil:
				if owns, err := ownsChatSession(c, sess, memberID); err != nil || !owns {
					if err == nil {
						err = NotFound("chat session")
					}
					return nil, err
				}
				if sess.MemberID != memberID {
					return nil, Errf(http.StatusForbidden, "the session belongs to another member")
				}
				if sess.SiteID != nil {
					if _, err := s.clientSite(c, *sess.SiteID); err != nil {
						return nil, err
					}
				}
				checked = true
			case !errors.Is(err, db.ErrNotFound):
				return nil, err
			}
		}
		if checked {
			msg, err := s.d.DB.ChatMessageBySeq(ctx, threadID, seq)
			if err == nil {
				return msg, nil
			}
			if !errors.Is(err, db.ErrNotFound) {
				return nil, err
			}
		}
		if attempt >= len(feedbackRetryDelays) {
			return nil, NotFound("message")
		}
		if err := feedbackPause(ctx, feedbackRetryDelays[attempt]); err != nil {
			return nil, err
		}
	}
}

// feedbackPause waits for d or until ctx is done, whichever comes first.
func feedbackPause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
