package api

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/cache"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/models"
)

const siteStatsPath = "/admin/api/v1/stats:siteStats"

func TestSiteStats(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		a := h.sitesNew(map[string]any{"name": "Stats A"})
		b := h.sitesNew(map[string]any{"name": "Stats B"})
		now := time.Now().UTC()
		old := now.AddDate(0, 0, -30)
		yesterday := now.AddDate(0, 0, -1)
		tid := a.TenantID
		insert := func(rows any) {
			t.Helper()
			if _, err := h.d.DB.NewInsert().Model(rows).Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
		docs := []models.Document{
			{TenantID: tid, SiteID: a.ID, Title: "1", Views: 10, CreatedAt: old, UpdatedAt: old},
			{TenantID: tid, SiteID: a.ID, Title: "2", Views: 3, Status: models.DocPublished, CreatedAt: old, UpdatedAt: old},
			{TenantID: tid, SiteID: a.ID, Title: "3", CreatedAt: old, UpdatedAt: old},
			{TenantID: tid, SiteID: b.ID, Title: "4", Views: 50, CreatedAt: old, UpdatedAt: old},
		}
		insert(&docs)
		insert(&[]models.ViewEvent{
			{SiteID: a.ID, DocumentID: docs[0].ID, IP: "1.1.1.1", CreatedAt: now},
			{SiteID: a.ID, DocumentID: docs[0].ID, IP: "1.1.1.1", CreatedAt: now},
			{SiteID: a.ID, DocumentID: docs[1].ID, IP: "2.2.2.2", CreatedAt: now},
			{SiteID: a.ID, DocumentID: docs[1].ID, IP: "3.3.3.3", CreatedAt: old},
			{SiteID: b.ID, DocumentID: docs[3].ID, IP: "9.9.9.9", CreatedAt: now},
		})
		sess := func(thread, member string, site int64, at time.Time, n int) models.ChatSession {
			return models.ChatSession{ThreadID: thread, TenantID: tid, SiteID: &site, MemberID: member, Title: "T " + thread,
				Source: "web_chat", MessageCount: n, CreatedAt: at, UpdatedAt: at}
		}
		insert(&[]models.ChatSession{
			sess("s-old", "u1", a.ID, old, 2), sess("s-yday", "u2", a.ID, yesterday, 2),
			sess("s-now", "u1", a.ID, now, 2), sess("s-b", "u9", b.ID, now, 2),
		})
		i := 0
		msg := func(thread, role, content string, at time.Time) models.ChatMessage {
			i++
			return models.ChatMessage{ThreadID: thread, ChatMessageID: fmt.Sprint("cm-", i), Role: role, Content: content, CreatedAt: at}
		}
		insert(&[]models.ChatMessage{
			msg("s-old", "user", "q", old), msg("s-old", "assistant", "a", old),
			msg("s-yday", "user", "q", yesterday), msg("s-yday", "assistant", "a", yesterday),
			msg("s-now", "user", "q", now), msg("s-now", "assistant", "", now), msg("s-now", "tool", "{}", now),
			msg("s-now", "assistant", "a", now),
			msg("s-b", "user", "q", now),
		})

		var st db.SiteStats
		h.must(200, "GET", siteStatsPath+"?site_id="+itoa(a.ID), nil, h.admin).into(t, &st)
		got := fmt.Sprint(st.TotalDocuments, st.TotalViews, st.ViewsToday, st.UniqueIPsToday, st.TotalUniqueIPs,
			st.TotalChatSessions, st.TotalChatMessages, st.ActiveChatUsers, st.NewSessionsToday, st.NewMessagesToday)
		if want := "3 13 3 2 3 3 6 2 1 2"; got != want {
			t.Fatalf("figures %s, want %s (%+v)", got, want, st)
		}
		if len(st.DailyTrends) != 7 {
			t.Fatalf("trends: %+v", st.DailyTrends)
		}
		last, prev := st.DailyTrends[6], st.DailyTrends[5]
		if last.Date != now.Format("01-02") || last.Sessions != 1 || last.Messages != 2 ||
			prev.Date != yesterday.Format("01-02") || prev.Sessions != 1 || prev.Messages != 2 ||
			st.DailyTrends[0].Date != now.AddDate(0, 0, -6).Format("01-02") {
			t.Fatalf("trends: %+v", st.DailyTrends)
		}
		if len(st.RecentSessions) != 3 || st.RecentSessions[0].ThreadID != "s-now" || st.RecentSessions[2].ThreadID != "s-old" ||
			st.RecentSessions[0].Title != "T s-now" || st.RecentSessions[0].MessageCount != 2 || st.RecentSessions[0].Source != "web_chat" {
			t.Fatalf("recent: %+v", st.RecentSessions)
		}

		// An empty site gives zeros, seven empty days and an empty list.
		c := h.sitesNew(map[string]any{"name": "Stats C"})
		r := h.must(200, "GET", siteStatsPath+"?site_id="+itoa(c.ID), nil, h.admin)
		if !strings.Contains(string(r.Raw), `"recent_sessions":[]`) || !strings.Contains(string(r.Raw), `"total_documents":0`) {
			t.Fatalf("empty site: %s", r.Raw)
		}

		// Bad input and permissions.
		r = h.must(422, "GET", siteStatsPath, nil, h.admin)
		if r.Msg != "site_id: field required" {
			t.Fatalf("missing site_id: %s", r.Raw)
		}
		h.must(422, "GET", siteStatsPath+"?site_id=abc", nil, h.admin)
		h.must(422, "GET", siteStatsPath+"?site_id=-1", nil, h.admin)
		h.must(404, "GET", siteStatsPath+"?site_id=99999", nil, h.admin)
		sa := h.userToken(models.RoleSiteAdmin, a.ID)
		h.must(200, "GET", siteStatsPath+"?site_id="+itoa(a.ID), nil, sa)
		h.must(404, "GET", siteStatsPath+"?site_id="+itoa(b.ID), nil, sa) // another site: as missing
		h.must(403, "GET", siteStatsPath+"?site_id="+itoa(a.ID), nil, h.userToken(models.RoleEditor, a.ID))
		h.must(401, "GET", siteStatsPath+"?site_id="+itoa(a.ID), nil, "")
	})
}

func TestCacheStatsAndClear(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		s := h.sitesNew(map[string]any{"name": "Cache me"})
		h.must(200, "GET", clientSites+"/"+itoa(s.ID), nil, "")
		h.must(200, "GET", clientSites+"/"+itoa(s.ID), nil, "")
		var st cache.Stats
		h.must(200, "GET", "/admin/api/v1/cache:stats", nil, h.admin).into(t, &st)
		if st.Backend != "memory" || st.Hits != 1 || st.Misses != 1 || st.Size != 1 || st.HitRate != "50.00%" {
			t.Fatalf("stats: %+v", st)
		}
		var m Message
		h.must(200, "POST", "/admin/api/v1/cache:clear", nil, h.admin).into(t, &m)
		if m.Message == "" {
			t.Fatal("no message")
		}
		h.must(200, "GET", "/admin/v1/cache:stats", nil, h.admin).into(t, &st)
		if st.Hits != 0 || st.Misses != 0 || st.Size != 0 {
			t.Fatalf("after clear: %+v", st)
		}
		sa := h.userToken(models.RoleSiteAdmin, s.ID)
		h.must(403, "GET", "/admin/api/v1/cache:stats", nil, sa)
		h.must(403, "POST", "/admin/api/v1/cache:clear", nil, sa)
		h.must(401, "POST", "/admin/api/v1/cache:clear", nil, "")
	})
}
