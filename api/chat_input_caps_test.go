package api

import (
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/cache"
	"github.com/lorekb/lore/internal/chatbudget"
	"github.com/lorekb/lore/workflows"
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/mocks"
)

// TestChatInputCaps: a user message over LORE_CHAT_MESSAGE_MAX_CHARS
// characters, or messages over LORE_CHAT_INPUT_MAX_CHARS together, are 422
// with a message naming the limit, on the responses and the completions
// routes, streamed or not, before anything is stored; characters are
// counted, not bytes; the defaults are 8,000 and 32,000. The old code sent
// any input below the body limit upstream.
func TestChatInputCaps(t *testing.T) {
	h := newHarness(t, "sqlite", map[string]string{"LORE_CHAT_MESSAGE_MAX_CHARS": "100", "LORE_CHAT_INPUT_MAX_CHARS": "250"})
	site := csSite(h, "capped", false)
	responses := func(input any, stream bool) *resp {
		return h.do("POST", clientPath+"/chat/responses", map[string]any{"input": input, "stream": stream,
			"filter": map[string]any{"site_id": site}}, "")
	}
	completions := func(msgs ...map[string]string) *resp {
		return h.do("POST", clientPath+"/chat/completions?site_id="+itoa(site), map[string]any{"model": "x", "messages": msgs}, "")
	}
	msg := func(role string, n int) map[string]string {
		return map[string]string{"role": role, "content": strings.Repeat("a", n)}
	}
	for _, c := range []struct {
		name string
		r    *resp
		want string
	}{
		{"string input", responses(strings.Repeat("a", 101), false), "input: a user message may have at most 100 characters (this one has 101)"},
		{"array item", responses([]map[string]string{msg("user", 10), msg("assistant", 20), msg("user", 101)}, false), "input[2]: a user message may have at most 100"},
		{"array total", responses([]map[string]string{msg("user", 90), msg("assistant", 90), msg("user", 90)}, false), "at most 250 characters together (these have 270)"},
		{"an earlier message", responses([]map[string]string{msg("user", 101), msg("user", 10)}, false), "input[0]: a user message"},
		{"completions user", completions(msg("user", 101)), "messages[0]: a user message may have at most 100"},
		{"completions total", completions(msg("system", 200), msg("user", 60)), "messages: the messages may have at most 250 characters together (these have 260)"},
	} {
		if c.r.Status != 422 || !strings.Contains(string(c.r.Raw), c.want) {
			t.Errorf("%s: %d %s, want 422 with %q", c.name, c.r.Status, c.r.Raw, c.want)
		}
	}
	// A stream gets the refusal as every setup error: one response.error
	// event, the status in X-Lore-Error-Status.
	if r := responses(strings.Repeat("a", 101), true); r.Status != 200 || r.Header.Get(StreamErrorStatusHeader) != "422" ||
		!strings.Contains(string(r.Raw), "at most 100 characters") {
		t.Errorf("stream: %d %v %s", r.Status, r.Header, r.Raw)
	}
	// Within the caps (100 two-byte characters is 200 bytes): not refused
	// for its size (here the workflow engine is missing: 503).
	for name, r := range map[string]*resp{
		"responses":   responses(strings.Repeat("é", 100), false),
		"completions": completions(msg("system", 150), msg("user", 100)),
	} {
		if r.Status == 422 {
			t.Errorf("%s within the caps: %d %s", name, r.Status, r.Raw)
		}
	}
	var n int
	if err := h.d.DB.NewSelect().Table("chat_sessions").ColumnExpr("count(*)").Scan(t.Context(), &n); err != nil || n != 0 {
		t.Fatalf("sessions stored: %d %v", n, err)
	}

	d := newHarness(t, "sqlite", nil)
	dsite := csSite(d, "defaults", false)
	ask := func(input any) int {
		return d.do("POST", clientPath+"/chat/responses", map[string]any{"input": input, "filter": map[string]any{"site_id": dsite}}, "").Status
	}
	if st := ask(strings.Repeat("a", 8001)); st != 422 {
		t.Errorf("8,001 characters by default: %d", st)
	}
	if st := ask(strings.Repeat("a", 8000)); st == 422 {
		t.Errorf("8,000 characters by default: %d", st)
	}
	five := make([]map[string]string, 0, 5)
	for range 4 {
		five = append(five, msg("user", 8000))
	}
	five = append(five, msg("user", 1))
	if st := ask(five); st != 422 {
		t.Errorf("32,001 characters by default: %d", st)
	}
}

// TestChatTurnReservesItsBudget: a client turn reserves its estimated tokens
// before its model calls, so a second turn that does not fit beside it is
// refused (429) while the first one runs; the reservation is given back once
// the run has ended (after the run counted its real usage), and messenger
// turns reserve nothing. The old code only compared the tokens already
// counted with the budget, so every turn that started before one was stored
// passed.
func TestChatTurnReservesItsBudget(t *testing.T) {
	h := newHarness(t, "sqlite", map[string]string{"LORE_CHAT_DAILY_TOKEN_BUDGET": "10000", "AGENT_MAX_ITERATIONS": "4"})
	st := saSite(h, "reserved")
	site, err := h.d.DB.GetSite(t.Context(), st.ID)
	if err != nil {
		t.Fatal(err)
	}
	ctr := h.d.Cache.(cache.Counter)
	scope := chatbudget.Scope(site.ID, site.TenantID)
	used := func() int64 {
		t.Helper()
		n, err := chatbudget.Used(t.Context(), ctr, scope, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	turn := chatTurn{Site: site, Text: strings.Repeat("a", 2000), Instructions: strings.Repeat("b", 1000)}
	want := chatbudget.Estimate(3000, 5) // 1,501 tokens a pass, five passes
	first, err := h.s.reserveTurnBudget(t.Context(), &turn)
	if err != nil || first.Tokens() != want || used() != want {
		t.Fatalf("first turn: %v reserved %d, counted %d, want %d", err, first.Tokens(), used(), want)
	}
	if _, err := h.s.reserveTurnBudget(t.Context(), &turn); err != errTurnOverBudget || used() != want {
		t.Fatalf("second turn beside the first: %v, counted %d", err, used())
	}
	messenger := turn
	messenger.Reply = &workflows.ReplyTarget{Channel: "wecom_app"}
	if r, err := h.s.reserveTurnBudget(t.Context(), &messenger); err != nil || r.Tokens() != 0 {
		t.Fatalf("messenger turn: %v %d", err, r.Tokens())
	}

	// The first run ends: it counted its usage, then the reservation goes back.
	done := make(chan struct{})
	run := mocks.NewWorkflowRun(t)
	run.On("Get", mock.Anything, mock.Anything).Run(func(mock.Arguments) { <-done }).Return(nil)
	tc := mocks.NewClient(t)
	tc.On("GetWorkflow", mock.Anything, "run-1", "").Return(run)
	h.s.releaseAfterRun(tc, "run-1", first)
	time.Sleep(50 * time.Millisecond)
	if used() != want {
		t.Fatalf("released while the run was going: %d", used())
	}
	if err := chatbudget.Add(t.Context(), ctr, scope, 900, time.Now()); err != nil {
		t.Fatal(err)
	}
	close(done)
	deadline := time.Now().Add(5 * time.Second)
	for used() != 900 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if used() != 900 {
		t.Fatalf("after the run: %d, want its 900 tokens", used())
	}
	second, err := h.s.reserveTurnBudget(t.Context(), &turn)
	if err != nil || used() != 900+want {
		t.Fatalf("a turn after the run: %v, counted %d", err, used())
	}
	h.s.releaseTurnBudget(second)

	// Over HTTP the refusal is 429 with Retry-After, before anything is
	// stored: a turn whose estimate alone passes what is left (8,000
	// characters: 4,001 tokens a pass, 20,005 in all). The workflow engine
	// is never reached.
	h.d.Temporal = &mocks.Client{}
	r := h.do("POST", clientPath+"/chat/responses", map[string]any{"input": strings.Repeat("a", 8000),
		"filter": map[string]any{"site_id": site.ID}}, "")
	if r.Status != 429 || !strings.Contains(r.Msg, "budget") || r.Header.Get("Retry-After") == "" || used() != 900 {
		t.Fatalf("a turn larger than what is left: %d %v %s, counted %d", r.Status, r.Header, r.Raw, used())
	}
	var n int
	if err := h.d.DB.NewSelect().Table("chat_sessions").ColumnExpr("count(*)").Scan(t.Context(), &n); err != nil || n != 0 {
		t.Fatalf("sessions stored: %d %v", n, err)
	}
}
