package activities

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/lorekb/lore/models"
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
