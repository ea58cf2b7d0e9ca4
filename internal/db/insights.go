package db

import (
	"context"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/lorekb/lore/models"
	"github.com/uptrace/bun"
)

// The admin's view of what readers did on a site: its chat sessions, the
// feedback they left, and the analytics built from view events, stored turns
// and feedback (the reference's EE admin routes).

// SiteChatFilter is the admin query of a site's chat sessions.
type SiteChatFilter struct {
	SiteID  int64
	Keyword string
	// Field is where Keyword is looked for: all (default), text (title or
	// last message), thread_id or member_id. Member ids are matched whole,
	// never by substring: a strong member id is its visitor's credential,
	// and substring matches would let staff spell one out.
	Field string
	// MemberIDs, when set, are the member ids a member_id search matches
	// instead of Keyword (the ids behind a handle the admin list shows).
	MemberIDs     []string
	Source        string // "" = every channel
	Limit, Offset int
}

// ListSiteChatSessions returns a page of a site's sessions, most recently
// updated first, and the total.
func (d *DB) ListSiteChatSessions(ctx context.Context, f SiteChatFilter) ([]models.ChatSession, int, error) {
	rows := []models.ChatSession{}
	q := d.NewSelect().Model(&rows).Where("site_id = ?", f.SiteID)
	if f.Source != "" {
		q = q.Where("source = ?", f.Source)
	}
	switch {
	case f.Field == "member_id" && len(f.MemberIDs) > 0:
		q = q.Where("member_id IN (?)", bun.List(f.MemberIDs))
	case f.Keyword != "":
		op, kw := d.LikeOp(), Like(f.Keyword)
		cols := map[string][]string{"text": {"title", "last_message"}, "thread_id": {"thread_id"},
			"member_id": {}}[f.Field]
		if cols == nil {
			cols = []string{"title", "last_message", "thread_id"}
		}
		q = q.WhereGroup(" AND ", func(q *bun.SelectQuery) *bun.SelectQuery {
			for _, c := range cols {
				q = q.WhereOr(c+" "+op+" ? ESCAPE '\\'", kw)
			}
			if f.Field == "" || f.Field == "all" || f.Field == "member_id" {
				q = q.WhereOr("member_id = ?", f.Keyword)
			}
			return q
		})
	}
	n, err := q.OrderExpr("updated_at DESC, id DESC").Limit(int64(f.Limit)).Offset(int64(f.Offset)).ScanAndCount(ctx)
	return rows, int(n), Classify(err)
}

// SiteMemberIDs returns the distinct member ids of a site's chat sessions.
func (d *DB) SiteMemberIDs(ctx context.Context, siteID int64) ([]string, error) {
	var ids []string
	err := d.NewSelect().Model((*models.ChatSession)(nil)).Distinct().Column("member_id").
		Where("site_id = ?", siteID).Scan(ctx, &ids)
	return ids, Classify(err)
}

// DeleteSiteChatSession deletes a session of the site with its messages,
// tool results and feedback, in one transaction. A thread that does not
// exist or belongs to another site is ErrNotFound and nothing is deleted.
func (d *DB) DeleteSiteChatSession(ctx context.Context, siteID int64, threadID string) error {
	return d.deleteThread(ctx, threadID, "site_id = ?", siteID)
}

// FeedbackRow is one rating with the answer it rates.
type FeedbackRow struct {
	ID             int64     `bun:"id"`
	MessageID      int64     `bun:"message_id"` // the rated message's row id (0 when the message is gone)
	ChatMessageID  string    `bun:"chat_message_id"`
	ThreadID       string    `bun:"thread_id"`
	MemberID       string    `bun:"member_id"`
	Rating         *string   `bun:"rating"`
	Reason         *string   `bun:"reason"`
	CreatedAt      time.Time `bun:"created_at"`
	MessageContent *string   `bun:"message_content"`
}

// siteFeedback selects the feedback of a site's sessions (alias f).
func (d *DB) siteFeedback(siteID int64) *bun.SelectQuery {
	return d.NewSelect().TableExpr("chat_feedback AS f").
		Join("JOIN chat_sessions AS s ON s.thread_id = f.thread_id").
		Where("s.site_id = ?", siteID)
}

// ListSiteFeedback returns a page of a site's ratings, newest first, with
// the rated answer; rating "" lists up and down.
func (d *DB) ListSiteFeedback(ctx context.Context, siteID int64, rating string, limit, offset int) ([]FeedbackRow, int, error) {
	q := d.siteFeedback(siteID).Where("f.rating IS NOT NULL")
	if rating != "" {
		q = q.Where("f.rating = ?", rating)
	}
	total, err := q.Count(ctx)
	if err != nil {
		return nil, 0, Classify(err)
	}
	rows := []FeedbackRow{}
	err = q.Join("LEFT JOIN chat_messages AS m ON m.chat_message_id = f.chat_message_id").
		ColumnExpr("f.id, COALESCE(m.id, 0) AS message_id, f.chat_message_id, f.thread_id, f.member_id, f.rating, f.reason, f.created_at, m.content AS message_content").
		OrderExpr("f.created_at DESC, f.id DESC").Limit(int64(limit)).Offset(int64(offset)).Scan(ctx, &rows)
	return rows, int(total), Classify(err)
}

// FeedbackCounts are a site's ratings: up, down, and down ratings by reason
// ("" for none given).
type FeedbackCounts struct {
	Up, Down int64
	Reasons  map[string]int64
}

// SiteFeedbackCounts counts a site's ratings, those since since only when
// since is not zero.
func (d *DB) SiteFeedbackCounts(ctx context.Context, siteID int64, since time.Time) (*FeedbackCounts, error) {
	var rows []struct {
		Rating string `bun:"rating"`
		Reason string `bun:"reason"`
		N      int64  `bun:"n"`
	}
	q := d.siteFeedback(siteID).Where("f.rating IS NOT NULL").
		ColumnExpr("f.rating AS rating, COALESCE(f.reason, '') AS reason, COUNT(*) AS n").GroupExpr("f.rating, f.reason")
	if !since.IsZero() {
		q = q.Where("f.created_at >= ?", since)
	}
	if err := q.Scan(ctx, &rows); err != nil {
		return nil, Classify(err)
	}
	out := &FeedbackCounts{Reasons: map[string]int64{}}
	for _, r := range rows {
		switch r.Rating {
		case "up":
			out.Up += r.N
		case "down":
			out.Down += r.N
		}
		if r.Reason != "" {
			out.Reasons[r.Reason] += r.N
		}
	}
	return out, nil
}

// ViewDay is the document views of one UTC day.
type ViewDay struct {
	Date      string // YYYY-MM-DD
	Views     int64
	UniqueIPs int64
}

// TopDocument is a document by views in the analytics window.
type TopDocument struct {
	DocumentID     int64  `bun:"document_id"`
	Title          string `bun:"title"`
	Views          int64  `bun:"views"`
	UniqueVisitors int64  `bun:"unique_visitors"`
}

// Visitor is one reader IP by views in the analytics window.
type Visitor struct {
	IP         string    `bun:"ip"`
	Views      int64     `bun:"views"`
	LastActive time.Time `bun:"last_active"`
}

// Turn is one question a reader asked and how it was answered.
type Turn struct {
	ThreadID string
	Question string
	AskedAt  time.Time
	// Answered is false when the answer cited no source (the responder found
	// nothing to answer from) or the responder marked it abstained; true
	// otherwise. A question whose answer is not stored (yet) is not a turn.
	Answered bool
}

// ViewAnalytics are a site's document views since a time.
type ViewAnalytics struct {
	Days     []ViewDay
	Hours    [24]int64
	Top      []TopDocument
	Referers map[string]int64 // by referring host; "direct" when none
	Visitors []Visitor
}

// maxAnalyticsTurns bounds the stored turns one analytics request reads.
const maxAnalyticsTurns = 20000

// SiteViewAnalytics aggregates a site's view events since since.
func (d *DB) SiteViewAnalytics(ctx context.Context, siteID int64, since time.Time) (*ViewAnalytics, error) {
	out := &ViewAnalytics{Referers: map[string]int64{}}
	views := func() *bun.SelectQuery {
		return d.NewSelect().TableExpr("view_events AS v").Where("v.site_id = ?", siteID).Where("v.created_at >= ?", since)
	}
	var days []struct {
		Day string `bun:"day"`
		N   int64  `bun:"n"`
		IPs int64  `bun:"ips"`
	}
	if err := views().ColumnExpr(d.dayExpr("v.created_at")+" AS day, COUNT(*) AS n, COUNT(DISTINCT NULLIF(v.ip, '')) AS ips").
		GroupExpr("day").OrderExpr("day").Scan(ctx, &days); err != nil {
		return nil, Classify(err)
	}
	for _, b := range days {
		out.Days = append(out.Days, ViewDay{Date: b.Day, Views: b.N, UniqueIPs: b.IPs})
	}
	hour := "CAST(substr(v.created_at, 12, 2) AS INTEGER)"
	if d.Postgres() {
		hour = "CAST(EXTRACT(HOUR FROM v.created_at AT TIME ZONE 'UTC') AS INTEGER)"
	}
	var hours []struct {
		H int   `bun:"h"`
		N int64 `bun:"n"`
	}
	if err := views().ColumnExpr(hour+" AS h, COUNT(*) AS n").GroupExpr("h").Scan(ctx, &hours); err != nil {
		return nil, Classify(err)
	}
	for _, h := range hours {
		if h.H >= 0 && h.H < 24 {
			out.Hours[h.H] = h.N
		}
	}
	if err := views().Join("JOIN documents AS doc ON doc.id = v.document_id").
		ColumnExpr("v.document_id, doc.title, COUNT(*) AS views, COUNT(DISTINCT NULLIF(v.ip, '')) AS unique_visitors").
		GroupExpr("v.document_id, doc.title").OrderExpr("views DESC, v.document_id").Limit(10).Scan(ctx, &out.Top); err != nil {
		return nil, Classify(err)
	}
	var refs []struct {
		Referer string `bun:"referer"`
		N       int64  `bun:"n"`
	}
	if err := views().ColumnExpr("v.referer, COUNT(*) AS n").GroupExpr("v.referer").OrderExpr("n DESC").
		Limit(1000).Scan(ctx, &refs); err != nil {
		return nil, Classify(err)
	}
	for _, r := range refs {
		host := "direct"
		if u, err := url.Parse(r.Referer); err == nil && u.Host != "" {
			host = strings.ToLower(u.Host)
		}
		out.Referers[host] += r.N
	}
	if err := views().Where("v.ip <> ''").ColumnExpr("v.ip, COUNT(*) AS views, MAX(v.created_at) AS last_active").
		GroupExpr("v.ip").OrderExpr("views DESC, v.ip").Limit(20).Scan(ctx, &out.Visitors); err != nil {
		return nil, Classify(err)
	}
	return out, nil
}

// SiteTurns returns the questions asked on a site since since (newest first,
// at most maxAnalyticsTurns), each with whether its answer found anything.
// A question is a user row; its answer is the last assistant row with text
// of the same turn.
func (d *DB) SiteTurns(ctx context.Context, siteID int64, since time.Time) ([]Turn, error) {
	var rows []struct {
		ThreadID  string    `bun:"thread_id"`
		Turn      int       `bun:"turn"`
		Role      string    `bun:"role"`
		Content   string    `bun:"content"`
		Sources   string    `bun:"sources"`
		Extra     string    `bun:"extra"`
		CreatedAt time.Time `bun:"created_at"`
	}
	err := d.NewSelect().TableExpr("chat_messages AS m").
		Join("JOIN chat_sessions AS s ON s.thread_id = m.thread_id").
		ColumnExpr("m.thread_id, m.turn, m.role, m.content, m.sources, m.extra, m.created_at").
		Where("s.site_id = ?", siteID).Where("m.created_at >= ?", since).Where(visibleMessage).
		OrderExpr("m.created_at DESC, m.id DESC").Limit(2*maxAnalyticsTurns).Scan(ctx, &rows)
	if err != nil {
		return nil, Classify(err)
	}
	type key struct {
		thread string
		turn   int
	}
	answered := map[key]bool{}
	seenAnswer := map[key]bool{}
	// Newest first: the first assistant row met for a turn is its last answer.
	for _, r := range rows {
		k := key{r.ThreadID, r.Turn}
		if r.Role != "assistant" || seenAnswer[k] {
			continue
		}
		seenAnswer[k] = true
		answered[k] = hasSources(r.Sources) && !strings.Contains(strings.ReplaceAll(r.Extra, " ", ""), `"abstained":true`)
	}
	var out []Turn
	for _, r := range rows {
		k := key{r.ThreadID, r.Turn}
		if r.Role != "user" || !seenAnswer[k] || len(out) >= maxAnalyticsTurns {
			continue
		}
		out = append(out, Turn{ThreadID: r.ThreadID, Question: r.Content, AskedAt: r.CreatedAt, Answered: answered[k]})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].AskedAt.After(out[j].AskedAt) })
	return out, nil
}

// hasSources reports whether stored sources JSON lists at least one source.
func hasSources(s string) bool {
	s = strings.TrimSpace(s)
	return s != "" && s != "[]" && s != "null"
}
