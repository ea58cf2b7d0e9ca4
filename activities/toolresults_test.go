package activities

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/models"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
)

// The turn's later steps read a search result from the searching process's
// memory only when the hash the run recorded matches; otherwise (a result
// stored again by another process, a run recorded before the hash, an old
// entry) they read the database.
func TestToolResultsServeOnlyTheRecordedContent(t *testing.T) {
	f := newSearchFixture(t)
	ctx := context.Background()
	res, sr := f.search(t, f.siteA, "install quokka server")
	if res.ContentHash == "" || len(sr.Passages) == 0 {
		t.Fatalf("search result without content hash or passages: %+v", res)
	}
	id := "call-" + strconv.FormatInt(f.siteA, 10) + "-install-quokka-server"
	if e, ok := f.a.results.get("t", id, res.ContentHash, time.Now()); !ok || contentHash(e.content) != res.ContentHash {
		t.Fatalf("the searching process did not keep the result it stored (ok=%v)", ok)
	}
	// What the model reads of it, formatted from the database row.
	mem := FormatToolResult(func() string {
		s, err := f.d.DB.ToolResultContents(ctx, "t", []string{id})
		if err != nil {
			t.Fatal(err)
		}
		return s[id]
	}(), 3)

	// Another process stores the call's result again (a retried search):
	// the database now differs from this process's memory.
	other := `{"query":"install quokka server","passages":[]}`
	if err := f.d.DB.SaveToolResult(ctx, &models.ToolResult{ThreadID: "t", ToolCallID: id, Content: other}); err != nil {
		t.Fatal(err)
	}
	turn := func(hash string) []TurnMessage {
		return []TurnMessage{{Role: "assistant", Content: "x"}, {Role: "tool", ToolCallID: id, ToolRef: true, ToolHash: hash, SourceStart: 3}}
	}
	got, err := f.a.toolResultTexts(ctx, "t", turn(res.ContentHash))
	if err != nil || got[1] != mem || got[0] != "" {
		t.Fatalf("recorded hash of this process's result: got %q (err %v), want the memory copy %q", got, err, mem)
	}
	for name, hash := range map[string]string{"the other process's hash": contentHash(other), "no hash (older run)": ""} {
		got, err := f.a.toolResultTexts(ctx, "t", turn(hash))
		if err != nil || got[1] != "No relevant documents found." {
			t.Errorf("%s: got %q (err %v), want the database row", name, got, err)
		}
	}
	if _, ok := f.a.results.get("t", id, res.ContentHash, time.Now().Add(toolResultTTL+time.Second)); ok {
		t.Error("an entry older than toolResultTTL was served")
	}
}

// The cache stays bounded whatever the number of searches.
func TestToolResultsBounded(t *testing.T) {
	var c toolResults
	now := time.Now()
	for i := range 3 * maxToolResults {
		c.put("t", strconv.Itoa(i), "x", "h", storedResult{}, now)
	}
	if n := c.entries().Len(); n > maxToolResults {
		t.Fatalf("%d entries, want at most %d", n, maxToolResults)
	}
}

// The model calls of one turn read the stored thread once: a later call of
// the same run takes the first one's read (what is stored meanwhile is not
// the turn's context), and another turn reads the database again.
func TestModelCallsOfATurnReadTheThreadOnce(t *testing.T) {
	f := newSearchFixture(t)
	ctx := context.Background()
	ts, err := f.d.DB.StartTurn(ctx, db.BeginTurn{ThreadID: "ctx-thread", TenantID: 1, SiteID: f.siteA, MemberID: "m",
		Source: "web_chat", UserText: "how do I install it?", New: true})
	if err != nil {
		t.Fatal(err)
	}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	counts := map[int64][]int{} // by turn start: the messages each call read
	env.RegisterActivityWithOptions(func(ctx context.Context, in ModelTurnInput) error {
		conv, err := f.a.turnContext(ctx, in)
		if err == nil {
			counts[in.StartedAtMs] = append(counts[in.StartedAtMs], len(conv.Messages))
		}
		return err
	}, activity.RegisterOptions{Name: "read"})
	read := func(startedAtMs int64) {
		t.Helper()
		if _, err := env.ExecuteActivity("read", ModelTurnInput{ThreadID: "ctx-thread", StartedAtMs: startedAtMs}); err != nil {
			t.Fatal(err)
		}
	}
	read(1000)
	if _, err := f.d.DB.PersistTurn(ctx, "ctx-thread", ts.Turn, []db.TurnRow{{Role: "assistant", Content: "answer", Sources: "[]", Extra: "{}"}}, 0); err != nil {
		t.Fatal(err)
	}
	read(1000)
	read(2000)
	if got := counts[1000]; len(got) != 2 || got[0] != 1 || got[1] != 1 {
		t.Errorf("the calls of one turn read %v messages, want the user's 1 both times", got)
	}
	if got := counts[2000]; len(got) != 1 || got[0] != 2 {
		t.Errorf("another turn read %v messages, want 2 from the database", got)
	}
}
