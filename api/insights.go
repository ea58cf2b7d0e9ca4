package api

import (
	"errors"
	"math"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/internal/db"
)

// The reference's EE admin routes for reviewing what readers asked and where
// the docs failed them: a site's chat sessions, feedback and analytics.

// SiteChatListQuery is the query of GET /sites/{id}/chat-sessions.
type SiteChatListQuery struct {
	PageQuery
	Keyword     string `query:"keyword" validate:"max=200"`
	SearchField string `query:"search_field" doc:"all (default) | text (title or last message) | thread_id | member_id (the whole member id, or the visitor: handle the list shows)" validate:"omitempty,oneof=all text thread_id member_id"`
	Source      string `query:"source" doc:"only this channel: web_chat, api, bot_api, wecom_kefu, wecom_app…" validate:"max=50"`
}

// SiteChatList is the data of GET /sites/{id}/chat-sessions (the reference's
// ChatSessionListResponse: list, total, page, size).
type SiteChatList struct {
	List  []ChatSessionResponse `json:"list"`
	Total int                   `json:"total"`
	Page  int                   `json:"page"`
	Size  int                   `json:"size"`
}

// FeedbackListQuery is the query of GET /feedback/list.
type FeedbackListQuery struct {
	PageQuery
	SiteID int64  `query:"site_id" validate:"required,min=1"`
	Rating string `query:"rating" doc:"up | down; default both" validate:"omitempty,oneof=up down"`
}

// FeedbackStatsQuery is the query of GET /feedback/stats.
type FeedbackStatsQuery struct {
	SiteID int64 `query:"site_id" validate:"required,min=1"`
}

// FeedbackListItem is one rating as the reference's admin lists it.
type FeedbackListItem struct {
	ID             int64     `json:"id"`
	ChatMessageID  int64     `json:"chat_message_id" doc:"row id of the rated answer"`
	ThreadID       string    `json:"thread_id"`
	Rating         string    `json:"rating"`
	Reason         *string   `json:"reason"`
	MemberID       string    `json:"member_id"`
	CreatedAt      time.Time `json:"created_at"`
	MessageContent *string   `json:"message_content"`
}

// FeedbackListPage is the data of GET /feedback/list.
type FeedbackListPage struct {
	List  []FeedbackListItem `json:"list"`
	Total int                `json:"total"`
	Page  int                `json:"page"`
	Size  int                `json:"size"`
}

// FeedbackStats is the data of GET /feedback/stats.
type FeedbackStats struct {
	Total   int64            `json:"total"`
	Up      int64            `json:"up"`
	Down    int64            `json:"down"`
	UpRate  float64          `json:"up_rate" doc:"percentage of up ratings, 0..100, one decimal"`
	Reasons map[string]int64 `json:"reasons" doc:"down ratings by reason"`
}

func (s *Server) insightRoutes() []Route {
	return []Route{
		{Surface: Admin, Method: http.MethodGet, Path: "/sites/{id}/chat-sessions", Tag: "insights", Perm: SiteAdminUp,
			Summary: "EE: the site's chat sessions, most recently updated first", Query: SiteChatListQuery{},
			Response: SiteChatList{}, Handler: s.adminSiteChats},
		{Surface: Admin, Method: http.MethodGet, Path: "/sites/{id}/chat-sessions/{thread_id}/messages", Tag: "insights",
			Perm: SiteAdminUp, Summary: "EE: full message history of one of the site's threads", Response: ChatMessages{},
			Handler: s.adminSiteChatMessages},
		{Surface: Admin, Method: http.MethodDelete, Path: "/sites/{id}/chat-sessions/{thread_id}", Tag: "insights",
			Perm: SiteAdminUp, Summary: "EE: delete one of the site's threads with its messages, tool results and feedback",
			Response: ChatSessionDeleted{}, Handler: s.adminDeleteSiteChat},
		{Surface: Admin, Method: http.MethodGet, Path: "/sites/{id}/analytics", Tag: "insights", Perm: SiteAdminUp,
			Summary:     "EE: views, questions, unanswered questions and feedback of the site over the last days",
			Description: "An answer that cited no source, or that the responder marked abstained, counts as unanswered.",
			Query:       AnalyticsQuery{}, Response: SiteAnalytics{}, Handler: s.siteAnalytics},
		{Surface: Admin, Method: http.MethodGet, Path: "/feedback/list", Tag: "insights", Perm: SiteAdminUp,
			Summary: "EE: the site's answer ratings, newest first, with the rated answer", Query: FeedbackListQuery{},
			Response: FeedbackListPage{}, Handler: s.listFeedback},
		{Surface: Admin, Method: http.MethodGet, Path: "/feedback/stats", Tag: "insights", Perm: SiteAdminUp,
			Summary: "EE: counts of the site's answer ratings", Query: FeedbackStatsQuery{}, Response: FeedbackStats{},
			Handler: s.feedbackStats},
	}
}

func (s *Server) adminSiteChats(c *fiber.Ctx) error {
	var q SiteChatListQuery
	st, err := loadThenBindAs(c, s.adminSiteByID, SiteAdminUp, listPage(20, 100), &q)
	if err != nil {
		return err
	}
	f := db.SiteChatFilter{SiteID: st.ID, Keyword: strings.TrimSpace(q.Keyword), Field: q.SearchField,
		Source: strings.TrimSpace(q.Source), Limit: q.Limit(), Offset: q.Offset()}
	if strings.HasPrefix(f.Keyword, memberHandlePrefix) {
		// A handle from this list: the site's member ids that it stands for.
		ids, err := s.d.DB.SiteMemberIDs(c.UserContext(), st.ID)
		if err != nil {
			return err
		}
		f.Field, f.MemberIDs = "member_id", []string{f.Keyword} // the keyword as a member id too
		for _, id := range ids {
			if s.memberHandle(st.ID, id) == f.Keyword {
				f.MemberIDs = append(f.MemberIDs, id)
			}
		}
	}
	rows, total, err := s.d.DB.ListSiteChatSessions(c.UserContext(), f)
	if err != nil {
		return err
	}
	out := SiteChatList{List: make([]ChatSessionResponse, len(rows)), Total: total}
	out.Page, out.Size = q.reported(total)
	for i := range rows {
		out.List[i] = chatSessionResponse(&rows[i])
		out.List[i].MemberID = s.memberHandle(st.ID, rows[i].MemberID)
	}
	return ok(c, out)
}

// siteThread checks that the {thread_id} session belongs to the {id} site
// (already authorised); anything else is 404.
func (s *Server) siteThread(c *fiber.Ctx, siteID int64) (string, error) {
	threadID := param(c, "thread_id")
	sess, err := s.d.DB.ChatSessionByThread(c.UserContext(), threadID)
	if errors.Is(err, db.ErrNotFound) || (err == nil && (sess.SiteID == nil || *sess.SiteID != siteID)) {
		return "", NotFound("chat session")
	}
	return threadID, err
}

func (s *Server) adminSiteChatMessages(c *fiber.Ctx) error {
	st, err := s.adminSiteByID(c, SiteAdminUp)
	if err != nil {
		return err
	}
	threadID, err := s.siteThread(c, st.ID)
	if err != nil {
		return err
	}
	rows, err := s.d.DB.ChatThreadMessages(c.UserContext(), threadID)
	if err != nil {
		return err
	}
	if err := s.toolRowsAsPassages(c.UserContext(), threadID, rows); err != nil {
		return err
	}
	out := ChatMessages{ThreadID: threadID, Messages: make([]ChatMessageOutput, len(rows))}
	for i := range rows {
		out.Messages[i] = chatMessageOutput(&rows[i])
	}
	if err := s.markChangedSources(c.UserContext(), out.Messages); err != nil {
		return err
	}
	return ok(c, out)
}

func (s *Server) adminDeleteSiteChat(c *fiber.Ctx) error {
	st, err := s.adminSiteByID(c, SiteAdminUp)
	if err != nil {
		return err
	}
	threadID := param(c, "thread_id")
	if err := s.d.DB.DeleteSiteChatSession(c.UserContext(), st.ID, threadID); err != nil {
		if errors.Is(err, db.ErrNotFound) {
			return NotFound("chat session")
		}
		return err
	}
	return ok(c, ChatSessionDeleted{Message: "Session deleted", ThreadID: threadID})
}

func (s *Server) listFeedback(c *fiber.Ctx) error {
	var q FeedbackListQuery
	if err := bindPage(c, &q, 20, 100); err != nil {
		return err
	}
	if err := requireSite(c, q.SiteID, SiteAdminUp); err != nil {
		return err
	}
	rows, total, err := s.d.DB.ListSiteFeedback(c.UserContext(), q.SiteID, q.Rating, q.Limit(), q.Offset())
	if err != nil {
		return err
	}
	out := FeedbackListPage{List: make([]FeedbackListItem, len(rows)), Total: total}
	out.Page, out.Size = q.reported(total)
	for i, r := range rows {
		out.List[i] = FeedbackListItem{ID: r.ID, ChatMessageID: r.MessageID, ThreadID: r.ThreadID, Reason: r.Reason,
			MemberID: s.memberHandle(q.SiteID, r.MemberID), CreatedAt: r.CreatedAt.UTC(), MessageContent: r.MessageContent}
		if r.Rating != nil {
			out.List[i].Rating = *r.Rating
		}
	}
	return ok(c, out)
}

func (s *Server) feedbackStats(c *fiber.Ctx) error {
	var q FeedbackStatsQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	if err := requireSite(c, q.SiteID, SiteAdminUp); err != nil {
		return err
	}
	n, err := s.d.DB.SiteFeedbackCounts(c.UserContext(), q.SiteID, time.Time{})
	if err != nil {
		return err
	}
	return ok(c, feedbackStats(n))
}

func feedbackStats(n *db.FeedbackCounts) FeedbackStats {
	out := FeedbackStats{Total: n.Up + n.Down, Up: n.Up, Down: n.Down, Reasons: n.Reasons}
	if out.Total > 0 {
		out.UpRate = math.Round(1000*float64(n.Up)/float64(out.Total)) / 10
	}
	return out
}

// topN returns the n keys of counts with the highest counts (ties by key).
func topN(counts map[string]int64, n int) []string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if counts[keys[i]] != counts[keys[j]] {
			return counts[keys[i]] > counts[keys[j]]
		}
		return keys[i] < keys[j]
	})
	if len(keys) > n {
		keys = keys[:n]
	}
	return keys
}
