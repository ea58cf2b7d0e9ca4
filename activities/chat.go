package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/internal/llm"
	"github.com/lorekb/lore/internal/rerank"
	"github.com/lorekb/lore/internal/streamhub"
	"github.com/lorekb/lore/internal/vector"
	"github.com/lorekb/lore/models"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
)

// SignalEvents is the signal by which activities append events to their chat
// run's ordered event log.
const SignalEvents = "events"

// EventBatch is a batch of event payloads sent by one activity attempt.
type EventBatch struct {
	Attempt int32
	Events  []json.RawMessage // full SSE payloads, each with its "type"
	Origins []string          // per event: the key it was published under on the hub
}

// Chat holds the activities of a chat run.
type Chat struct {
	D *deps.Deps
	// Hub, when set, receives every event at once (the fast path to an API
	// in the same process); signals then carry the log at a calmer pace.
	Hub *streamhub.Hub
	// FlushInterval batches token deltas into one signal (tens of
	// milliseconds: never one signal per token).
	FlushInterval time.Duration
}

// TurnMessage is one message of the current turn as the workflow holds it:
// tool messages carry only a reference to their stored result, so document
// text never enters workflow history.
type TurnMessage struct {
	Role        string         `json:"role"`
	Content     string         `json:"content,omitempty"`
	ToolCalls   []llm.ToolCall `json:"tool_calls,omitempty"`
	ToolCallID  string         `json:"tool_call_id,omitempty"`
	ToolRef     bool           `json:"tool_ref,omitempty"`     // content is the stored result of ToolCallID
	SourceStart int            `json:"source_start,omitempty"` // first source number of the result
	Notice      string         `json:"notice,omitempty"`       // appended instruction (force stop)
}

// ModelTurnInput is one model call of the agent loop.
type ModelTurnInput struct {
	ThreadID     string
	TenantID     int64
	Model        string
	Temperature  *float64
	Instructions string
	Turn         []TurnMessage
	OfferTools   bool
	StartedAtMs  int64 // when the request arrived, for the pipeline trace
	// SeqBase is the log length when the call was scheduled: the i-th event
	// of this call becomes log entry SeqBase+i+1 (nothing else appends to
	// the log while a model call runs).
	SeqBase int
	// DeadlineMs is when the stream times out (Unix ms): the call stops
	// there with ErrStreamTimeout, so the timeout holds even for a call that
	// runs as a local activity, where the run's timer cannot fire meanwhile.
	DeadlineMs int64
	// Reader is the streamhub.ProcessID of the API process that streams the
	// turn (empty: none). A call in another process signals its pieces to
	// the run every few tens of milliseconds, the reader's only source.
	Reader string
}

// Error types of ModelTurn the chat run tells apart from a failure.
const (
	// ErrClientGone: the reader in this process went away (Hub.Cancel).
	ErrClientGone = "ClientGone"
	// ErrStreamTimeout: the call reached ModelTurnInput.DeadlineMs (or a
	// search SearchInput.DeadlineMs).
	ErrStreamTimeout = "StreamTimeout"
)

// ModelTurnResult is the assistant message of one model call.
type ModelTurnResult struct {
	Message      llm.Message
	Usage        llm.Usage
	ContextCount int   // non-system messages given to the model
	FirstDeltaMs int64 // ms from request start to the first streamed piece (0 if none)
	FirstTextMs  int64 // ms from request start to the first text delta (0 if none)
	// Tail holds the events not yet signalled when the call ended: they
	// reach the log with the result, which saves a signal (and a workflow
	// task) per model call.
	Tail EventBatch
}

// systemPrompt frames every conversation.
const systemPrompt = `You are the documentation assistant of this site. Answer from the documentation only.
Use the search_knowledge_base tool to find passages, then answer and cite passages by their number like [1].
If the documentation does not cover the question, say so.`

// ForceStopNotice is injected as a tool message when a guard fires.
const ForceStopNotice = "Stop searching now: you have enough (or no further) results. Write the final answer from the passages above."

var searchTool = llm.ToolDef{
	Name:        llm.SearchToolName,
	Description: "Search this site's documentation. Returns numbered passages to cite.",
	Parameters: map[string]any{
		"type":       "object",
		"properties": map[string]any{"query": map[string]any{"type": "string", "description": "what to look for"}},
		"required":   []string{"query"},
	},
}

// ModelTurn runs one streamed model call. Deltas are signalled to the run in
// batches as they arrive; the activity heartbeats with every batch so a
// cancelled run (client gone, timeout) stops the model call.
func (a *Chat) ModelTurn(ctx context.Context, in ModelTurnInput) (ModelTurnResult, error) {
	ctx, stop := a.callContext(ctx, in)
	defer stop()
	model, modelName, req, err := a.request(ctx, in)
	if err != nil {
		return ModelTurnResult{}, err
	}
	gen, t0 := a.adoptEarly(ctx, in, model, modelName, req)
	em := a.newEmitter(ctx, in)
	defer em.close()
	var res ModelTurnResult
	started := map[int]bool{}
	res.ContextCount = len(req.Messages) - 1
	out, err := gen(ctx, req, func(d llm.Delta) {
		now := time.Now().UnixMilli() - in.StartedAtMs
		if res.FirstDeltaMs == 0 {
			res.FirstDeltaMs = max(now, 1)
		}
		if d.Text != "" {
			if res.FirstTextMs == 0 {
				res.FirstTextMs = max(now, 1)
			}
			em.add(map[string]any{"type": "response.output_text.delta", "delta": d.Text})
		}
		if tc := d.ToolCall; tc != nil {
			if !started[tc.Index] && tc.Name != "" {
				started[tc.Index] = true
				em.add(map[string]any{"type": "response.tool_call.started", "tool": tc.Name})
			}
			fn := map[string]any{}
			if tc.Name != "" {
				fn["name"] = tc.Name
			}
			if tc.Arguments != "" {
				fn["arguments"] = tc.Arguments
			}
			call := map[string]any{"index": tc.Index, "function": fn}
			if tc.ID != "" {
				call["id"], call["type"] = tc.ID, "function"
			}
			em.add(map[string]any{"type": "response.tool_call.delta", "tool_call": call})
		}
	})
	a.D.Metrics.ObserveModel("chat", modelName, time.Since(t0), out.Usage.InputTokens, out.Usage.OutputTokens, err)
	em.close()
	if err == nil {
		err = em.failed()
	}
	if err != nil {
		return res, em.fail(ctx, err)
	}
	res.Message, res.Usage = out.Message, out.Usage
	res.Tail = em.take()
	return res, nil
}

// request is what ModelTurn sends: the tenant's chat model (and its name)
// and the request built from the stored thread and the turn so far.
func (a *Chat) request(ctx context.Context, in ModelTurnInput) (llm.Model, string, llm.Request, error) {
	model, name, err := a.D.ChatModel(ctx, in.TenantID)
	if err != nil {
		return nil, "", llm.Request{}, temporal.NewNonRetryableApplicationError(err.Error(), "Config", err)
	}
	msgs, err := a.buildMessages(ctx, in)
	if err != nil {
		return nil, "", llm.Request{}, err
	}
	req := llm.Request{Model: in.Model, Messages: msgs, Temperature: in.Temperature}
	if in.OfferTools {
		req.Tools = []llm.ToolDef{searchTool}
	}
	return model, name, req, nil
}

// callContext is the call's context: it ends at the stream deadline and, when
// the reader shares this process, the moment the reader goes away.
func (a *Chat) callContext(ctx context.Context, in ModelTurnInput) (context.Context, context.CancelFunc) {
	var cancel context.CancelFunc
	if in.DeadlineMs > 0 {
		ctx, cancel = context.WithDeadlineCause(ctx, time.UnixMilli(in.DeadlineMs), errStreamDeadline)
	} else {
		ctx, cancel = context.WithCancel(ctx)
	}
	a.cancelOnReaderGone(ctx, activity.GetInfo(ctx).WorkflowExecution.ID, cancel)
	return ctx, cancel
}

// cancelOnReaderGone calls cancel when the run's reader in this process goes
// away (Hub.Cancel), or not at all once ctx ends.
func (a *Chat) cancelOnReaderGone(ctx context.Context, wfID string, cancel context.CancelFunc) {
	if a.Hub == nil {
		return
	}
	gone := a.Hub.Cancelled(wfID)
	go func() {
		select {
		case <-gone:
			cancel()
		case <-ctx.Done():
		}
	}()
}

var errStreamDeadline = errors.New("stream deadline")

// fail turns a failed call into the error the run sees. What a reader may
// already have seen must reach the log: a scheduled activity signals it; a
// local activity (its run's workflow task is open, a signal would only land
// after the run ended) carries it in the error, which is then final, since a
// retry would stream the text twice.
func (em *emitter) fail(ctx context.Context, err error) error {
	var typ string
	nonRetryable := false
	switch {
	case errors.Is(context.Cause(ctx), errStreamDeadline):
		typ, nonRetryable = ErrStreamTimeout, true
	case em.a.Hub != nil && isClosed(em.a.Hub.Cancelled(em.wfID)):
		// Also when the call ended before ctx saw the cancel (an adopted
		// early call stops on the same cancel, possibly first).
		typ, nonRetryable = ErrClientGone, true
	case errors.Is(err, llm.ErrPermanent):
		typ, nonRetryable = "ModelPermanent", true
	}
	if !em.local {
		_ = em.flushDetached()
		if nonRetryable {
			return temporal.NewNonRetryableApplicationError(err.Error(), typ, err)
		}
		return err
	}
	tail := em.take()
	if len(tail.Events) == 0 && !nonRetryable {
		return err // nothing shown yet: retry
	}
	if typ == "" {
		typ = "ModelStreamBroken"
	}
	return temporal.NewNonRetryableApplicationError(err.Error(), typ, err, tail)
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// buildMessages assembles system prompt, memory, stored history (which ends
// with this turn's user message) and the turn's messages so far.
func (a *Chat) buildMessages(ctx context.Context, in ModelTurnInput) ([]llm.Message, error) {
	conv, err := a.D.DB.LoadContext(ctx, in.ThreadID)
	if err != nil {
		return nil, err
	}
	sys := systemPrompt
	if in.Instructions != "" {
		sys = in.Instructions + "\n\n" + systemPrompt
	}
	msgs := []llm.Message{{Role: llm.RoleSystem, Content: sys}}
	if conv.Summary != "" {
		msgs = append(msgs, llm.Message{Role: llm.RoleSystem, Content: conv.Summary})
	}
	var refs []string
	for _, m := range in.Turn {
		if m.ToolRef {
			refs = append(refs, m.ToolCallID)
		}
	}
	stored, err := a.D.DB.ToolResultContents(ctx, refs)
	if err != nil {
		return nil, err
	}
	for _, m := range conv.Messages {
		switch m.Role {
		case "user", "assistant":
			if m.Content != "" {
				msgs = append(msgs, llm.Message{Role: m.Role, Content: m.Content})
			}
		}
	}
	for _, m := range in.Turn {
		lm := llm.Message{Role: m.Role, Content: m.Content, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID}
		if m.ToolRef {
			lm.Content = FormatToolResult(stored[m.ToolCallID], m.SourceStart)
		}
		if m.Notice != "" {
			lm.Content = strings.TrimSpace(lm.Content + "\n\n" + m.Notice)
		}
		msgs = append(msgs, lm)
	}
	return msgs, nil
}

// emitter batches event payloads and signals them to the run.
type emitter struct {
	a         *Chat
	ctx       context.Context
	wfID      string
	runID     string
	attempt   int32
	prefix    string // origin prefix: activity id and attempt
	seqBase   int
	local     bool // running as a local activity: no signals (see fail)
	hubReader bool // the run's reader is in this process and reads the hub
	n         int
	mu        sync.Mutex
	sendMu    sync.Mutex // one signal at a time, so batches arrive in order
	pending   []json.RawMessage
	origins   []string
	sent      bool
	stop      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
	err       error
}

func (a *Chat) newEmitter(ctx context.Context, in ModelTurnInput) *emitter {
	info := activity.GetInfo(ctx)
	e := &emitter{a: a, ctx: ctx, wfID: info.WorkflowExecution.ID, runID: info.WorkflowExecution.RunID,
		attempt: info.Attempt, stop: make(chan struct{}), seqBase: in.SeqBase, local: info.IsLocalActivity,
		prefix:    fmt.Sprintf("%s/%d/", info.ActivityID, info.Attempt),
		hubReader: a.Hub != nil && in.Reader == streamhub.ProcessID}
	if e.local {
		// The run's workflow task stays open while a local activity runs:
		// a signal would only be seen after the run ended. Everything goes
		// with the result (or the error).
		return e
	}
	interval := a.FlushInterval
	if interval <= 0 {
		interval = 40 * time.Millisecond
		if e.hubReader {
			// The reader is in this process and has every event from the
			// hub: the log (reconnects elsewhere) gets them each second,
			// and the rest with the call's result.
			interval = time.Second
		}
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-e.stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				_ = e.flush()
			}
		}
	}()
	return e
}

func (e *emitter) add(ev map[string]any) {
	b, _ := json.Marshal(ev)
	e.mu.Lock()
	origin := e.prefix + strconv.Itoa(e.n)
	seq := e.seqBase + e.n + 1
	e.n++
	e.pending = append(e.pending, b)
	e.origins = append(e.origins, origin)
	first := !e.sent
	if e.a.Hub != nil {
		e.a.Hub.Publish(e.wfID, streamhub.Event{Origin: origin, Seq: seq, Data: b})
	}
	e.mu.Unlock()
	if first && !e.hubReader {
		_ = e.flush() // the first piece goes out at once: it is what time-to-first-token measures
	}
}

// take removes and returns what is pending.
func (e *emitter) take() EventBatch {
	e.mu.Lock()
	defer e.mu.Unlock()
	b := EventBatch{Attempt: e.attempt, Events: e.pending, Origins: e.origins}
	e.pending, e.origins = nil, nil
	if len(b.Events) > 0 {
		e.sent = true
	}
	return b
}

// flush sends what is pending as one signal and heartbeats.
func (e *emitter) flush() error {
	activity.RecordHeartbeat(e.ctx)
	return e.signal(e.ctx)
}

// flushDetached sends what is pending even though the activity's context may
// be cancelled (the run still takes signals while it winds down).
func (e *emitter) flushDetached() error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(e.ctx), 5*time.Second)
	defer cancel()
	return e.signal(ctx)
}

func (e *emitter) signal(ctx context.Context) error {
	e.sendMu.Lock()
	defer e.sendMu.Unlock()
	b := e.take()
	if len(b.Events) == 0 {
		return nil
	}
	err := e.a.D.Temporal.SignalWorkflow(ctx, e.wfID, e.runID, SignalEvents, b)
	if err != nil {
		e.mu.Lock()
		e.err = err
		e.mu.Unlock()
	}
	return err
}

// failed reports the first signal error: a batch that did not reach the log
// fails the call, so Temporal retries it.
func (e *emitter) failed() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

// close stops the periodic flushes and waits for one in progress, so the
// tail taken after it follows every signalled batch.
func (e *emitter) close() {
	e.closeOnce.Do(func() {
		close(e.stop)
		e.wg.Wait()
	})
}

// SearchInput is one search tool call.
type SearchInput struct {
	ThreadID   string
	ToolCallID string
	TenantID   int64
	SiteID     int64
	Arguments  string // the tool call's JSON arguments
	// DeadlineMs is when the stream times out (Unix ms): a search still
	// running then stops with ErrStreamTimeout (no timer of the run can
	// interrupt a local activity).
	DeadlineMs int64
}

// SourceRef is one cited document of a search result.
type SourceRef struct {
	DocumentID int64   `json:"document_id"`
	SiteID     int64   `json:"site_id"`
	Title      string  `json:"title"`
	Score      float64 `json:"score"`
}

// SearchResult is what the workflow needs of a search: no passage text.
type SearchResult struct {
	ToolCallID string
	ChunkCount int
	Hash       string // content hash of the passages, for the identical-output guard
	Sources    []SourceRef
	ElapsedMS  int64
}

// storedResult is the JSON kept in tool_results (served by the tool-result
// endpoint) and formatted for the model.
type storedResult struct {
	Query    string    `json:"query"`
	Passages []passage `json:"passages"`
}

type passage struct {
	DocumentID int64   `json:"document_id"`
	SiteID     int64   `json:"site_id"`
	Title      string  `json:"title"`
	Score      float64 `json:"score"`
	Fragments  int     `json:"fragments"`
	Content    string  `json:"content"`
}

// FragmentSeparator joins fragments of one document in a passage.
const FragmentSeparator = "\n[...]\n"

// Search recalls fragments of the request's site only (hard isolation), keeps
// published, completed documents, reranks unless disabled, merges fragments
// per document and stores the result under the tool call id.
func (a *Chat) Search(ctx context.Context, in SearchInput) (SearchResult, error) {
	if in.DeadlineMs > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadlineCause(ctx, time.UnixMilli(in.DeadlineMs), errStreamDeadline)
		defer cancel()
	}
	res, err := a.search(ctx, in)
	if err != nil && errors.Is(context.Cause(ctx), errStreamDeadline) {
		return res, temporal.NewNonRetryableApplicationError("the stream deadline passed during the search", ErrStreamTimeout, err)
	}
	return res, err
}

func (a *Chat) search(ctx context.Context, in SearchInput) (SearchResult, error) {
	start := time.Now()
	var args struct {
		Query string `json:"query"`
	}
	_ = json.Unmarshal([]byte(in.Arguments), &args)
	query := strings.TrimSpace(args.Query)
	cfg := a.D.Cfg
	var hits []vector.Hit
	if query != "" {
		emb, store, err := a.D.TenantVectors(ctx, in.TenantID)
		if err != nil {
			return SearchResult{}, err
		}
		t0 := time.Now()
		vecs, err := emb.Embed(ctx, []string{query})
		a.D.Metrics.ObserveModel("embedding", emb.Model(), time.Since(t0), 0, 0, err)
		if err != nil {
			return SearchResult{}, classify(err)
		}
		k := min(cfg.RAGRecallK, cfg.RAGRecallMax)
		dense, err := store.Search(ctx, in.SiteID, vecs[0], k, float32(cfg.RAGRecallThreshold))
		if err != nil {
			return SearchResult{}, err
		}
		sparse, err := store.KeywordSearch(ctx, in.SiteID, query, k)
		if err != nil {
			return SearchResult{}, err
		}
		hits = fuse(dense, sparse, min(k, cfg.RAGRecallMax))
	}
	hits, err := a.visible(ctx, in.SiteID, hits)
	if err != nil {
		return SearchResult{}, err
	}
	if len(hits) > 0 {
		if hits, err = a.rerank(ctx, in.TenantID, query, hits); err != nil {
			return SearchResult{}, err
		}
	}
	res := storedResult{Query: query, Passages: mergeByDocument(hits)}
	content, _ := json.Marshal(res)
	if err := a.D.DB.SaveToolResult(ctx, &models.ToolResult{ToolCallID: in.ToolCallID, ThreadID: in.ThreadID, Content: string(content)}); err != nil {
		return SearchResult{}, err
	}
	h := sha256.New()
	out := SearchResult{ToolCallID: in.ToolCallID, ChunkCount: len(hits)}
	for _, p := range res.Passages {
		h.Write([]byte(fmt.Sprintf("%d\x00%s\x00", p.DocumentID, p.Content)))
		out.Sources = append(out.Sources, SourceRef{DocumentID: p.DocumentID, SiteID: p.SiteID, Title: p.Title, Score: p.Score})
	}
	out.Hash = hex.EncodeToString(h.Sum(nil))
	out.ElapsedMS = time.Since(start).Milliseconds()
	return out, nil
}

// fuse merges vector and keyword hits (reciprocal rank fusion), keeping the
// cosine score of vector hits as the displayed score.
func fuse(dense, sparse []vector.Hit, limit int) []vector.Hit {
	type entry struct {
		hit vector.Hit
		rrf float64
	}
	byID := map[string]*entry{}
	var order []string
	add := func(hs []vector.Hit, dense bool) {
		for rank, h := range hs {
			e, ok := byID[h.ChunkID]
			if !ok {
				e = &entry{hit: h}
				if !dense {
					e.hit.Score = 0
				}
				byID[h.ChunkID] = e
				order = append(order, h.ChunkID)
			} else if dense {
				e.hit.Score = h.Score
			}
			e.rrf += 1 / float64(60+rank)
		}
	}
	add(dense, true)
	add(sparse, false)
	sort.SliceStable(order, func(i, j int) bool { return byID[order[i]].rrf > byID[order[j]].rrf })
	if len(order) > limit {
		order = order[:limit]
	}
	out := make([]vector.Hit, len(order))
	for i, id := range order {
		out[i] = byID[id].hit
	}
	return out
}

// visible keeps hits of published, completed documents of the site.
func (a *Chat) visible(ctx context.Context, siteID int64, hits []vector.Hit) ([]vector.Hit, error) {
	if len(hits) == 0 {
		return hits, nil
	}
	ids := make([]int64, 0, len(hits))
	for _, h := range hits {
		ids = append(ids, h.DocumentID)
	}
	ok, err := a.D.DB.SearchableDocuments(ctx, siteID, ids)
	if err != nil {
		return nil, err
	}
	out := hits[:0]
	for _, h := range hits {
		if v, found := ok[h.DocumentID]; found && h.SiteID == siteID && v == h.Version {
			out = append(out, h)
		}
	}
	return out, nil
}

func (a *Chat) rerank(ctx context.Context, tenantID int64, query string, hits []vector.Hit) ([]vector.Hit, error) {
	top := a.D.Cfg.RAGRerankTopK
	if !a.D.Cfg.RAGEnableRerank {
		if len(hits) > top {
			hits = hits[:top]
		}
		return hits, nil
	}
	rr, err := a.D.Reranker(ctx, tenantID)
	if err != nil {
		return nil, temporal.NewNonRetryableApplicationError(err.Error(), "Config", err)
	}
	docs := make([]string, len(hits))
	for i, h := range hits {
		docs[i] = h.Title + "\n" + h.Heading + "\n" + h.Text
	}
	t0 := time.Now()
	ranked, err := rr.Rerank(ctx, query, docs, top)
	a.D.Metrics.ObserveModel("rerank", fmt.Sprintf("%T", rr), time.Since(t0), 0, 0, err)
	if err != nil {
		if errors.Is(err, rerank.ErrPermanent) {
			return nil, temporal.NewNonRetryableApplicationError(err.Error(), "RerankPermanent", err)
		}
		return nil, err
	}
	out := make([]vector.Hit, 0, len(ranked))
	for _, r := range ranked {
		h := hits[r.Index]
		if h.Score == 0 {
			h.Score = float32(r.Score)
		}
		out = append(out, h)
	}
	return out, nil
}

// mergeByDocument groups fragments of one document into one passage (in
// chunk order, separated by FragmentSeparator), ordered by best score.
func mergeByDocument(hits []vector.Hit) []passage {
	var order []int64
	groups := map[int64][]vector.Hit{}
	for _, h := range hits {
		if _, ok := groups[h.DocumentID]; !ok {
			order = append(order, h.DocumentID)
		}
		groups[h.DocumentID] = append(groups[h.DocumentID], h)
	}
	out := make([]passage, 0, len(order))
	for _, id := range order {
		g := groups[id]
		best := g[0].Score
		sort.SliceStable(g, func(i, j int) bool { return g[i].ChunkIndex < g[j].ChunkIndex })
		texts := make([]string, len(g))
		for i, h := range g {
			texts[i] = strings.TrimSpace(h.Text)
		}
		out = append(out, passage{DocumentID: id, SiteID: g[0].SiteID, Title: g[0].Title, Score: float64(best),
			Fragments: len(g), Content: strings.Join(texts, FragmentSeparator)})
	}
	return out
}

// FormatToolResult renders a stored search result for the model, numbering
// passages from start.
func FormatToolResult(stored string, start int) string {
	var r storedResult
	if json.Unmarshal([]byte(stored), &r) != nil || len(r.Passages) == 0 {
		return "No relevant documents found."
	}
	var b strings.Builder
	for i, p := range r.Passages {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "[%d] %s\n%s", start+i, p.Title, p.Content)
	}
	return b.String()
}

// KnowledgeSource is one cited document as the knowledge_sources event and
// the stored final message show it.
type KnowledgeSource struct {
	ID          string  `json:"id"`
	Title       string  `json:"title"`
	SiteID      int64   `json:"siteId"`
	DocumentID  int64   `json:"documentId"`
	Score       float64 `json:"score"`
	SourceIndex int     `json:"sourceIndex"`
}

// PersistInput is a finished turn to store.
type PersistInput struct {
	ThreadID     string
	Turn         int
	Messages     []TurnMessage // assistant and tool messages of the turn, in order
	Final        string        // the answer text shown to the user (with any notice)
	Sources      []KnowledgeSource
	Extra        map[string]any
	ToolElapsed  map[string]int64
	TotalMs      int64
	SourceOffset int
}

// PersistResult tells the run whether summarizing can be skipped.
type PersistResult struct {
	Messages int // the thread's messages after the write (-1: unknown)
}

// Persist writes the assistant turn in the flat OpenAI-style format:
// intermediate assistant rows with tool_calls, tool rows with tool_call_id,
// then the final content row. Idempotent (see db.PersistTurn).
func (a *Chat) Persist(ctx context.Context, in PersistInput) (PersistResult, error) {
	var refs []string
	for _, m := range in.Messages {
		if m.ToolRef {
			refs = append(refs, m.ToolCallID)
		}
	}
	stored, err := a.D.DB.ToolResultContents(ctx, refs)
	if err != nil {
		return PersistResult{Messages: -1}, err
	}
	rows := make([]db.TurnRow, 0, len(in.Messages)+1)
	for _, m := range in.Messages {
		switch {
		case m.Role == llm.RoleAssistant && len(m.ToolCalls) > 0:
			calls := make([]map[string]any, len(m.ToolCalls))
			for i, tc := range m.ToolCalls {
				calls[i] = map[string]any{"id": tc.ID, "type": "function",
					"function": map[string]string{"name": tc.Name, "arguments": tc.Arguments}, "elapsed_ms": in.ToolElapsed[tc.ID]}
			}
			b, _ := json.Marshal(calls)
			rows = append(rows, db.TurnRow{Role: m.Role, Content: m.Content, ToolCalls: string(b)})
		case m.Role == llm.RoleTool:
			content := m.Content
			if m.ToolRef {
				content = FormatToolResult(stored[m.ToolCallID], m.SourceStart)
			}
			if m.Notice != "" {
				content = strings.TrimSpace(content + "\n\n" + m.Notice)
			}
			rows = append(rows, db.TurnRow{Role: m.Role, Content: content, ToolCallID: m.ToolCallID, ElapsedMS: in.ToolElapsed[m.ToolCallID]})
		}
	}
	srcs := in.Sources
	if srcs == nil {
		srcs = []KnowledgeSource{}
	}
	sb, _ := json.Marshal(srcs)
	eb, _ := json.Marshal(in.Extra)
	rows = append(rows, db.TurnRow{Role: llm.RoleAssistant, Content: in.Final, Sources: string(sb), Extra: string(eb), ElapsedMS: in.TotalMs})
	n, err := a.D.DB.PersistTurn(ctx, in.ThreadID, in.Turn, rows, in.SourceOffset)
	return PersistResult{Messages: n}, err
}

// SummarizeInput asks for conversation memory maintenance.
type SummarizeInput struct {
	ThreadID string
	TenantID int64
	Trigger  int
	KeepLast int
}

// Summarize replaces all but the last KeepLast messages with a summary when
// the thread holds more than Trigger non-system messages after the current
// summary; it returns whether it summarized.
func (a *Chat) Summarize(ctx context.Context, in SummarizeInput) (bool, error) {
	conv, err := a.D.DB.LoadContext(ctx, in.ThreadID)
	if err != nil {
		return false, err
	}
	msgs := conv.Messages
	if len(msgs) <= in.Trigger || len(msgs) <= in.KeepLast {
		return false, nil
	}
	cut := len(msgs) - in.KeepLast
	older := msgs[:cut]
	model, _, err := a.D.ChatModel(ctx, in.TenantID)
	if err != nil {
		return false, temporal.NewNonRetryableApplicationError(err.Error(), "Config", err)
	}
	req := llm.Request{Purpose: llm.PurposeSummarize, Messages: []llm.Message{{Role: llm.RoleSystem,
		Content: "Summarize the conversation so far in a few sentences, keeping facts the user may refer to later."}}}
	if conv.Summary != "" {
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleSystem, Content: conv.Summary})
	}
	for _, m := range older {
		if (m.Role == "user" || m.Role == "assistant") && m.Content != "" {
			req.Messages = append(req.Messages, llm.Message{Role: m.Role, Content: m.Content})
		}
	}
	out, err := model.Generate(ctx, req, nil)
	if err != nil {
		return false, err
	}
	return true, a.D.DB.SaveSummary(ctx, in.ThreadID, out.Message.Content, msgs[cut].Position)
}
