package db_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/db/dbtest"
	"github.com/lorekb/lore/models"
)

func strp(s string) *string { return &s }

// defaultTenant is the id of the default tenant, made if it is missing.
func defaultTenant(t *testing.T, d *db.DB) int64 {
	t.Helper()
	tid, err := d.EnsureDefaultTenant(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tid
}

// insertTestSite inserts an active site of the tenant named slug: public, or
// behind a password.
func insertTestSite(t *testing.T, d *db.DB, tenant int64, slug string, password bool) *models.Site {
	t.Helper()
	now := time.Now().UTC()
	s := &models.Site{TenantID: tenant, Name: slug, Slug: slug, Status: models.SiteActive, ThemeColor: "blue",
		LayoutMode: "sidebar", QuickQuestions: "[]", BotConfig: "{}", IsPublic: !password, RequiresPassword: password,
		CreatedAt: now, UpdatedAt: now}
	mustInsert(t, d, s)
	return s
}

func newTestSite(t *testing.T, d *db.DB, name, slug string, domain *string) *models.Site {
	t.Helper()
	s := &models.Site{TenantID: defaultTenant(t, d), Name: name, Slug: slug, Domain: domain, Status: models.SiteActive,
		ThemeColor: "blue", LayoutMode: "sidebar", IsPublic: true}
	if err := d.CreateSite(context.Background(), s); err != nil {
		t.Fatalf("create site %s: %v", name, err)
	}
	return s
}

// mustInsert inserts rows with bun (each a model or a slice of them),
// failing the test on error.
func mustInsert(t *testing.T, d *db.DB, rows ...any) {
	t.Helper()
	for _, r := range rows {
		if _, err := d.NewInsert().Model(r).Exec(context.Background()); err != nil {
			t.Fatalf("insert %T: %v", r, err)
		}
	}
}

func countWhere(t *testing.T, d *db.DB, model any, where string, args ...any) int {
	t.Helper()
	n, err := d.NewSelect().Model(model).Where(where, args...).Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

func TestSiteUniquenessAndLookups(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		a := newTestSite(t, d, "Alpha", "alpha", strp("alpha.example.com"))
		newTestSite(t, d, "Beta", "beta", nil)
		newTestSite(t, d, "Gamma", "gamma", nil) // two sites without a domain are fine

		for _, tc := range []struct {
			site  models.Site
			field string
		}{
			{models.Site{Name: "Alpha", Slug: "x"}, "name"},
			{models.Site{Name: "X", Slug: "alpha"}, "slug"},
			{models.Site{Name: "X", Slug: "x", Domain: strp("alpha.example.com")}, "domain"},
			{models.Site{Name: "X", Slug: "x"}, ""},
			{models.Site{ID: a.ID, Name: "Alpha", Slug: "alpha", Domain: strp("alpha.example.com")}, ""}, // itself
		} {
			got, err := d.SiteConflict(ctx, &tc.site)
			if err != nil || got != tc.field {
				t.Errorf("SiteConflict(%+v) = %q, %v; want %q", tc.site, got, err, tc.field)
			}
		}
		// The unique indexes are the backstop.
		dup := &models.Site{TenantID: a.TenantID, Name: "Other", Slug: "alpha", Status: models.SiteActive}
		if err := d.CreateSite(ctx, dup); !errors.Is(err, db.ErrConflict) {
			t.Fatalf("duplicate slug: %v", err)
		}
		dup = &models.Site{TenantID: a.TenantID, Name: "Other", Slug: "other", Domain: strp("alpha.example.com"), Status: models.SiteActive}
		if err := d.CreateSite(ctx, dup); !errors.Is(err, db.ErrConflict) {
			t.Fatalf("duplicate domain: %v", err)
		}

		if s, err := d.SiteByDomain(ctx, "Alpha.Example.COM"); err != nil || s.ID != a.ID {
			t.Fatalf("by domain: %v %v", s, err)
		}
		if s, err := d.SiteBySlug(ctx, "alpha"); err != nil || s.ID != a.ID {
			t.Fatalf("by slug: %v %v", s, err)
		}
		if _, err := d.SiteBySlug(ctx, "nope"); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("missing slug: %v", err)
		}

		slug, err := d.UniqueSiteSlug(ctx, "alpha")
		if err != nil || slug != "alpha-2" {
			t.Fatalf("unique slug: %q %v", slug, err)
		}
		if slug, err = d.UniqueSiteSlug(ctx, "fresh"); err != nil || slug != "fresh" {
			t.Fatalf("unique slug: %q %v", slug, err)
		}
		if slug, err = d.UniqueSiteSlug(ctx, ""); err != nil || slug == "" {
			t.Fatalf("fallback slug: %q %v", slug, err)
		}

		// Update writes the editable columns; a deleting site is not found.
		a.Description = "changed"
		if err := d.UpdateSite(ctx, a); err != nil {
			t.Fatal(err)
		}
		if err := d.MarkSiteDeleting(ctx, a.ID); err != nil {
			t.Fatal(err)
		}
		if err := d.UpdateSite(ctx, a); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("update deleting site: %v", err)
		}
		if err := d.MarkSiteDeleting(ctx, 99999); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("mark missing site: %v", err)
		}
	})
}

func TestListSitesAndCounts(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		a := newTestSite(t, d, "Alpha docs", "alpha", nil)
		b := newTestSite(t, d, "Beta", "beta", nil)
		c := newTestSite(t, d, "Gamma", "gamma", nil)
		b.Status = models.SiteInactive
		if err := d.UpdateSite(ctx, b); err != nil {
			t.Fatal(err)
		}
		if err := d.MarkSiteDeleting(ctx, c.ID); err != nil {
			t.Fatal(err)
		}
		list := func(f db.SiteFilter) []int64 {
			t.Helper()
			f.Limit = 100
			sites, total, err := d.ListSites(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			if total != len(sites) {
				t.Fatalf("total %d for %d rows", total, len(sites))
			}
			ids := make([]int64, len(sites))
			for i := range sites {
				ids[i] = sites[i].ID
			}
			return ids
		}
		if got := list(db.SiteFilter{}); fmt.Sprint(got) != fmt.Sprint([]int64{b.ID, a.ID}) {
			t.Fatalf("all (deleting hidden, id desc): %v", got)
		}
		if got := list(db.SiteFilter{Status: models.SiteActive}); fmt.Sprint(got) != fmt.Sprint([]int64{a.ID}) {
			t.Fatalf("active: %v", got)
		}
		if got := list(db.SiteFilter{Keyword: "DOCS"}); fmt.Sprint(got) != fmt.Sprint([]int64{a.ID}) {
			t.Fatalf("keyword: %v", got)
		}
		if got := list(db.SiteFilter{Keyword: "%"}); len(got) != 0 {
			t.Fatalf("LIKE wildcard not escaped: %v", got)
		}
		if got := list(db.SiteFilter{SiteIDs: []int64{b.ID, c.ID}}); fmt.Sprint(got) != fmt.Sprint([]int64{b.ID}) {
			t.Fatalf("site ids: %v", got)
		}

		now := time.Now().UTC()
		mustInsert(t, d, &[]models.Document{
			{TenantID: a.TenantID, SiteID: a.ID, Title: "p1", Status: models.DocPublished, CreatedAt: now, UpdatedAt: now, Views: 2},
			{TenantID: a.TenantID, SiteID: a.ID, Title: "p2", Status: models.DocPublished, CreatedAt: now, UpdatedAt: now},
			{TenantID: a.TenantID, SiteID: a.ID, Title: "d1", Status: models.DocDraft, CreatedAt: now, UpdatedAt: now},
			{TenantID: a.TenantID, SiteID: b.ID, Title: "b1", Status: models.DocDraft, CreatedAt: now, UpdatedAt: now},
		})
		all, err := d.SiteDocumentCounts(ctx, []int64{a.ID, b.ID, c.ID}, "")
		if err != nil || all[a.ID] != 3 || all[b.ID] != 1 || all[c.ID] != 0 {
			t.Fatalf("document counts: %v %v", all, err)
		}
		pub, err := d.SiteDocumentCounts(ctx, []int64{a.ID, b.ID}, models.DocPublished)
		if err != nil || pub[a.ID] != 2 || pub[b.ID] != 0 {
			t.Fatalf("published counts: %v %v", pub, err)
		}
		views, err := d.SiteViewCounts(ctx, []int64{a.ID, b.ID})
		if err != nil || views[a.ID] != 2 || views[b.ID] != 0 {
			t.Fatalf("view counts: %v %v", views, err)
		}
		slugs, err := d.TenantSlugs(ctx, []int64{a.TenantID})
		if err != nil || slugs[a.TenantID] != db.DefaultTenantSlug {
			t.Fatalf("tenant slugs: %v %v", slugs, err)
		}
	})
}

// seedSiteContent gives a site one row in every table a site delete clears
// and returns the thread id of its chat.
func seedSiteContent(t *testing.T, d *db.DB, s *models.Site, docs int) string {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	col := &models.Collection{TenantID: s.TenantID, SiteID: s.ID, Title: "c", CreatedAt: now, UpdatedAt: now}
	mustInsert(t, d, col)
	for i := 0; i < docs; i++ {
		doc := &models.Document{TenantID: s.TenantID, SiteID: s.ID, CollectionID: &col.ID, Title: fmt.Sprint("d", i),
			Status: models.DocPublished, CreatedAt: now, UpdatedAt: now}
		mustInsert(t, d, doc)
		mustInsert(t, d, &models.ViewEvent{SiteID: s.ID, DocumentID: doc.ID, IP: "1.2.3.4", CreatedAt: now})
	}
	thread := fmt.Sprintf("thread-%d", s.ID)
	sid := s.ID
	mustInsert(t, d, &models.ChatSession{ThreadID: thread, TenantID: s.TenantID, SiteID: &sid, MemberID: "m", CreatedAt: now, UpdatedAt: now})
	mustInsert(t, d, &models.ChatMessage{ThreadID: thread, ChatMessageID: thread + "-1", Role: "user", Content: "hi", CreatedAt: now})
	mustInsert(t, d, &models.ToolResult{ToolCallID: thread + "-call", ThreadID: thread, Content: "{}", CreatedAt: now})
	mustInsert(t, d, &models.Feedback{ChatMessageID: thread + "-1", ThreadID: thread, MemberID: "m", CreatedAt: now})
	mustInsert(t, d, &models.SiteAPIKey{SiteID: s.ID, Prefix: "k", KeyHash: thread + "-hash", CreatedAt: now})
	u := &models.User{TenantID: s.TenantID, Email: thread + "@example.com", PasswordHash: "x", Role: models.RoleEditor, Status: models.UserActive}
	if err := d.CreateUser(ctx, u, []int64{s.ID}); err != nil {
		t.Fatal(err)
	}
	return thread
}

// siteRowCounts counts the rows of a site in every table a delete clears.
func siteRowCounts(t *testing.T, d *db.DB, siteID int64, thread string) map[string]int {
	t.Helper()
	return map[string]int{
		"sites":         countWhere(t, d, (*models.Site)(nil), "id = ?", siteID),
		"documents":     countWhere(t, d, (*models.Document)(nil), "site_id = ?", siteID),
		"collections":   countWhere(t, d, (*models.Collection)(nil), "site_id = ?", siteID),
		"view_events":   countWhere(t, d, (*models.ViewEvent)(nil), "site_id = ?", siteID),
		"chat_sessions": countWhere(t, d, (*models.ChatSession)(nil), "site_id = ?", siteID),
		"chat_messages": countWhere(t, d, (*models.ChatMessage)(nil), "thread_id = ?", thread),
		"tool_results":  countWhere(t, d, (*models.ToolResult)(nil), "thread_id = ?", thread),
		"chat_feedback": countWhere(t, d, (*models.Feedback)(nil), "thread_id = ?", thread),
		"site_api_keys": countWhere(t, d, (*models.SiteAPIKey)(nil), "site_id = ?", siteID),
		"user_sites":    countWhere(t, d, (*models.UserSite)(nil), "site_id = ?", siteID),
		"users (stay)":  countWhere(t, d, (*models.User)(nil), "email = ?", thread+"@example.com"),
	}
}

func TestDeleteSiteCascade(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		a := newTestSite(t, d, "A", "a", nil)
		b := newTestSite(t, d, "B", "b", nil)
		ta := seedSiteContent(t, d, a, 3)
		tb := seedSiteContent(t, d, b, 2)
		if err := d.DeleteSiteCascade(ctx, a.ID); err != nil {
			t.Fatal(err)
		}
		for table, n := range siteRowCounts(t, d, a.ID, ta) {
			want := 0
			if table == "users (stay)" {
				want = 1
			}
			if n != want {
				t.Errorf("deleted site: %s has %d rows, want %d", table, n, want)
			}
		}
		for table, n := range siteRowCounts(t, d, b.ID, tb) {
			if n == 0 {
				t.Errorf("other site: %s lost its rows", table)
			}
		}
		if err := d.DeleteSiteCascade(ctx, a.ID); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("second delete: %v", err)
		}
	})
}

func TestDeleteSitePiecesAreIdempotent(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		a := newTestSite(t, d, "A", "a", nil)
		b := newTestSite(t, d, "B", "b", nil)
		ta := seedSiteContent(t, d, a, 5)
		tb := seedSiteContent(t, d, b, 1)
		if err := d.MarkSiteDeleting(ctx, a.ID); err != nil {
			t.Fatal(err)
		}
		if err := d.MarkSiteDeleting(ctx, a.ID); err != nil {
			t.Fatal(err)
		}
		var batches []int
		for {
			n, err := d.DeleteSiteDocuments(ctx, a.ID, 2)
			if err != nil {
				t.Fatal(err)
			}
			batches = append(batches, n)
			if n == 0 {
				break
			}
		}
		if fmt.Sprint(batches) != "[2 2 1 0]" {
			t.Fatalf("batches %v", batches)
		}
		for i := 0; i < 2; i++ {
			if _, err := d.DeleteSiteChats(ctx, a.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := d.DeleteSiteCollections(ctx, a.ID); err != nil {
				t.Fatal(err)
			}
			if err := d.DeleteSiteRow(ctx, a.ID); err != nil {
				t.Fatal(err)
			}
		}
		for table, n := range siteRowCounts(t, d, a.ID, ta) {
			if n != 0 && table != "users (stay)" {
				t.Errorf("%s has %d rows left", table, n)
			}
		}
		if got := siteRowCounts(t, d, b.ID, tb); got["documents"] != 1 || got["chat_messages"] != 1 || got["view_events"] != 1 {
			t.Fatalf("other site touched: %v", got)
		}
	})
}

func TestSiteStatsFigures(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
		today := time.Date(2026, 11, 21, 0, 0, 0, 1000, time.UTC)
		yesterday := now.AddDate(0, 0, -1)
		old := now.AddDate(0, 0, -10)
		a := newTestSite(t, d, "A", "a", nil)
		b := newTestSite(t, d, "B", "b", nil)
		aid, bid := a.ID, b.ID
		mustInsert(t, d, &[]models.Document{
			{TenantID: a.TenantID, SiteID: aid, Title: "1", Views: 5, CreatedAt: old, UpdatedAt: old},
			{TenantID: a.TenantID, SiteID: aid, Title: "2", Views: 7, CreatedAt: old, UpdatedAt: old},
			{TenantID: a.TenantID, SiteID: bid, Title: "3", Views: 100, CreatedAt: old, UpdatedAt: old},
		})
		mustInsert(t, d, &[]models.ViewEvent{
			{SiteID: aid, DocumentID: 1, IP: "10.0.0.1", CreatedAt: today},
			{SiteID: aid, DocumentID: 1, IP: "10.0.0.1", CreatedAt: now},
			{SiteID: aid, DocumentID: 2, IP: "10.0.0.2", CreatedAt: now},
			{SiteID: aid, DocumentID: 2, IP: "10.0.0.3", CreatedAt: yesterday},
			{SiteID: aid, DocumentID: 2, IP: "", CreatedAt: old},
			{SiteID: bid, DocumentID: 3, IP: "10.0.0.9", CreatedAt: now},
		})
		sess := func(thread, member string, site int64, at time.Time, n int) models.ChatSession {
			return models.ChatSession{ThreadID: thread, TenantID: a.TenantID, SiteID: &site, MemberID: member,
				Title: "t " + thread, Source: "web_chat", MessageCount: n, CreatedAt: at, UpdatedAt: at}
		}
		mustInsert(t, d, &[]models.ChatSession{
			sess("t-old", "m1", aid, old, 2),
			sess("t-yday", "m1", aid, yesterday, 2),
			sess("t-today1", "m2", aid, today, 2),
			sess("t-today2", "m3", aid, now, 0),
			sess("t-b", "m9", bid, now, 2),
		})
		msg := func(thread, role, content string, at time.Time) models.ChatMessage {
			return models.ChatMessage{ThreadID: thread, ChatMessageID: fmt.Sprintf("%s-%s-%d", thread, role, at.UnixNano()+int64(len(content))),
				Role: role, Content: content, CreatedAt: at}
		}
		mustInsert(t, d, &[]models.ChatMessage{
			msg("t-old", "user", "q", old),
			msg("t-old", "assistant", "a", old.Add(time.Second)),
			msg("t-yday", "user", "q", yesterday),
			msg("t-yday", "assistant", "", yesterday.Add(time.Second)), // tool-call row: not counted
			msg("t-yday", "tool", "{}", yesterday.Add(2*time.Second)),  // tool row: not counted
			msg("t-yday", "assistant", "answer", yesterday.Add(3*time.Second)),
			msg("t-today1", "user", "q", today),
			msg("t-today1", "assistant", "a", now),
			msg("t-b", "user", "q", now),
		})
		st, err := d.GetSiteStats(ctx, aid, now)
		if err != nil {
			t.Fatal(err)
		}
		want := db.SiteStats{TotalDocuments: 2, TotalViews: 12, ViewsToday: 3, UniqueIPsToday: 2, TotalUniqueIPs: 3,
			TotalChatSessions: 4, TotalChatMessages: 6, ActiveChatUsers: 3, NewSessionsToday: 2, NewMessagesToday: 2}
		gotScalars := *st
		gotScalars.DailyTrends, gotScalars.RecentSessions = nil, nil
		if fmt.Sprintf("%+v", gotScalars) != fmt.Sprintf("%+v", want) {
			t.Fatalf("stats\n got %+v\nwant %+v", gotScalars, want)
		}
		if len(st.DailyTrends) != 7 {
			t.Fatalf("trends: %+v", st.DailyTrends)
		}
		wantTrends := []db.DailyTrend{{"11-15", 0, 0}, {"11-16", 0, 0}, {"11-17", 0, 0}, {"11-18", 0, 0},
			{"11-19", 0, 0}, {"11-20", 1, 2}, {"11-21", 2, 2}}
		if fmt.Sprint(st.DailyTrends) != fmt.Sprint(wantTrends) {
			t.Fatalf("trends\n got %v\nwant %v", st.DailyTrends, wantTrends)
		}
		if len(st.RecentSessions) != 4 || st.RecentSessions[0].ThreadID != "t-today2" || st.RecentSessions[1].ThreadID != "t-today1" ||
			st.RecentSessions[3].ThreadID != "t-old" || st.RecentSessions[1].MessageCount != 2 || st.RecentSessions[1].Source != "web_chat" {
			t.Fatalf("recent: %+v", st.RecentSessions)
		}

		empty, err := d.GetSiteStats(ctx, 424242, now)
		if err != nil || empty.TotalDocuments != 0 || len(empty.DailyTrends) != 7 || empty.RecentSessions == nil {
			t.Fatalf("empty site: %+v %v", empty, err)
		}
	})
}
