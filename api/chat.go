package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/activities"
	"github.com/lorekb/lore/internal/chatevent"
	"github.com/lorekb/lore/internal/db"
	scrub "github.com/lorekb/lore/internal/redact"
	"github.com/lorekb/lore/internal/telemetry"
	"github.com/lorekb/lore/models"
	"github.com/lorekb/lore/workflows"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// ResponsesRequest is the body of POST /chat/responses (Responses-API style;
// unknown fields are refused).
type ResponsesRequest struct {
	Input              json.RawMessage `json:"input" doc:"the user message: a string, or an array of {role, content} whose last user item is the message"`
	Instructions       string          `json:"instructions" validate:"max=20000"`
	Stream             bool            `json:"stream"`
	Filter             *ChatFilter     `json:"filter"`
	PreviousResponseID string          `json:"previous_response_id" doc:"the thread id to continue" validate:"max=100"`
	User               string          `json:"user" doc:"member id" validate:"max=64"`
	Model              string          `json:"model" validate:"max=200"`
	Temperature        *float64        `json:"temperature" validate:"omitempty,min=0,max=2"`
	MaxOutputTokens    *int            `json:"max_output_tokens" doc:"accepted, ignored"`
}

// ChatFilter restricts retrieval to site_id (hard isolation); without it the
// turn searches the tenant's readable sites (chatScope).
type ChatFilter struct {
	SiteID   *int64 `json:"site_id"`
	TenantID *int64 `json:"tenant_id"`
	ID       *int64 `json:"id"`
	Source   string `json:"source"`
}

// ResponseObject is the non-streamed reply (bare JSON, WIRE.md §3).
type ResponseObject struct {
	ID        string           `json:"id"`
	Object    string           `json:"object"`
	CreatedAt int64            `json:"created_at"`
	Status    string           `json:"status"`
	Model     string           `json:"model"`
	Output    []ResponseOutput `json:"output"`
	Usage     *ResponseUsage   `json:"usage"`
	// Sources are the numbered documents the answer cites, as the stream's
	// response.knowledge_sources event lists them (empty when none).
	Sources []chatevent.Source `json:"sources"`
}

// ResponseOutput is one output message.
type ResponseOutput struct {
	Type    string           `json:"type"`
	ID      string           `json:"id"`
	Role    string           `json:"role"`
	Content []map[string]any `json:"content"`
}

// ResponseUsage is the token usage of a turn (as response.completed has it).
type ResponseUsage = chatevent.Usage

// AttachQuery is the query of the re-attach route.
type AttachQuery struct {
	MemberID string `query:"member_id" validate:"max=64"`
	After    *int   `query:"after" doc:"last event id received (alternative to the Last-Event-ID header)" validate:"omitempty,min=0"`
}

func (s *Server) chatRoutes() []Route {
	return []Route{
		{Surface: Client, Method: http.MethodPost, Path: "/chat/responses", Tag: "chat", Perm: Public, Raw: "text/event-stream",
			Summary: "Ask the site's assistant; streams Responses-style events (or bare JSON with stream=false)",
			Description: "Each SSE event carries an `id:`; resend the request with `Last-Event-ID` and `previous_response_id`, or GET /chat/responses/{thread_id}, to resume. " +
				"With stream=true, errors before the stream starts (validation, site, thread owner, rate limits) are HTTP 200 with one " +
				"`response.error` event and `data: [DONE]`; the HTTP status they would have is in the X-Lore-Error-Status header. " + chatSecretGivenDoc,
			Body: ResponsesRequest{}, Handler: s.streamSetup(responsesStream, s.chatResponses)},
		{Surface: Client, Method: http.MethodGet, Path: "/chat/responses/{thread_id}", Tag: "chat", Perm: Public, Raw: "text/event-stream",
			Summary: "Re-attach to the latest turn of a thread: the events after Last-Event-ID, exactly once", Description: chatOwnedDoc,
			Query: AttachQuery{}, Handler: s.attachChat},
	}
}

// chatTurn is one turn to start through the shared chat core.
type chatTurn struct {
	Site *models.Site
	// Sites, for a turn of no site (Site.ID 0, see chatScope), are the
	// sites it searches.
	Sites    []int64
	ThreadID string
	// Existing: ThreadID came from a caller (previous_response_id) and must
	// name a stored thread; no session is created under it.
	Existing  bool
	MemberID  string
	OwnerHash string // of the owner secret (chat_owner.go); "" for messenger turns
	// OwnerMemberHash: of MemberID when strong (memberOwnerHash); "" for
	// weak ones and messenger turns.
	OwnerMemberHash string
	Source          string
	Text            string
	History         []db.HistoryMessage
	Instructions    string
	Model           string
	Temperature     *float64
	Reply           *workflows.ReplyTarget
}

// startedTurn identifies a turn: stored, and running once launched.
type startedTurn struct {
	ThreadID   string
	WorkflowID string
	Model      string
	CreatedAt  time.Time
	// launch starts the turn's ChatRun (see prepareChatTurn).
	launch func(ctx context.Context) error
}

// validThreadID: thread ids are ASCII letters, digits and - _ . : (ours are
// "auto-<hex>", messenger threads "<channel>-<user>"), at most 100 bytes; any
// other previous_response_id is refused before it reaches the store.
func validThreadID(id string) bool {
	if id == "" || len(id) > 100 {
		return false
	}
	for i := 0; i < len(id); i++ {
		ch := id[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || strings.IndexByte("-_.:", ch) >= 0) {
			return false
		}
	}
	return true
}

// newThreadID is "auto-" and 12 hex characters.
func newThreadID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "auto-" + hex.EncodeToString(b)
}

// startChatTurn is the core every chat entry shares (responses, completions,
// bot API, messenger webhooks): build the model from the tenant's ai-config,
// create or update the session, write the user message, start the ChatRun.
func (s *Server) startChatTurn(ctx context.Context, t chatTurn) (*startedTurn, error) {
	st, err := s.prepareChatTurn(ctx, t)
	if err != nil {
		return nil, err
	}
	if err := st.launch(ctx); err != nil {
		return nil, err
	}
	return st, nil
}

// prepareChatTurn does everything before the stream starts (the turn is then
// stored: response.created can go out) and returns the turn with its launch.
// A stream calls launch after its first event; a launch that fails stores an
// error notice as the turn's answer, so the session stays consistent.
func (s *Server) prepareChatTurn(ctx context.Context, t chatTurn) (*startedTurn, error) {
	tc, err := s.temporalClient()
	if err != nil {
		return nil, err
	}
	_, modelName, err := s.d.ChatModel(ctx, t.Site.TenantID)
	if err != nil {
		return nil, BadRequest("chat model is not configured: %s", scrub.Text(err.Error())) // callers are often anonymous
	}
	s.guardTurn(&t) // the tenant's model; caller instructions bounded (chat_guard.go)
	// Every entry's parser refuses oversized input with its own field name;
	// this bounds any other (messenger texts included).
	if err := s.checkChatInput("input", append(historyMessages(t.History), chatMessage{Role: "user", Text: t.Text})); err != nil {
		return nil, err
	}
	newThread := t.ThreadID == ""
	if newThread {
		t.ThreadID = newThreadID()
	}
	if t.MemberID == "" {
		t.MemberID = "anonymous"
	}
	start := time.Now()
	if !newThread {
		s.awaitPreviousTurn(ctx, t.ThreadID)
	}
	resv, err := s.reserveTurnBudget(ctx, &t)
	if err != nil {
		return nil, err
	}
	ts, err := s.d.DB.StartTurn(ctx, db.BeginTurn{ThreadID: t.ThreadID, TenantID: t.Site.TenantID, SiteID: t.Site.ID,
		MemberID: t.MemberID, OwnerHash: t.OwnerHash, OwnerMemberHash: t.OwnerMemberHash, Source: t.Source, UserText: t.Text, History: t.History, New: newThread, Existing: t.Existing})
	if err != nil {
		s.releaseTurnBudget(resv)
	}
	if errors.Is(err, db.ErrNotOwner) {
		return nil, Errf(http.StatusForbidden, "thread %s belongs to another member or site", t.ThreadID)
	}
	if errors.Is(err, db.ErrNotFound) && t.Existing {
		return nil, NotFound("thread")
	}
	if err != nil {
		return nil, err
	}
	cfg := s.d.Cfg
	in := workflows.ChatRunInput{ChatRunSpec: activities.NewChatRunSpec(cfg, t.Site, t.ThreadID, ts.Turn, start),
		Model: t.Model, Temperature: t.Temperature, Instructions: t.Instructions, SiteIDs: t.Sites, Reply: t.Reply}
	if s.hub != nil && t.Reply == nil {
		in.Reader = s.hub.ID // this process reads the turn
	}
	wfID := workflows.ChatRunID(t.ThreadID, ts.Session.ID, ts.Turn)
	// What the run is about, for operators (search attributes, memo title),
	// sent in the start request itself: no extra round trip. Site admins list
	// these jobs, so the member is its handle (memberHandle).
	meta := workflows.JobMeta{Kind: workflows.KindChat, TenantID: t.Site.TenantID, SiteID: t.Site.ID,
		RequestedBy: s.memberHandle(t.Site.ID, t.MemberID), RequestID: telemetry.RequestID(ctx),
		Title: workflows.JobTitle(fmt.Sprintf("Chat turn %d of thread", ts.Turn), t.ThreadID, t.Site.Name)}
	launch := func(ctx context.Context) error {
		opts := client.StartWorkflowOptions{ID: wfID, TaskQueue: cfg.TemporalQueue,
			// With the worker in this process, the first workflow task comes
			// back in the start response and runs here: no trip through the queue.
			EnableEagerStart: true,
			// No execution timeout: every step of a run is bounded (model calls
			// stop at the stream deadline, or the run's timer stops them; the
			// local activities have start-to-close limits), and a server-side
			// timeout is a timer write and delete per turn, which measurably
			// lengthened the latency tail when many turns start at once.
			WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
			WorkflowExecutionErrorWhenAlreadyStarted: true}
		_, err := workflows.StartWithMeta(s.starter, meta, opts, func(opts client.StartWorkflowOptions) (client.WorkflowRun, error) {
			// Until the stream's deadline: a turn that starts later would
			// only time out.
			return startChatRun(ctx, start.Add(cfg.ChatStreamTimeout()), func(ctx context.Context) (client.WorkflowRun, error) {
				return tc.ExecuteWorkflow(ctx, opts, workflows.ChatWorkflowName, in)
			})
		})
		if err == nil {
			s.releaseAfterRun(tc, wfID, resv)
			return nil
		}
		s.releaseTurnBudget(resv)
		err = Unavailable("could not start the chat run (error id %s)", s.hideError("start a chat run", err))
		notice := "[System Error: " + err.Error() + "]"
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, perr := s.d.DB.PersistTurn(pctx, t.ThreadID, ts.Turn, []db.TurnRow{{Role: "assistant", Content: notice,
			Sources: "[]", Extra: "{}"}}, 0); perr != nil {
			s.log.Warn("store the notice of a chat run that did not start", "thread_id", t.ThreadID, "err", perr)
		}
		return err
	}
	return &startedTurn{ThreadID: t.ThreadID, WorkflowID: wfID, Model: modelName, CreatedAt: start, launch: launch}, nil
}

// awaitPreviousTurn waits (up to 15 s) for the thread's previous run to
// finish: its answer is stored just after its stream ends, and a quick
// follow-up must see it in its context.
func (s *Server) awaitPreviousTurn(ctx context.Context, threadID string) {
	sess, err := s.d.DB.ChatSessionByThread(ctx, threadID)
	if err != nil || sess.TurnCount == 0 {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	_ = s.d.Temporal.GetWorkflow(wctx, workflows.ChatRunID(threadID, sess.ID, sess.TurnCount), "").Get(wctx, nil)
}

// historyMessages are history rows as chat messages, for the size checks.
func historyMessages(h []db.HistoryMessage) []chatMessage {
	out := make([]chatMessage, len(h), len(h)+1)
	for i, m := range h {
		out[i] = chatMessage{Role: m.Role, Text: m.Content}
	}
	return out
}

// parseInput returns the user message and, for array input, the earlier
// user/assistant messages; every message of the input is also returned, for
// the size checks (checkChatInput).
func parseInput(raw json.RawMessage) (string, []db.HistoryMessage, []chatMessage, error) {
	raw = json.RawMessage(strings.TrimSpace(string(raw)))
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, nil, Invalid("input: field required")
	}
	var text string
	if err := json.Unmarshal(raw, &text); err == nil {
		if strings.TrimSpace(text) == "" {
			return "", nil, nil, Invalid("input: must not be empty")
		}
		return text, nil, []chatMessage{{Role: "user", Text: text}}, nil
	}
	var items []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &items); err != nil {
		return "", nil, nil, Invalid("input: must be a string or an array of messages")
	}
	var hist []db.HistoryMessage
	last := -1
	for i, it := range items {
		if it.Role == "user" {
			last = i
		}
	}
	if last < 0 {
		return "", nil, nil, Invalid("input: no user message")
	}
	all := make([]chatMessage, len(items))
	for i, it := range items {
		content := contentText(it.Content)
		all[i] = chatMessage{Role: it.Role, Text: content}
		if i == last {
			text = content
		}
		if i < last && (it.Role == "user" || it.Role == "assistant") && content != "" {
			hist = append(hist, db.HistoryMessage{Role: it.Role, Content: content})
		}
	}
	if strings.TrimSpace(text) == "" {
		return "", nil, nil, Invalid("input: the user message is empty")
	}
	return text, hist, all, nil
}

// contentText accepts a string or an array of {type, text} parts.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return ""
}

func (s *Server) chatResponses(c *fiber.Ctx) error {
	var req ResponsesRequest
	if err := bindJSON(c, &req); err != nil {
		return err
	}
	text, hist, msgs, err := parseInput(req.Input)
	if err != nil {
		return err
	}
	if err := s.checkChatInput("input", msgs); err != nil {
		return err
	}
	site, sites, err := s.chatScope(c, req.Filter)
	if err != nil {
		return err
	}
	if err := s.chatRateLimit(c, site); err != nil {
		return err
	}
	if req.PreviousResponseID != "" && !validThreadID(req.PreviousResponseID) {
		return Invalid("previous_response_id: not a thread id (letters, digits, '-', '_', '.', ':'; at most 100)")
	}
	if last := c.Get("Last-Event-ID"); last != "" && req.PreviousResponseID != "" {
		return s.attach(c, req.PreviousResponseID, req.User, last)
	}
	owner, err := chatOwnerOf(c)
	if err != nil {
		return err
	}
	if req.Temperature == nil {
		t := 0.7
		req.Temperature = &t
	}
	if req.PreviousResponseID != "" {
		hist = nil // an existing thread has its own history
	}
	turn := chatTurn{Site: site, Sites: sites, ThreadID: req.PreviousResponseID, Existing: req.PreviousResponseID != "", MemberID: req.User,
		OwnerHash: owner.hash, OwnerMemberHash: memberOwnerHash(req.User), Source: "web_chat", Text: text, History: hist, Instructions: req.Instructions, Model: req.Model, Temperature: req.Temperature}
	if req.Stream {
		// The turn is stored before the stream starts; the run is launched
		// once response.created is out.
		st, err := s.prepareChatTurn(c.UserContext(), turn)
		if err != nil {
			return budgetRetryAfter(c, err)
		}
		s.giveChatSecret(c, owner)
		s.streamRun(c, st.ThreadID, st.WorkflowID, 0, st.launch)
		return nil
	}
	st, err := s.startChatTurn(c.UserContext(), turn)
	if err != nil {
		return budgetRetryAfter(c, err)
	}
	s.giveChatSecret(c, owner)
	return s.respondJSON(c, st)
}

// respondJSON waits for the run's last event and returns the bare response
// object (storing the turn continues after it).
func (s *Server) respondJSON(c *fiber.Ctx, st *startedTurn) error {
	a, err := s.collectAnswer(c, st)
	if err != nil {
		return err
	}
	msgID := make([]byte, 6)
	_, _ = rand.Read(msgID)
	return c.JSON(ResponseObject{ID: st.ThreadID, Object: "response", CreatedAt: st.CreatedAt.Unix(), Status: "completed",
		Model: st.Model, Usage: a.usage, Sources: a.sourceList(), Output: []ResponseOutput{{Type: "message", ID: "msg-" + hex.EncodeToString(msgID),
			Role: "assistant", Content: []map[string]any{{"type": "output_text", "text": a.text.String()}}}}})
}

// collectAnswer follows the run to its last event (see followRun) and
// returns the answer, for replies that are not streamed.
func (s *Server) collectAnswer(c *fiber.Ctx, st *startedTurn) (*answer, error) {
	ctx, cancel := context.WithTimeout(c.UserContext(), s.d.Cfg.ChatStreamTimeout()+time.Minute)
	defer cancel()
	a := &answer{}
	if err := s.followRun(ctx, st.WorkflowID, 0, true, a.add, nil, nil); err != nil {
		return nil, Unavailable("the chat run could not be read (error id %s)", s.hideError("read a chat run", err))
	}
	return a, nil
}

// answer collects the text and usage of a run's events, for answers that
// are not streamed.
type answer struct {
	text    strings.Builder
	usage   *ResponseUsage
	sources []chatevent.Source
}

// sourceList is the answer's sources, never nil (an empty list in JSON).
func (a *answer) sourceList() []chatevent.Source {
	if a.sources == nil {
		return []chatevent.Source{}
	}
	return a.sources
}

func (a *answer) add(ev workflows.ChatEvent) {
	switch chatevent.TypeOf(ev.Data) {
	case chatevent.TypeTextDelta:
		text, _ := chatevent.TextOf(ev.Data)
		a.text.WriteString(text)
	case chatevent.TypeCompleted:
		a.usage = chatevent.Parse(ev.Data).Response.Usage
	case chatevent.TypeKnowledgeSources:
		a.sources = append(a.sources, chatevent.Parse(ev.Data).Sources...)
	}
}
