package db_test

import (
	"context"
	"testing"

	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/db/dbtest"
	"github.com/lorekb/lore/models"
)

// TestToolResultsKeyedByThreadAndCall: two threads whose tool calls share an
// id (the built-in model derives it from the question) keep their own
// results, and a retry in one thread overwrites only its own.
func TestToolResultsKeyedByThreadAndCall(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		for _, r := range []models.ToolResult{{ThreadID: "a", ToolCallID: "call-x", Content: "A1"},
			{ThreadID: "b", ToolCallID: "call-x", Content: "B"}, {ThreadID: "a", ToolCallID: "call-x", Content: "A2"}} {
			if err := d.SaveToolResult(ctx, &r); err != nil {
				t.Fatal(err)
			}
		}
		a, err := d.ToolResultContents(ctx, "a", []string{"call-x"})
		if err != nil || a["call-x"] != "A2" {
			t.Fatalf("thread a: %v %v", a, err)
		}
		b, err := d.ThreadToolResult(ctx, "b", "call-x")
		if err != nil || b.Content != "B" {
			t.Fatalf("thread b: %+v %v", b, err)
		}
		if n, _ := d.NewSelect().Model((*models.ToolResult)(nil)).Count(ctx); n != 2 {
			t.Fatalf("%d rows, want 2", n)
		}
	})
}

// TestToolResultsRekeyMigration runs the re-keying migration on a table of
// the old shape (tool_call_id alone as key) and keeps its rows.
func TestToolResultsRekeyMigration(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		for _, q := range []string{
			"DROP TABLE tool_results",
			"CREATE TABLE tool_results (tool_call_id VARCHAR NOT NULL PRIMARY KEY, thread_id VARCHAR NOT NULL, content VARCHAR NOT NULL, created_at TIMESTAMP NOT NULL)",
			"INSERT INTO tool_results VALUES ('call-x', 'a', 'A', CURRENT_TIMESTAMP)",
			"DELETE FROM bun_migrations WHERE name = '20261124000017'",
		} {
			if _, err := d.ExecContext(ctx, q); err != nil {
				t.Fatal(q, err)
			}
		}
		if err := d.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		if err := d.SaveToolResult(ctx, &models.ToolResult{ThreadID: "b", ToolCallID: "call-x", Content: "B"}); err != nil {
			t.Fatal(err)
		}
		a, _ := d.ThreadToolResult(ctx, "a", "call-x")
		b, _ := d.ThreadToolResult(ctx, "b", "call-x")
		if a.Content != "A" || b.Content != "B" {
			t.Fatalf("after migration: %q %q", a.Content, b.Content)
		}
	})
}
