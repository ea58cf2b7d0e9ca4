package db_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/db/dbtest"
	"github.com/lorekb/lore/models"
)

// A turn's rows differ in which columns hold their defaults (a tool-call row
// has no content, a tool row no tool_calls, only the final row sources), and
// PostgreSQL inserts them in one statement: every row must keep its own
// values, the count must come back from the session update, and a retry or
// a deleted session must write nothing.
func TestStartAndPersistTurnRows(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		tid := defaultTenant(t, d)
		site := chatTestSite(t, d, tid, "persist", false)
		ts, err := d.StartTurn(ctx, db.BeginTurn{ThreadID: "th-persist", TenantID: tid, SiteID: site, MemberID: "m1",
			Source: "web", UserText: "what is a stream?", New: true,
			History: []db.HistoryMessage{{Role: "user", Content: "hi"}, {Role: "assistant", Content: ""}}})
		if err != nil {
			t.Fatal(err)
		}
		// The empty assistant history row is no message a reader sees.
		if ts.Turn != 1 || ts.Session.MessageCount != 2 {
			t.Fatalf("turn %d, count %d; want 1, 2", ts.Turn, ts.Session.MessageCount)
		}
		rows := []db.TurnRow{
			{Role: "assistant", ToolCalls: `[{"id":"c1"}]`},
			{Role: "tool", Content: "result", ToolCallID: "c1", ElapsedMS: 7},
			{Role: "assistant", Content: "A stream is…", Sources: `[{"id":1}]`, Extra: `{"k":1}`, ElapsedMS: 900},
		}
		n, err := d.PersistTurn(ctx, "th-persist", 1, rows, 4)
		if err != nil || n != 6 {
			t.Fatalf("PersistTurn = %d, %v; want 6", n, err)
		}
		var got []models.ChatMessage
		if err := d.NewSelect().Model(&got).Where("thread_id = ?", "th-persist").Order("position").Scan(ctx); err != nil {
			t.Fatal(err)
		}
		if len(got) != 6 {
			t.Fatalf("%d rows, want 6", len(got))
		}
		hist, user, call, tool, final := got[1], got[2], got[3], got[4], got[5]
		if hist.Content != "" || user.Role != "user" || user.Content != "what is a stream?" {
			t.Errorf("user side: %+v / %+v", hist, user)
		}
		if call.Content != "" || call.ToolCalls != `[{"id":"c1"}]` || call.MessageSeq != nil || call.Sources != "" || call.Extra != "{}" {
			t.Errorf("tool-call row: %+v", call)
		}
		if tool.Content != "result" || tool.ToolCallID != "c1" || tool.ToolCalls != "[]" || tool.ElapsedMS != 7 || tool.MessageSeq != nil {
			t.Errorf("tool row: %+v", tool)
		}
		if final.Content != "A stream is…" || final.Sources != `[{"id":1}]` || final.Extra != `{"k":1}` || final.ElapsedMS != 900 ||
			final.MessageSeq == nil || *final.MessageSeq != 0 || final.ToolCalls != "[]" {
			t.Errorf("final row: %+v", final)
		}
		s, err := d.ChatSessionByThread(ctx, "th-persist")
		if err != nil {
			t.Fatal(err)
		}
		// The session counts the reader's messages (two questions and the
		// answer); PersistTurn returned every row, for summarizing.
		if s.MessageCount != 3 || s.SourceOffset != 4 || s.LastMessage != "A stream is…" || s.LastMessageRole != "assistant" {
			t.Errorf("session after persist: count %d offset %d last %q/%q", s.MessageCount, s.SourceOffset, s.LastMessage, s.LastMessageRole)
		}
		// A retried activity: nothing twice.
		if n, err := d.PersistTurn(ctx, "th-persist", 1, rows, 4); err != nil || n != -1 {
			t.Fatalf("retry = %d, %v; want -1", n, err)
		}
		if c := countWhere(t, d, (*models.ChatMessage)(nil), "thread_id = ?", "th-persist"); c != 6 {
			t.Fatalf("%d rows after the retry, want 6", c)
		}
		// The next turn numbers its answer after the first.
		if _, err := d.StartTurn(ctx, db.BeginTurn{ThreadID: "th-persist", TenantID: tid, SiteID: site, MemberID: "m1", Source: "web", UserText: "more"}); err != nil {
			t.Fatal(err)
		}
		if n, err := d.PersistTurn(ctx, "th-persist", 2, rows[2:], 5); err != nil || n != 8 {
			t.Fatalf("turn 2 = %d, %v; want 8", n, err)
		}
		if s, err := d.ChatSessionByThread(ctx, "th-persist"); err != nil || s.MessageCount != 5 {
			t.Fatalf("session after turn 2: %+v, %v; want 5 messages", s, err)
		}
		var seq []models.ChatMessage
		if err := d.NewSelect().Model(&seq).Where("thread_id = ? AND message_seq IS NOT NULL", "th-persist").Order("position").Scan(ctx); err != nil {
			t.Fatal(err)
		}
		if len(seq) != 2 || *seq[1].MessageSeq != 1 {
			t.Errorf("message_seq of the answers: %+v", seq)
		}
		// The context a model call reads: all messages in order, then only
		// those from the summary's cut-off on, with the summary.
		conv, err := d.LoadContext(ctx, "th-persist")
		if err != nil || conv.Summary != "" || len(conv.Messages) != 8 || conv.Messages[0].Content != "hi" || conv.Messages[7].Content != "A stream is…" {
			t.Fatalf("LoadContext = %+v, %v", conv, err)
		}
		if err := d.SaveSummary(ctx, "th-persist", "they asked about streams", seq[1].Position); err != nil {
			t.Fatal(err)
		}
		conv, err = d.LoadContext(ctx, "th-persist")
		if err != nil || conv.Summary != "they asked about streams" || len(conv.Messages) != 1 || conv.Messages[0].Position != seq[1].Position {
			t.Fatalf("LoadContext after the summary = %+v, %v", conv, err)
		}
		if err := d.SaveSummary(ctx, "th-persist", "everything", 1<<30); err != nil {
			t.Fatal(err)
		}
		if conv, err = d.LoadContext(ctx, "th-persist"); err != nil || conv.Summary != "everything" || len(conv.Messages) != 0 {
			t.Fatalf("LoadContext with nothing after the cut-off = %+v, %v", conv, err)
		}
		if _, err := d.LoadContext(ctx, "th-none"); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("LoadContext of an unknown thread: %v", err)
		}
		// A session deleted while the turn ran: nothing stored.
		if _, err := d.NewDelete().Model((*models.ChatSession)(nil)).Where("thread_id = ?", "th-persist").Exec(ctx); err != nil {
			t.Fatal(err)
		}
		if n, err := d.PersistTurn(ctx, "th-persist", 3, rows, 6); err != nil || n != -1 {
			t.Fatalf("deleted session = %d, %v; want -1", n, err)
		}
	})
}

// A new thread's first turn (one statement on PostgreSQL) returns the stored
// session's id, and a clash of generated thread ids writes nothing.
func TestStartTurnNewThread(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		tid := defaultTenant(t, d)
		site := chatTestSite(t, d, tid, "newthread", false)
		in := db.BeginTurn{ThreadID: "th-new", TenantID: tid, SiteID: site, MemberID: "m1", Source: "web", UserText: "hello", New: true}
		ts, err := d.StartTurn(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		s, err := d.ChatSessionByThread(ctx, "th-new")
		if err != nil {
			t.Fatal(err)
		}
		if ts.Session.ID == 0 || ts.Session.ID != s.ID || s.TurnCount != 1 || s.MessageCount != 1 || s.LastMessage != "hello" || s.Title != "hello" {
			t.Fatalf("returned session %d, stored %+v", ts.Session.ID, s)
		}
		in.UserText = "clash"
		if _, err := d.StartTurn(ctx, in); err == nil {
			t.Fatal("a second new thread under the same id was accepted")
		}
		if c := countWhere(t, d, (*models.ChatMessage)(nil), "thread_id = ?", "th-new"); c != 1 {
			t.Fatalf("%d messages after the clash, want 1", c)
		}
	})
}

// A new thread's first context read is the rows StartTurn wrote, without a
// query, and equal to what the query reads; once read, or after any other
// write to the thread, reads query again.
func TestNewThreadContextWithoutAQuery(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		tid := defaultTenant(t, d)
		site := chatTestSite(t, d, tid, "fresh", false)
		start := func(thread, text string, isNew bool) {
			t.Helper()
			if _, err := d.StartTurn(ctx, db.BeginTurn{ThreadID: thread, TenantID: tid, SiteID: site, MemberID: "m1",
				Source: "web", UserText: text, New: isNew,
				History: []db.HistoryMessage{{Role: "user", Content: "hi"}, {Role: "assistant", Content: "hello"}}}); err != nil {
				t.Fatal(err)
			}
		}
		start("th-fresh", "what is a stream?", true)
		// The stored rows change behind the process's back: the kept
		// context is what StartTurn wrote, the next read is the table's.
		if _, err := d.NewUpdate().Model((*models.ChatMessage)(nil)).Set("content = ?", "changed").
			Where("thread_id = ? AND role = 'user' AND content = 'hi'", "th-fresh").Exec(ctx); err != nil {
			t.Fatal(err)
		}
		kept, err := d.LoadContext(ctx, "th-fresh")
		if err != nil {
			t.Fatal(err)
		}
		queried, err := d.LoadContext(ctx, "th-fresh")
		if err != nil {
			t.Fatal(err)
		}
		if len(kept.Messages) != 3 || kept.Messages[0].Content != "hi" || queried.Messages[0].Content != "changed" {
			t.Fatalf("kept %+v, queried %+v", kept.Messages, queried.Messages)
		}
		queried.Messages[0].Content = "hi"
		if !reflect.DeepEqual(kept, queried) {
			t.Errorf("the kept context %+v differs from the stored one %+v", kept, queried)
		}

		// Any other write to the thread drops what is kept.
		start("th-fresh2", "first", true)
		if n, err := d.PersistTurn(ctx, "th-fresh2", 1, []db.TurnRow{{Role: "assistant", Content: "an answer"}}, 0); err != nil || n <= 0 {
			t.Fatalf("PersistTurn = %d, %v", n, err)
		}
		if conv, err := d.LoadContext(ctx, "th-fresh2"); err != nil || len(conv.Messages) != 4 || conv.Messages[3].Content != "an answer" {
			t.Fatalf("after PersistTurn: %+v, %v", conv, err)
		}
		start("th-fresh3", "first", true)
		if err := d.DeleteChatSession(ctx, "th-fresh3", "m1", ""); err != nil {
			t.Fatal(err)
		}
		if _, err := d.LoadContext(ctx, "th-fresh3"); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("after the session's delete: %v, want ErrNotFound", err)
		}
	})
}
