package db

import (
	"context"
	"time"

	"github.com/lorekb/lore/models"
)

// DailyTrend is the chat activity of one UTC day.
type DailyTrend struct {
	Date     string `json:"date"` // "MM-DD"
	Sessions int64  `json:"sessions"`
	Messages int64  `json:"messages"`
}

// RecentSession is one of the newest chat sessions of a site.
type RecentSession struct {
	ThreadID     string    `json:"thread_id"`
	Title        string    `json:"title"`
	CreatedAt    time.Time `json:"created_at"`
	MessageCount int       `json:"message_count"`
	Source       string    `json:"source"`
}

// SiteStats is the dashboard of one site (GET /stats:siteStats). "Today" and
// the daily buckets are UTC days. Chat message figures count the messages a
// reader sees (isReaderMessage), as a session's message_count does, and the
// total is the sum of the site's sessions' counts, as the reference computes
// it: the dashboard and the session list always agree.
type SiteStats struct {
	TotalDocuments    int64           `json:"total_documents"`
	TotalViews        int64           `json:"total_views"`
	ViewsToday        int64           `json:"views_today"`
	UniqueIPsToday    int64           `json:"unique_ips_today"`
	TotalUniqueIPs    int64           `json:"total_unique_ips"`
	TotalChatSessions int64           `json:"total_chat_sessions"`
	TotalChatMessages int64           `json:"total_chat_messages"`
	ActiveChatUsers   int64           `json:"active_chat_users"`
	NewSessionsToday  int64           `json:"new_sessions_today"`
	NewMessagesToday  int64           `json:"new_messages_today"`
	DailyTrends       []DailyTrend    `json:"daily_trends"`
	RecentSessions    []RecentSession `json:"recent_sessions"`
}

// visibleMessage restricts chat_messages (alias m) to reader messages
// (isReaderMessage).
const visibleMessage = "(m.role = 'user' OR (m.role = 'assistant' AND m.content <> ''))"

// isReaderMessage: a message a reader sees, the user's or an answer with
// text; tool rows and the assistant rows that only carry tool calls are not.
func isReaderMessage(role, content string) bool {
	return role == "user" || role == "assistant" && content != ""
}

// dayExpr returns the SQL giving the UTC calendar day ("YYYY-MM-DD") of a
// timestamp column. bun writes SQLite timestamps as UTC text, so the day is
// its first ten characters.
func (d *DB) dayExpr(col string) string {
	if d.Postgres() {
		return "to_char(" + col + " AT TIME ZONE 'UTC', 'YYYY-MM-DD')"
	}
	return "substr(" + col + ", 1, 10)"
}

// GetSiteStats computes the statistics of a site at now with a handful of
// aggregate queries, each served by the site_id indexes of its table.
func (d *DB) GetSiteStats(ctx context.Context, siteID int64, now time.Time) (*SiteStats, error) {
	now = now.UTC()
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	weekStart := today.AddDate(0, 0, -6)
	st := &SiteStats{}

	var docs struct {
		N     int64 `bun:"n"`
		Views int64 `bun:"views"`
	}
	err := d.NewSelect().Model((*models.Document)(nil)).
		ColumnExpr("COUNT(*) AS n, COALESCE(SUM(views), 0) AS views").
		Where("site_id = ?", siteID).Scan(ctx, &docs)
	if err != nil {
		return nil, Classify(err)
	}
	st.TotalDocuments, st.TotalViews = docs.N, docs.Views

	var views struct {
		Today    int64 `bun:"today"`
		IPsToday int64 `bun:"ips_today"`
		IPs      int64 `bun:"ips"`
	}
	err = d.NewSelect().Model((*models.ViewEvent)(nil)).
		ColumnExpr("COUNT(CASE WHEN created_at >= ? THEN 1 END) AS today", today).
		ColumnExpr("COUNT(DISTINCT CASE WHEN created_at >= ? THEN NULLIF(ip, '') END) AS ips_today", today).
		ColumnExpr("COUNT(DISTINCT NULLIF(ip, '')) AS ips").
		Where("site_id = ?", siteID).Scan(ctx, &views)
	if err != nil {
		return nil, Classify(err)
	}
	st.ViewsToday, st.UniqueIPsToday, st.TotalUniqueIPs = views.Today, views.IPsToday, views.IPs

	var chats struct {
		N        int64 `bun:"n"`
		Users    int64 `bun:"users"`
		Messages int64 `bun:"messages"`
	}
	err = d.NewSelect().Model((*models.ChatSession)(nil)).
		ColumnExpr("COUNT(*) AS n, COUNT(DISTINCT member_id) AS users, COALESCE(SUM(message_count), 0) AS messages").
		Where("site_id = ?", siteID).Scan(ctx, &chats)
	if err != nil {
		return nil, Classify(err)
	}
	st.TotalChatSessions, st.ActiveChatUsers, st.TotalChatMessages = chats.N, chats.Users, chats.Messages

	type bucket struct {
		Day string `bun:"day"`
		N   int64  `bun:"n"`
	}
	var sessDays, msgDays []bucket
	err = d.NewSelect().Model((*models.ChatSession)(nil)).
		ColumnExpr(d.dayExpr("created_at")+" AS day, COUNT(*) AS n").
		Where("site_id = ?", siteID).Where("created_at >= ?", weekStart).
		GroupExpr("day").Scan(ctx, &sessDays)
	if err != nil {
		return nil, Classify(err)
	}
	err = d.NewSelect().TableExpr("chat_messages AS m").
		Join("JOIN chat_sessions AS s ON s.thread_id = m.thread_id").
		ColumnExpr(d.dayExpr("m.created_at")+" AS day, COUNT(*) AS n").
		Where("s.site_id = ?", siteID).Where("m.created_at >= ?", weekStart).Where(visibleMessage).
		GroupExpr("day").Scan(ctx, &msgDays)
	if err != nil {
		return nil, Classify(err)
	}
	sessBy, msgBy := map[string]int64{}, map[string]int64{}
	for _, b := range sessDays {
		sessBy[b.Day] = b.N
	}
	for _, b := range msgDays {
		msgBy[b.Day] = b.N
	}
	st.DailyTrends = make([]DailyTrend, 0, 7)
	for i := 0; i < 7; i++ {
		day := weekStart.AddDate(0, 0, i)
		key := day.Format("2006-01-02")
		st.DailyTrends = append(st.DailyTrends, DailyTrend{Date: day.Format("01-02"),
			Sessions: sessBy[key], Messages: msgBy[key]})
	}
	todayKey := today.Format("2006-01-02")
	st.NewSessionsToday, st.NewMessagesToday = sessBy[todayKey], msgBy[todayKey]

	var recent []models.ChatSession
	err = d.NewSelect().Model(&recent).Column("thread_id", "title", "created_at", "message_count", "source").
		Where("site_id = ?", siteID).OrderExpr("created_at DESC, id DESC").Limit(5).Scan(ctx)
	if err != nil {
		return nil, Classify(err)
	}
	st.RecentSessions = make([]RecentSession, len(recent))
	for i, s := range recent {
		st.RecentSessions[i] = RecentSession{ThreadID: s.ThreadID, Title: s.Title, CreatedAt: s.CreatedAt,
			MessageCount: s.MessageCount, Source: s.Source}
	}
	return st, nil
}
