package db_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/db/dbtest"
	"github.com/lorekb/lore/models"
)

func chatTestSite(t *testing.T, d *db.DB, tenant int64, slug string, password bool) int64 {
	t.Helper()
	return insertTestSite(t, d, tenant, slug, password).ID
}

func threads(rows []models.ChatSession) string {
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ThreadID
	}
	return strings.Join(ids, ",")
}

func TestListChatSessionsFiltersAndOrder(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		tid := defaultTenant(t, d)
		other := &models.Tenant{Slug: "other", Name: "Other", CreatedAt: time.Now(), UpdatedAt: time.Now()}
		mustInsert(t, d, other)
		a := chatTestSite(t, d, tid, "a", false)
		locked := chatTestSite(t, d, tid, "locked", true)
		base := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
		sess := func(thread string, tenant int64, site *int64, member, title, last string, at time.Duration) *models.ChatSession {
			return &models.ChatSession{ThreadID: thread, TenantID: tenant, SiteID: site, MemberID: member, Title: title,
				Source: "web_chat", LastMessage: last, LastMessageRole: "user", CreatedAt: base, UpdatedAt: base.Add(at)}
		}
		mustInsert(t, d,
			sess("t1", tid, &a, "m", "Install guide", "how to install?", 1*time.Minute),
			sess("t2", tid, &a, "m", "Pricing", "100% off_sale", 3*time.Minute),
			sess("t3", tid, nil, "m", "No site", "hello", 2*time.Minute),
			sess("t4", tid, &locked, "m", "Secret", "hidden", 4*time.Minute),
			sess("t5", other.ID, &a, "m", "Other tenant", "x", 2*time.Minute), // same updated_at as t3, higher id
			sess("t6", tid, &a, "someone", "Install too", "install", 5*time.Minute),
		)
		list := func(f db.ChatSessionFilter) (string, int) {
			t.Helper()
			if f.Limit == 0 {
				f.Limit = 100
			}
			rows, n, err := d.ListChatSessions(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			return threads(rows), n
		}
		for _, tc := range []struct {
			f     db.ChatSessionFilter
			want  string
			total int
		}{
			{db.ChatSessionFilter{MemberID: "m"}, "t4,t2,t5,t3,t1", 5},
			{db.ChatSessionFilter{MemberID: "m", NoPasswordSites: true}, "t2,t5,t3,t1", 4},
			{db.ChatSessionFilter{MemberID: "m", SiteID: a}, "t2,t5,t1", 3},
			{db.ChatSessionFilter{MemberID: "m", TenantID: other.ID}, "t5", 1},
			{db.ChatSessionFilter{MemberID: "m", Keyword: "INSTALL"}, "t1", 1},           // title and last_message, any case
			{db.ChatSessionFilter{MemberID: "m", Keyword: "hello"}, "t3", 1},             // last_message only
			{db.ChatSessionFilter{MemberID: "m", Keyword: "0% off_"}, "t2", 1},           // LIKE metacharacters are literal
			{db.ChatSessionFilter{MemberID: "m", Keyword: "%"}, "t2", 1},                 // ditto
			{db.ChatSessionFilter{MemberID: "m", Limit: 2, Offset: 1}, "t2,t5", 5},       // page window, full total
			{db.ChatSessionFilter{MemberID: "nobody"}, "", 0},                            // empty, not an error
			{db.ChatSessionFilter{MemberID: "someone", Keyword: "install"}, "t6", 1},     // member is exact
			{db.ChatSessionFilter{MemberID: "m", SiteID: locked, Keyword: "t"}, "t4", 1}, // a site scope shows its sessions
		} {
			if got, n := list(tc.f); got != tc.want || n != tc.total {
				t.Errorf("%+v: got %q (%d), want %q (%d)", tc.f, got, n, tc.want, tc.total)
			}
		}
	})
}

func TestChatMessagesLookups(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		now := time.Now().UTC()
		seq0, seq1 := 0, 1
		// One row at a time: a bun slice insert on SQLite takes its columns from
		// the first row.
		mustInsert(t, d, []any{
			&models.ChatMessage{ThreadID: "th", Turn: 2, Position: 20000, ChatMessageID: "c3", Role: "user", Content: "again", CreatedAt: now},
			&models.ChatMessage{ThreadID: "th", Turn: 1, Position: 10000, ChatMessageID: "c1", Role: "user", Content: "q", CreatedAt: now},
			&models.ChatMessage{ThreadID: "th", Turn: 1, Position: 15001, ChatMessageID: "c2", Role: "assistant", Content: "a", MessageSeq: &seq0, CreatedAt: now},
			&models.ChatMessage{ThreadID: "th", Turn: 1, Position: 15000, ChatMessageID: "c1b", Role: "assistant", ToolCalls: `[{"id":"x"}]`, CreatedAt: now},
			&models.ChatMessage{ThreadID: "th", Turn: 2, Position: 25000, ChatMessageID: "c4", Role: "assistant", Content: "b", MessageSeq: &seq1, CreatedAt: now},
			&models.ChatMessage{ThreadID: "other", Turn: 1, Position: 15000, ChatMessageID: "o1", Role: "assistant", Content: "z", MessageSeq: &seq0, CreatedAt: now},
		}...)
		rows, err := d.ChatThreadMessages(ctx, "th")
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range rows {
			ids = append(ids, r.ChatMessageID)
		}
		if got := strings.Join(ids, ","); got != "c1,c1b,c2,c3,c4" {
			t.Fatalf("order %s", got)
		}
		for seq, want := range map[int]string{0: "c2", 1: "c4"} {
			m, err := d.ChatMessageBySeq(ctx, "th", seq)
			if err != nil || m.ChatMessageID != want {
				t.Fatalf("seq %d: %v %v", seq, m, err)
			}
		}
		if _, err := d.ChatMessageBySeq(ctx, "th", 2); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("seq 2: %v", err)
		}

		mustInsert(t, d, &models.ToolResult{ToolCallID: "call-1", ThreadID: "th", Content: `{"hits":[]}`, CreatedAt: now})
		if r, err := d.ThreadToolResult(ctx, "th", "call-1"); err != nil || r.Content != `{"hits":[]}` {
			t.Fatalf("tool result: %v %v", r, err)
		}
		if _, err := d.ThreadToolResult(ctx, "other", "call-1"); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("other thread: %v", err)
		}
		if _, err := d.ThreadToolResult(ctx, "th", "call-2"); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("absent: %v", err)
		}
	})
}

// chatThread inserts a session of member with a message, a tool result and a
// feedback row.
func chatThread(t *testing.T, d *db.DB, thread, member string) {
	t.Helper()
	now := time.Now().UTC()
	seq := 0
	mustInsert(t, d,
		&models.ChatSession{ThreadID: thread, TenantID: 1, MemberID: member, Summary: "memory", CreatedAt: now, UpdatedAt: now},
		&models.ChatMessage{ThreadID: thread, Turn: 1, Position: 1, ChatMessageID: thread + "-u", Role: "user", Content: "q", CreatedAt: now},
		&models.ChatMessage{ThreadID: thread, Turn: 1, Position: 2, ChatMessageID: thread + "-a", Role: "assistant", Content: "a", MessageSeq: &seq, CreatedAt: now},
		&models.ToolResult{ToolCallID: thread + "-call", ThreadID: thread, Content: "{}", CreatedAt: now},
		&models.Feedback{ChatMessageID: thread + "-a", ThreadID: thread, MemberID: member, CreatedAt: now},
	)
}

func chatThreadRows(t *testing.T, d *db.DB, thread string) string {
	t.Helper()
	return fmt.Sprint(
		countWhere(t, d, (*models.ChatSession)(nil), "thread_id = ?", thread),
		countWhere(t, d, (*models.ChatMessage)(nil), "thread_id = ?", thread),
		countWhere(t, d, (*models.ToolResult)(nil), "thread_id = ?", thread),
		countWhere(t, d, (*models.Feedback)(nil), "thread_id = ?", thread))
}

func TestDeleteChatSessions(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		chatThread(t, d, "t1", "m")
		chatThread(t, d, "t2", "m")
		chatThread(t, d, "t3", "m")
		chatThread(t, d, "x1", "other")

		if err := d.DeleteChatSession(ctx, "t1", "other", ""); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("another member's thread: %v", err)
		}
		if got := chatThreadRows(t, d, "t1"); got != "1 2 1 1" {
			t.Fatalf("refused delete changed rows: %s", got)
		}
		if err := d.DeleteChatSession(ctx, "t1", "m", ""); err != nil {
			t.Fatal(err)
		}
		if got := chatThreadRows(t, d, "t1"); got != "0 0 0 0" {
			t.Fatalf("after delete: %s", got)
		}
		if err := d.DeleteChatSession(ctx, "t1", "m", ""); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("second delete: %v", err)
		}

		n, err := d.DeleteMemberChatSessions(ctx, db.ChatSessionFilter{MemberID: "m"})
		if err != nil || n != 2 {
			t.Fatalf("member delete: %d %v", n, err)
		}
		for _, th := range []string{"t2", "t3"} {
			if got := chatThreadRows(t, d, th); got != "0 0 0 0" {
				t.Fatalf("%s after member delete: %s", th, got)
			}
		}
		if got := chatThreadRows(t, d, "x1"); got != "1 2 1 1" {
			t.Fatalf("other member's thread touched: %s", got)
		}
		if n, err := d.DeleteMemberChatSessions(ctx, db.ChatSessionFilter{MemberID: "m"}); err != nil || n != 0 {
			t.Fatalf("nothing left: %d %v", n, err)
		}
	})
}

func TestUpsertFeedback(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		chatThread(t, d, "t", "m") // leaves one unrated row of (t-a, m)
		up, down, slow := "up", "down", "slow"

		fb := &models.Feedback{ChatMessageID: "t-a", ThreadID: "t", MemberID: "m", Rating: &up}
		if err := d.UpsertFeedback(ctx, fb); err != nil {
			t.Fatal(err)
		}
		first := fb.ID
		fb = &models.Feedback{ChatMessageID: "t-a", ThreadID: "t", MemberID: "m", Rating: &down, Reason: &slow}
		if err := d.UpsertFeedback(ctx, fb); err != nil {
			t.Fatal(err)
		}
		if fb.ID != first {
			t.Fatalf("upsert made a new row: %d vs %d", fb.ID, first)
		}
		var rows []models.Feedback
		if err := d.NewSelect().Model(&rows).Where("chat_message_id = ?", "t-a").Scan(ctx); err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 || *rows[0].Rating != "down" || *rows[0].Reason != "slow" {
			t.Fatalf("rows %+v", rows)
		}
		// Clearing the rating keeps the row with nulls.
		if err := d.UpsertFeedback(ctx, &models.Feedback{ChatMessageID: "t-a", ThreadID: "t", MemberID: "m"}); err != nil {
			t.Fatal(err)
		}
		rows = nil
		if err := d.NewSelect().Model(&rows).Where("chat_message_id = ?", "t-a").Scan(ctx); err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 || rows[0].Rating != nil || rows[0].Reason != nil {
			t.Fatalf("cleared rows %+v", rows)
		}

		// Another member rates the same message separately; concurrent ratings
		// of one member still leave one row.
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- d.UpsertFeedback(ctx, &models.Feedback{ChatMessageID: "t-a", ThreadID: "t", MemberID: "n", Rating: &up})
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if n := countWhere(t, d, (*models.Feedback)(nil), "chat_message_id = ? AND member_id = ?", "t-a", "n"); n != 1 {
			t.Fatalf("concurrent upserts left %d rows", n)
		}
		if n := countWhere(t, d, (*models.Feedback)(nil), "chat_message_id = ?", "t-a"); n != 2 {
			t.Fatalf("rows of the message: %d", n)
		}
	})
}
