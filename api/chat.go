package api

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/streamhub"
	"github.com/lorekb/lore/models"
	"github.com/lorekb/lore/workflows"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
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

// ChatFilter restricts retrieval; site_id is required (hard isolation).
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
}

// ResponseOutput is one output message.
type ResponseOutput struct {
	Type    string           `json:"type"`
	ID      string           `json:"id"`
	Role    string           `json:"role"`
	Content []map[string]any `json:"content"`
}

// ResponseUsage is the token usage of a turn.
type ResponseUsage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// AttachQuery is the query of the re-attach route.
type AttachQuery struct {
	MemberID string `query:"member_id" validate:"max=64"`
	After    *int   `query:"after" doc:"last event id received (alternative to the Last-Event-ID header)" validate:"omitempty,min=0"`
}

func (s *Server) chatRoutes() []Route {
	return []Route{
		{Surface: Client, Method: http.MethodPost, Path: "/chat/responses", Tag: "chat", Perm: Public, Raw: "text/event-stream",
			Summary:     "Ask the site's assistant; streams Responses-style events (or bare JSON with stream=false)",
			Description: "Each SSE event carries an `id:`; resend the request with `Last-Event-ID` and `previous_response_id`, or GET /chat/responses/{thread_id}, to resume.",
			Body:        ResponsesRequest{}, Handler: s.chatResponses},
		{Surface: Client, Method: http.MethodGet, Path: "/chat/responses/{thread_id}", Tag: "chat", Perm: Public, Raw: "text/event-stream",
			Summary: "Re-attach to the latest turn of a thread: the events after Last-Event-ID, exactly once", Query: AttachQuery{}, Handler: s.attachChat},
	}
}

// chatTurn is one turn to start through the shared chat core.
type chatTurn struct {
	Site         *models.Site
	ThreadID     string
	MemberID     string
	Source       string
	Text         string
	History      []db.HistoryMessage
	Instructions string
	Model        string
	Temperature  *float64
	Reply        *workflows.ReplyTarget
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
		return nil, BadRequest("chat model is not configured: %v", err)
	}
	if t.Model != "" {
		modelName = t.Model
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
	ts, err := s.d.DB.StartTurn(ctx, db.BeginTurn{ThreadID: t.ThreadID, TenantID: t.Site.TenantID, SiteID: t.Site.ID,
		MemberID: t.MemberID, Source: t.Source, UserText: t.Text, History: t.History, New: newThread})
	if errors.Is(err, db.ErrNotOwner) {
		return nil, Errf(http.StatusForbidden, "thread %s belongs to another member or site", t.ThreadID)
	}
	if err != nil {
		return nil, err
	}
	cfg := s.d.Cfg
	in := workflows.ChatRunInput{ThreadID: t.ThreadID, Turn: ts.Turn, TenantID: t.Site.TenantID, SiteID: t.Site.ID,
		Model: t.Model, Temperature: t.Temperature, Instructions: t.Instructions, SourceOffset: ts.SourceOffset,
		ShowTrace: t.Site.ShowPipelineTrace, StartedAtMs: start.UnixMilli(), TimeoutMs: cfg.ChatStreamTimeout().Milliseconds(),
		MaxIterations: cfg.AgentMaxIterations, MaxEmpty: cfg.AgentMaxConsecutiveEmpty,
		SummaryTrigger: cfg.AgentSummaryTriggerMsgCount, SummaryKeep: cfg.AgentSummaryKeepLastN, Reply: t.Reply}
	if s.hub != nil && t.Reply == nil {
		in.Reader = streamhub.ProcessID // this process reads the turn
	}
	wfID := workflows.ChatRunID(t.ThreadID, ts.Session.ID, ts.Turn)
	launch := func(ctx context.Context) error {
		if in.Reader != "" {
			// The run's first model call starts now, while the run starts;
			// the run adopts it (activities.Early).
			s.early.Start(wfID, workflows.FirstModelInput(in))
		}
		_, err := tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: wfID, TaskQueue: cfg.TemporalQueue,
			// With the worker in this process, the first workflow task comes
			// back in the start response and runs here: no trip through the queue.
			EnableEagerStart: true,
			// No execution timeout: every step of a run is bounded (model calls
			// stop at the stream deadline, or the run's timer stops them; the
			// local activities have start-to-close limits), and a server-side
			// timeout is a timer write and delete per turn, which measurably
			// lengthened the latency tail when many turns start at once.
			WorkflowIDReusePolicy:                    enumspb.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
			WorkflowExecutionErrorWhenAlreadyStarted: true}, workflows.ChatRun, in)
		if err == nil {
			return nil
		}
		if in.Reader != "" {
			s.early.Cancel(wfID)
		}
		err = Unavailable("could not start the chat run: %v", err)
		notice := "[System Error: " + err.Error() + "]"
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, perr := s.d.DB.PersistTurn(pctx, t.ThreadID, ts.Turn, []db.TurnRow{{Role: "assistant", Content: notice,
			Sources: "[]", Extra: "{}"}}, ts.SourceOffset); perr != nil {
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

// parseInput returns the user message and, for array input, the earlier
// user/assistant messages.
func parseInput(raw json.RawMessage) (string, []db.HistoryMessage, error) {
	raw = json.RawMessage(strings.TrimSpace(string(raw)))
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, Invalid("input: field required")
	}
	var text string
	if err := json.Unmarshal(raw, &text); err == nil {
		if strings.TrimSpace(text) == "" {
			return "", nil, Invalid("input: must not be empty")
		}
		return text, nil, nil
	}
	var items []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &items); err != nil {
		return "", nil, Invalid("input: must be a string or an array of messages")
	}
	var hist []db.HistoryMessage
	last := -1
	for i, it := range items {
		if it.Role == "user" {
			last = i
		}
	}
	if last < 0 {
		return "", nil, Invalid("input: no user message")
	}
	for i, it := range items {
		content := contentText(it.Content)
		if i == last {
			text = content
			break
		}
		if (it.Role == "user" || it.Role == "assistant") && content != "" {
			hist = append(hist, db.HistoryMessage{Role: it.Role, Content: content})
		}
	}
	if strings.TrimSpace(text) == "" {
		return "", nil, Invalid("input: the user message is empty")
	}
	return text, hist, nil
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
	text, hist, err := parseInput(req.Input)
	if err != nil {
		return err
	}
	if req.Filter == nil || req.Filter.SiteID == nil {
		return Invalid("filter.site_id: field required")
	}
	site, err := s.clientSite(c, *req.Filter.SiteID)
	if err != nil {
		return err
	}
	if last := c.Get("Last-Event-ID"); last != "" && req.PreviousResponseID != "" {
		return s.attach(c, req.PreviousResponseID, req.User, last)
	}
	if req.Temperature == nil {
		t := 0.7
		req.Temperature = &t
	}
	if req.PreviousResponseID != "" {
		hist = nil // an existing thread has its own history
	}
	turn := chatTurn{Site: site, ThreadID: req.PreviousResponseID, MemberID: req.User,
		Source: "web_chat", Text: text, History: hist, Instructions: req.Instructions, Model: req.Model, Temperature: req.Temperature}
	if req.Stream {
		// The turn is stored before the stream starts; the run is launched
		// once response.created is out.
		st, err := s.prepareChatTurn(c.UserContext(), turn)
		if err != nil {
			return err
		}
		s.streamRun(c, st.ThreadID, st.WorkflowID, 0, st.launch)
		return nil
	}
	st, err := s.startChatTurn(c.UserContext(), turn)
	if err != nil {
		return err
	}
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
		Model: st.Model, Usage: a.usage, Output: []ResponseOutput{{Type: "message", ID: "msg-" + hex.EncodeToString(msgID),
			Role: "assistant", Content: []map[string]any{{"type": "output_text", "text": a.text.String()}}}}})
}

// collectAnswer follows the run to its last event (see followRun) and
// returns the answer, for replies that are not streamed.
func (s *Server) collectAnswer(c *fiber.Ctx, st *startedTurn) (*answer, error) {
	ctx, cancel := context.WithTimeout(c.UserContext(), s.d.Cfg.ChatStreamTimeout()+time.Minute)
	defer cancel()
	a := &answer{}
	if err := s.followRun(ctx, st.WorkflowID, 0, a.add, nil, nil); err != nil {
		return nil, Unavailable("chat run: %v", err)
	}
	return a, nil
}

// answer collects the text and usage of a run's events, for answers that
// are not streamed.
type answer struct {
	text  strings.Builder
	usage *ResponseUsage
}

func (a *answer) add(ev workflows.ChatEvent) {
	var e struct {
		Type     string `json:"type"`
		Delta    string `json:"delta"`
		Response struct {
			Usage *ResponseUsage `json:"usage"`
		} `json:"response"`
	}
	_ = json.Unmarshal(ev.Data, &e)
	switch e.Type {
	case "response.output_text.delta":
		a.text.WriteString(e.Delta)
	case "response.completed":
		a.usage = e.Response.Usage
	}
}

func (s *Server) attachChat(c *fiber.Ctx) error {
	var q AttachQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	last := c.Get("Last-Event-ID")
	if q.After != nil {
		last = strconv.Itoa(*q.After)
	}
	return s.attach(c, c.Params("thread_id"), q.MemberID, last)
}

// attach streams the latest turn of a thread from after the given event id.
func (s *Server) attach(c *fiber.Ctx, threadID, memberID, lastEventID string) error {
	after := 0
	if lastEventID != "" {
		n, err := strconv.Atoi(lastEventID)
		if err != nil || n < 0 {
			return Invalid("Last-Event-ID: must be a non-negative integer")
		}
		after = n
	}
	sess, err := s.d.DB.ChatSessionByThread(c.UserContext(), threadID)
	if errors.Is(err, db.ErrNotFound) {
		return NotFound("thread")
	}
	if err != nil {
		return err
	}
	if memberID != "" && sess.MemberID != memberID {
		return Errf(http.StatusForbidden, "thread %s belongs to another member", threadID)
	}
	if sess.SiteID != nil {
		if _, err := s.clientSite(c, *sess.SiteID); err != nil {
			return err
		}
	}
	if _, err := s.temporalClient(); err != nil {
		return err
	}
	s.streamRun(c, threadID, workflows.ChatRunID(threadID, sess.ID, sess.TurnCount), after, nil)
	return nil
}

// streamRun writes the run's events after `after` as SSE, each with its id,
// then [DONE]. The first event (response.created) is written at once from
// what the API already knows.
func (s *Server) streamRun(c *fiber.Ctx, threadID, wfID string, after int, launch func(context.Context) error) {
	first := after == 0
	s.pumpSSE(c, wfID, after, launch, func(w *bufio.Writer, ev *workflows.ChatEvent, done bool) {
		if first {
			first = false
			created, _ := json.Marshal(map[string]any{"type": "response.created",
				"response": map[string]any{"id": threadID, "object": "response", "status": "in_progress"}})
			fmt.Fprintf(w, "id: 1\ndata: %s\n\n", created)
		}
		switch {
		case ev != nil && ev.Seq > 1 || ev != nil && after > 0:
			fmt.Fprintf(w, "id: %d\ndata: %s\n\n", ev.Seq, ev.Data)
		case done:
			fmt.Fprint(w, "data: [DONE]\n\n")
		}
	}, func(w *bufio.Writer, err error) {
		b, _ := json.Marshal(map[string]any{"type": "response.error", "error": "the chat run could not be read: " + err.Error()})
		fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", b)
	})
}

// pumpSSE streams a run's log through write: once with a nil event before
// anything is read (so a first line can go out at once), once per event (see
// followRun), and once with done=true at the end. A client that goes away
// cancels the run, so the pending model call stops.
func (s *Server) pumpSSE(c *fiber.Ctx, wfID string, after int, launch func(context.Context) error,
	write func(w *bufio.Writer, ev *workflows.ChatEvent, done bool), fail func(w *bufio.Writer, err error)) {
	setSSEHeaders(c)
	c.Status(http.StatusOK)
	timeout := s.d.Cfg.ChatStreamTimeout() + time.Minute
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		write(w, nil, false)
		flushErr := w.Flush()
		if launch != nil {
			// The run starts even if the client already left: the turn is
			// stored and gets its answer (a reconnect can read it).
			if err := launch(ctx); err != nil {
				fail(w, err)
				_ = w.Flush()
				return
			}
		}
		if flushErr != nil {
			s.cancelRun(wfID)
			return
		}
		last := after
		if after == 0 {
			last = 1 // response.created is known without reading it
		}
		err := s.followRun(ctx, wfID, last, func(ev workflows.ChatEvent) { write(w, &ev, false) }, w.Flush,
			// While nothing is written, a comment line each second keeps
			// proxies from closing the stream and tells us whether the
			// client is still there.
			func() error {
				fmt.Fprint(w, ": keep-alive\n\n")
				return w.Flush()
			})
		switch {
		case err == nil:
			write(w, nil, true)
			_ = w.Flush()
		case !errors.Is(err, errReaderGone):
			fail(w, err)
			_ = w.Flush()
		}
	})
}

// errReaderGone: followRun's reader went away (a flush failed); the run was
// cancelled.
var errReaderGone = errors.New("the reader went away")

// followRun hands a run's events after sequence number after to onEvent, in
// log order, and returns nil once the run's last event (response.completed)
// was handed over. Events come from two sources merged in log order: the
// in-process hub (each event the moment it exists, when the worker runs in
// this process) and the run's log read by long-poll (the source of truth,
// and the only source when the run works elsewhere). An event delivered by
// the hub is not handed over again when the log brings it. Reading from the
// hub, a reader is not held up by what the run does after its last event
// (storing the turn, summarizing). flush (optional) follows each batch and
// idle (optional) each second in which nothing was handed over; an error
// from either means the reader is gone: the run is cancelled and
// errReaderGone returned. Other errors are the log's.
func (s *Server) followRun(ctx context.Context, wfID string, after int, onEvent func(workflows.ChatEvent),
	flush, idle func() error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	last := after
	type item struct {
		hub  []streamhub.Event
		page *workflows.EventsPage
		err  error
	}
	items := make(chan item, 16)
	go func() { // the log, by long-poll
		for next := last; ; {
			if s.hub != nil {
				// While the hub delivers (the run works in this
				// process), the log is only needed once it falls
				// silent: then it brings what the hub could not.
				s.hub.WaitQuiet(ctx, wfID, hubQuiet)
			}
			page, err := s.readLog(ctx, wfID, workflows.WaitArgs{From: next, OwnOnly: s.hub != nil})
			select {
			case items <- item{page: &page, err: err}:
			case <-ctx.Done():
				return
			}
			if err != nil || page.Done {
				return
			}
			if n := len(page.Events); n > 0 {
				next = page.Events[n-1].Seq
			}
		}
	}()
	if s.hub != nil {
		go func() { // the fast path
			for idx := 0; ctx.Err() == nil; {
				evs := s.hub.Wait(ctx, wfID, idx)
				if len(evs) == 0 {
					continue
				}
				idx += len(evs)
				select {
				case items <- item{hub: evs}:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	sent := map[string]bool{}         // origins already handed over
	held := map[int]streamhub.Event{} // hub events waiting for earlier log entries
	completed := false                // response.completed handed over: the log has nothing after it
	quiet := true
	emit := func(ev workflows.ChatEvent) {
		onEvent(ev)
		quiet = false
		last = ev.Seq
		if ev.Origin != "" {
			sent[ev.Origin] = true
		} else if eventType(ev.Data) == "response.completed" {
			completed = true
		}
	}
	drainHeld := func() {
		for {
			h, ok := held[last+1]
			if !ok {
				return
			}
			delete(held, last+1)
			if !sent[h.Origin] {
				emit(workflows.ChatEvent{Seq: h.Seq, Data: h.Data, Origin: h.Origin})
			}
		}
	}
	gone := func() error {
		s.cancelRun(wfID)
		return errReaderGone
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		var it item
		select {
		case it = <-items:
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			if quiet && idle != nil && idle() != nil {
				return gone()
			}
			quiet = true
			continue
		}
		switch {
		case it.err != nil:
			return it.err
		case it.hub != nil:
			for _, h := range it.hub {
				if sent[h.Origin] || h.Seq <= last {
					continue
				}
				held[h.Seq] = h
			}
			drainHeld()
		default:
			for _, ev := range it.page.Events {
				if ev.Seq <= last && ev.Origin == "" {
					continue
				}
				if ev.Origin != "" && sent[ev.Origin] {
					last = max(last, ev.Seq)
					continue
				}
				emit(ev)
				drainHeld()
			}
			if it.page.Done {
				completed = true
			}
		}
		if completed {
			return nil
		}
		if flush != nil && flush() != nil {
			return gone()
		}
	}
}

// hubQuiet is how long the hub must stay silent before the log is read.
const hubQuiet = 300 * time.Millisecond

// cancelRun cancels a chat run whose client went away: a model call in this
// process stops at once through the hub; the run itself is cancelled through
// Temporal (it may already have finished).
func (s *Server) cancelRun(wfID string) {
	if s.hub != nil {
		s.hub.Cancel(wfID)
		if s.hub.Local(wfID) {
			// The run works in this process and ends by itself once its
			// model call stopped. A cancel request now would only land in
			// its open workflow task and make the server fail and replay
			// it; send one later in case the run moved elsewhere.
			time.AfterFunc(5*time.Second, func() { s.cancelWorkflow(wfID) })
			return
		}
	}
	s.cancelWorkflow(wfID)
}

func (s *Server) cancelWorkflow(wfID string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var nf *serviceerror.NotFound
	if err := s.d.Temporal.CancelWorkflow(ctx, wfID, ""); err != nil && !errors.As(err, &nf) {
		s.log.Warn("cancel chat run", "workflow_id", wfID, "err", err)
	}
}

// eventType is the "type" of an SSE payload.
func eventType(data []byte) string {
	var e struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(data, &e)
	return e.Type
}

// readLog long-polls the run's log (workflow update) from an offset; for a
// run that already closed it reads the log by query.
func (s *Server) readLog(ctx context.Context, wfID string, args workflows.WaitArgs) (workflows.EventsPage, error) {
	from := args.From
	var page workflows.EventsPage
	h, err := s.d.Temporal.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: wfID,
		UpdateName: workflows.UpdateWaitEvents, Args: []any{args}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		if err = h.Get(ctx, &page); err == nil {
			return page, nil
		}
	}
	v, qerr := s.d.Temporal.QueryWorkflow(ctx, wfID, "", workflows.QueryEvents, from)
	if qerr != nil {
		return page, fmt.Errorf("update: %v; query: %w", err, qerr)
	}
	return page, v.Get(&page)
}
