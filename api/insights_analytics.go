package api

import (
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/internal/db"
)

// AnalyticsQuery is the query of GET /sites/{id}/analytics.
type AnalyticsQuery struct {
	Days int `query:"days" doc:"window in days, ending today (UTC); default 7" validate:"omitempty,min=1,max=90"`
}

// DailyViewTrend is one day of document views.
type DailyViewTrend struct {
	Date      string `json:"date" doc:"MM-DD (UTC)"`
	Views     int64  `json:"views"`
	UniqueIPs int64  `json:"unique_ips"`
}

// HourlyCount is the document views of one UTC hour of the day.
type HourlyCount struct {
	Hour  int   `json:"hour"`
	Count int64 `json:"count"`
}

// TopDocumentStat is a most-read document of the window.
type TopDocumentStat struct {
	DocumentID     int64  `json:"document_id"`
	Title          string `json:"title"`
	Views          int64  `json:"views"`
	UniqueVisitors int64  `json:"unique_visitors"`
}

// RefererStat counts views by referring host ("direct" when none).
type RefererStat struct {
	Source string `json:"source"`
	Count  int64  `json:"count"`
}

// VisitorStat is one reader IP of the window. location is always "" (Lore
// has no IP geolocation database).
type VisitorStat struct {
	IP         string    `json:"ip"`
	Views      int64     `json:"views"`
	LastActive time.Time `json:"last_active"`
	Location   string    `json:"location"`
}

// RegionStat counts views by region; Lore has no geolocation, so the list is
// always empty.
type RegionStat struct {
	Region string `json:"region"`
	Count  int64  `json:"count"`
}

// QuestionDay is one day of chat questions.
type QuestionDay struct {
	Date       string `json:"date" doc:"MM-DD (UTC)"`
	Questions  int    `json:"questions"`
	Unanswered int    `json:"unanswered"`
}

// QuestionStat is one question (grouped caselessly, ignoring spacing and
// final punctuation) with how often it was asked and left unanswered.
type QuestionStat struct {
	Question   string    `json:"question"`
	Count      int       `json:"count"`
	Unanswered int       `json:"unanswered"`
	LastAsked  time.Time `json:"last_asked"`
	ThreadID   string    `json:"thread_id" doc:"the thread where it was last asked"`
}

// SiteAnalytics is the data of GET /sites/{id}/analytics: the reference's
// SiteAnalyticsResponse (views) plus what readers asked: questions per day,
// top questions, the questions the docs could not answer, and feedback.
type SiteAnalytics struct {
	Days               int               `json:"days"`
	Trends             []DailyViewTrend  `json:"trends"`
	HourlyDistribution []HourlyCount     `json:"hourly_distribution"`
	TopDocuments       []TopDocumentStat `json:"top_documents"`
	RefererStats       []RefererStat     `json:"referer_stats"`
	VisitorStats       []VisitorStat     `json:"visitor_stats"`
	RegionStats        []RegionStat      `json:"region_stats"`

	TotalQuestions      int            `json:"total_questions"`
	UnansweredCount     int            `json:"unanswered_count"`
	AnswerRate          float64        `json:"answer_rate" doc:"percentage of questions answered from the docs, 0..100"`
	QuestionTrends      []QuestionDay  `json:"question_trends"`
	TopQuestions        []QuestionStat `json:"top_questions"`
	UnansweredQuestions []QuestionStat `json:"unanswered_questions"`
	Feedback            FeedbackStats  `json:"feedback"`
}

func (s *Server) siteAnalytics(c *fiber.Ctx) error {
	var q AnalyticsQuery
	st, err := loadThenBindAs(c, s.adminSiteByID, SiteAdminUp, bindQuery, &q)
	if err != nil {
		return err
	}
	if q.Days == 0 {
		q.Days = 7
	}
	now := time.Now().UTC()
	first := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC).AddDate(0, 0, 1-q.Days)
	ctx := c.UserContext()
	views, err := s.d.DB.SiteViewAnalytics(ctx, st.ID, first)
	if err != nil {
		return err
	}
	turns, err := s.d.DB.SiteTurns(ctx, st.ID, first)
	if err != nil {
		return err
	}
	fb, err := s.d.DB.SiteFeedbackCounts(ctx, st.ID, first)
	if err != nil {
		return err
	}
	out := SiteAnalytics{Days: q.Days, Feedback: feedbackStats(fb), RegionStats: []RegionStat{},
		TopDocuments: []TopDocumentStat{}, VisitorStats: []VisitorStat{}}
	byDay := map[string]db.ViewDay{}
	for _, d := range views.Days {
		byDay[d.Date] = d
	}
	qDays := map[string]*QuestionDay{}
	for i := 0; i < q.Days; i++ {
		day := first.AddDate(0, 0, i)
		v := byDay[day.Format("2006-01-02")]
		out.Trends = append(out.Trends, DailyViewTrend{Date: day.Format("01-02"), Views: v.Views, UniqueIPs: v.UniqueIPs})
		out.QuestionTrends = append(out.QuestionTrends, QuestionDay{Date: day.Format("01-02")})
	}
	for i := range out.QuestionTrends {
		qDays[out.QuestionTrends[i].Date] = &out.QuestionTrends[i]
	}
	for h, n := range views.Hours {
		out.HourlyDistribution = append(out.HourlyDistribution, HourlyCount{Hour: h, Count: n})
	}
	for _, d := range views.Top {
		out.TopDocuments = append(out.TopDocuments, TopDocumentStat(d))
	}
	refs := topN(views.Referers, 10)
	out.RefererStats = make([]RefererStat, len(refs))
	for i, r := range refs {
		out.RefererStats[i] = RefererStat{Source: r, Count: views.Referers[r]}
	}
	for _, v := range views.Visitors {
		out.VisitorStats = append(out.VisitorStats, VisitorStat{IP: v.IP, Views: v.Views, LastActive: v.LastActive.UTC()})
	}
	out.TopQuestions, out.UnansweredQuestions = questionStats(turns, qDays)
	out.TotalQuestions = len(turns)
	for _, t := range turns {
		if !t.Answered {
			out.UnansweredCount++
		}
	}
	if out.TotalQuestions > 0 {
		out.AnswerRate = float64(int(1000*float64(out.TotalQuestions-out.UnansweredCount)/float64(out.TotalQuestions)+0.5)) / 10
	}
	return ok(c, out)
}

// questionStats groups the turns (newest first) by normalised question and
// fills the per-day counts; it returns the 20 most asked questions and the
// 20 most asked of those left unanswered.
func questionStats(turns []db.Turn, days map[string]*QuestionDay) (top, unanswered []QuestionStat) {
	groups := map[string]*QuestionStat{}
	counts, misses := map[string]int64{}, map[string]int64{}
	for _, t := range turns {
		if d := days[t.AskedAt.UTC().Format("01-02")]; d != nil {
			d.Questions++
			if !t.Answered {
				d.Unanswered++
			}
		}
		key := normQuestion(t.Question)
		g := groups[key]
		if g == nil { // the newest asking names the group
			g = &QuestionStat{Question: strings.TrimSpace(t.Question), LastAsked: t.AskedAt.UTC(), ThreadID: t.ThreadID}
			groups[key] = g
		}
		g.Count++
		counts[key]++
		if !t.Answered {
			g.Unanswered++
			misses[key]++
		}
	}
	top, unanswered = []QuestionStat{}, []QuestionStat{}
	for _, k := range topN(counts, 20) {
		top = append(top, *groups[k])
	}
	for _, k := range topN(misses, 20) {
		unanswered = append(unanswered, *groups[k])
	}
	return top, unanswered
}

// normQuestion is the grouping key of a question: lowercased, spaces
// collapsed, final punctuation dropped.
func normQuestion(q string) string {
	q = strings.Join(strings.Fields(strings.ToLower(q)), " ")
	return strings.TrimRight(q, "?!.。？！ ")
}
