package api

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/google/uuid"
	"github.com/lorekb/lore/internal/chatevent"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/models"
	"github.com/lorekb/lore/workflows"
)

// ChatCompletionRequest is the chat-completions request: the OpenAI request
// (strict: fields OpenAI does not define are refused), plus the extensions
// filter and include_internal_events. Lore answers with its own tools and
// model settings: the client's tools, tool_choice, response format, logit
// bias, log probabilities and the like are accepted and ignored. Before
// decoding, the string "[undefined]" stands for an absent value and
// serviceTier is an alias of service_tier (openAIBody).
type ChatCompletionRequest struct {
	Model         string                  `json:"model" validate:"max=200"`
	Messages      []ChatCompletionMessage `json:"messages" validate:"required,min=1,max=500,dive"`
	Stream        bool                    `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Temperature           *float64          `json:"temperature" validate:"omitempty,min=0,max=2"`
	TopP                  *float64          `json:"top_p"`
	MaxTokens             *int              `json:"max_tokens"`
	MaxCompletionTokens   *int              `json:"max_completion_tokens"`
	N                     *int              `json:"n" validate:"omitempty,eq=1"`
	Stop                  json.RawMessage   `json:"stop"`
	PresencePenalty       *float64          `json:"presence_penalty"`
	FrequencyPenalty      *float64          `json:"frequency_penalty"`
	User                  string            `json:"user" validate:"max=64"`
	Seed                  *int64            `json:"seed"`
	Metadata              map[string]string `json:"metadata"`
	ServiceTier           *string           `json:"service_tier"`
	Store                 *bool             `json:"store"`
	Filter                *ChatFilter       `json:"filter"`
	IncludeInternalEvents *bool             `json:"include_internal_events"`
	// Accepted and ignored (see the type's comment).
	Tools             json.RawMessage `json:"tools"`
	ToolChoice        json.RawMessage `json:"tool_choice"`
	ParallelToolCalls json.RawMessage `json:"parallel_tool_calls"`
	Functions         json.RawMessage `json:"functions"`
	FunctionCall      json.RawMessage `json:"function_call"`
	ResponseFormat    json.RawMessage `json:"response_format"`
	LogitBias         json.RawMessage `json:"logit_bias"`
	Logprobs          json.RawMessage `json:"logprobs"`
	TopLogprobs       json.RawMessage `json:"top_logprobs"`
	ReasoningEffort   json.RawMessage `json:"reasoning_effort"`
	Modalities        json.RawMessage `json:"modalities"`
	Audio             json.RawMessage `json:"audio"`
	Prediction        json.RawMessage `json:"prediction"`
	WebSearchOptions  json.RawMessage `json:"web_search_options"`
	Verbosity         json.RawMessage `json:"verbosity"`
	PromptCacheKey    json.RawMessage `json:"prompt_cache_key"`
	SafetyIdentifier  json.RawMessage `json:"safety_identifier"`
}

// openAIBody applies the conventions of OpenAI clients to a request body:
// a value that is the string "[undefined]" (at any depth) is absent, and a
// top-level serviceTier is service_tier. A body that is not a JSON object
// comes back unchanged, for the strict decoder to name the problem.
func openAIBody(raw []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil || dec.More() {
		return raw
	}
	changed := dropUndefined(m)
	if v, ok := m["serviceTier"]; ok {
		if _, dup := m["service_tier"]; !dup {
			m["service_tier"] = v
		}
		delete(m, "serviceTier")
		changed = true
	}
	if !changed {
		return raw
	}
	b, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return b
}

// dropUndefined removes "[undefined]" values from objects under v and
// reports whether it removed any.
func dropUndefined(v any) bool {
	changed := false
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if e == "[undefined]" {
				delete(x, k)
				changed = true
			} else if dropUndefined(e) {
				changed = true
			}
		}
	case []any:
		for _, e := range x {
			if dropUndefined(e) {
				changed = true
			}
		}
	}
	return changed
}

// ChatCompletionMessage is one message of the request.
type ChatCompletionMessage struct {
	Role       string          `json:"role" validate:"required,oneof=system developer user assistant tool"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCalls  json.RawMessage `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

// CompletionsQuery lets callers pick the site by query parameter.
type CompletionsQuery struct {
	SiteID int64 `query:"site_id" validate:"min=0"`
}

// ModelList is the result of GET /bot/models.
type ModelList struct {
	Object string      `json:"object"`
	Data   []ModelInfo `json:"data"`
}

// ModelInfo is one model of the list.
type ModelInfo struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func (s *Server) completionRoutes() []Route {
	return []Route{
		{Surface: Client, Method: http.MethodPost, Path: "/chat/completions", Tag: "chat", Perm: Public, Raw: "text/event-stream",
			Summary:     "OpenAI-compatible chat completions over the same chat core (site by filter.site_id, metadata.site_id or ?site_id=)",
			Description: "Set include_internal_events to receive tool and source events as extra data lines without choices. " + chatSecretGivenDoc,
			Query:       CompletionsQuery{}, Body: ChatCompletionRequest{}, Handler: openAIErrors(s.streamSetup(completionsStream, s.chatCompletions))},
		{Surface: Client, Method: http.MethodPost, Path: "/bot/chat/completions", Tag: "bot", Perm: Public, Raw: "text/event-stream",
			Summary: "EE: site chat completions with Authorization: Bearer <site API key>", Body: ChatCompletionRequest{}, Handler: openAIErrors(s.streamSetup(completionsStream, s.botChatCompletions))},
		{Surface: Client, Method: http.MethodGet, Path: "/bot/models", Tag: "bot", Perm: Public,
			Summary: "EE: models available to the site (API key optional)", Raw: "application/json", Handler: openAIErrors(s.botModels)},
	}
}

// HashAPIKey is how site API keys are stored and looked up.
func HashAPIKey(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:])
}

// siteFromAPIKey resolves the bearer site API key; required says whether a
// missing key is an error.
func (s *Server) siteFromAPIKey(c *fiber.Ctx, required bool) (*models.Site, error) {
	key, found := strings.CutPrefix(c.Get(fiber.HeaderAuthorization), "Bearer ")
	key = strings.TrimSpace(key)
	if !found || key == "" {
		if required {
			return nil, Errf(http.StatusUnauthorized, "a site API key is required (Authorization: Bearer <API_KEY>)")
		}
		return nil, nil
	}
	site, err := s.d.DB.SiteByAPIKeyHash(c.UserContext(), HashAPIKey(key))
	if errors.Is(err, db.ErrNotFound) {
		return nil, Errf(http.StatusUnauthorized, "invalid or revoked API key")
	}
	if err != nil {
		return nil, err
	}
	if site.Status != models.SiteActive || site.Deleting {
		return nil, NotFound("site")
	}
	return site, nil
}

func (s *Server) chatCompletions(c *fiber.Ctx) error {
	var q CompletionsQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	var req ChatCompletionRequest
	if err := bindJSONBody(openAIBody(c.Body()), &req); err != nil {
		return err
	}
	siteID := q.SiteID
	if req.Filter != nil && req.Filter.SiteID != nil {
		siteID = *req.Filter.SiteID
	}
	if v := req.Metadata["site_id"]; siteID == 0 && v != "" {
		if _, err := fmt.Sscan(v, &siteID); err != nil {
			return Invalid("metadata.site_id: must be an integer")
		}
	}
	if siteID == 0 {
		return Invalid("site_id: field required (filter.site_id, metadata.site_id or ?site_id=)")
	}
	site, err := s.clientSite(c, siteID)
	if err != nil {
		return err
	}
	return s.completions(c, site, req, "api")
}

func (s *Server) botChatCompletions(c *fiber.Ctx) error {
	site, err := s.siteFromAPIKey(c, true)
	if err != nil {
		return err
	}
	var req ChatCompletionRequest
	if err := bindJSONBody(openAIBody(c.Body()), &req); err != nil {
		return err
	}
	return s.completions(c, site, req, "bot_api")
}

func (s *Server) botModels(c *fiber.Ctx) error {
	site, err := s.siteFromAPIKey(c, false)
	if err != nil {
		return err
	}
	tenant := int64(1)
	if site != nil {
		tenant = site.TenantID
	}
	ai, err := s.d.AIConfig(c.UserContext(), tenant)
	if err != nil {
		return err
	}
	id := ai.Chat.Model
	if id == "" {
		id = ai.Chat.Provider
	}
	return c.JSON(ModelList{Object: "list", Data: []ModelInfo{{ID: id, Object: "model", Created: time.Now().Unix(), OwnedBy: "lore"}}})
}

// completions runs one turn from chat-completion messages: system messages
// become instructions, earlier user/assistant messages seed a new thread,
// the last user message is the input.
func (s *Server) completions(c *fiber.Ctx, site *models.Site, req ChatCompletionRequest, source string) error {
	msgs := make([]chatMessage, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = chatMessage{Role: m.Role, Text: contentText(m.Content)}
	}
	if err := s.checkChatInput("messages", msgs); err != nil {
		return err
	}
	if err := s.chatRateLimit(c, site); err != nil {
		return err
	}
	var instructions []string
	var hist []db.HistoryMessage
	last := -1
	for i, m := range req.Messages {
		if m.Role == "user" {
			last = i
		}
	}
	if last < 0 {
		return Invalid("messages: no user message")
	}
	for i, m := range req.Messages[:last] {
		text := contentText(m.Content)
		switch m.Role {
		case "system", "developer":
			instructions = append(instructions, text)
		case "user", "assistant":
			if text != "" {
				hist = append(hist, db.HistoryMessage{Role: m.Role, Content: text})
			}
		}
		_ = i
	}
	text := contentText(req.Messages[last].Content)
	if strings.TrimSpace(text) == "" {
		return Invalid("messages: the last user message is empty")
	}
	owner, err := chatOwnerOf(c)
	if err != nil {
		return err
	}
	turn := chatTurn{Site: site, MemberID: req.User, OwnerHash: owner.hash, OwnerMemberHash: memberOwnerHash(req.User), Source: source, Text: text,
		History: hist, Instructions: strings.Join(instructions, "\n\n"), Model: req.Model, Temperature: req.Temperature}
	if !req.Stream {
		st, err := s.startChatTurn(c.UserContext(), turn)
		if err != nil {
			return budgetRetryAfter(c, err)
		}
		s.giveChatSecret(c, owner)
		return s.completionJSON(c, st, "chatcmpl-"+uuid.NewString(), st.CreatedAt.Unix())
	}
	id := "chatcmpl-" + uuid.NewString()
	st, err := s.prepareChatTurn(c.UserContext(), turn)
	if err != nil {
		return budgetRetryAfter(c, err) // streamed as one warning chunk (streamSetup)
	}
	s.giveChatSecret(c, owner)
	ch := chunker{id: id, model: st.Model, created: st.CreatedAt.Unix()}
	internal := req.IncludeInternalEvents != nil && *req.IncludeInternalEvents
	// The usage chunk goes out when the client asks for it, and on sites
	// that show their pipeline trace (SPEC "Retrieval and chat behaviour" 9).
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage || site.ShowPipelineTrace
	var usage map[string]int
	s.pumpSSE(c, st.WorkflowID, 0, st.launch, func(w *bufio.Writer, ev *workflows.ChatEvent, done bool) {
		switch {
		case ev == nil && !done:
			writeSSE(w, 0, "", ch.chunk("", map[string]any{"role": "assistant", "content": ""}, nil))
		case ev != nil:
			if line := completionLine(ev.Data, ch, internal, &usage); line != nil {
				writeSSE(w, 0, "", line)
			}
		case done:
			writeSSE(w, 0, "", ch.chunk("", map[string]any{}, "stop"))
			if includeUsage && usage != nil {
				b, _ := json.Marshal(map[string]any{"id": id, "object": "chat.completion.chunk", "created": ch.created,
					"model": ch.model, "choices": []any{}, "usage": usage})
				writeSSE(w, 0, "", b)
			}
			writeSSE(w, 0, "", sseDone)
		}
	}, func(w *bufio.Writer, err error) {
		writeSSE(w, 0, "", ch.chunk("error", map[string]any{"content": "⚠️ " + s.streamFailure(err)}, "stop"))
		writeSSE(w, 0, "", sseDone)
	})
	return nil
}

// chunker writes the chat-completion chunks of one answer.
type chunker struct {
	id      string
	model   string
	created int64
}

// chunk is one chunk; kind "" uses the answer's id, "error" and "timeout"
// a chunk of their own ("error-<uuid>", "timeout-<uuid>", as WIRE §4).
func (ch chunker) chunk(kind string, delta map[string]any, finish any) []byte {
	id := ch.id
	if kind != "" {
		id = kind + "-" + uuid.NewString()
	}
	b, _ := json.Marshal(map[string]any{"id": id, "object": "chat.completion.chunk", "created": ch.created, "model": ch.model,
		"choices": []map[string]any{{"index": 0, "delta": delta, "finish_reason": finish}}})
	return b
}

// completionLine translates one Responses-style event into a chat-completion
// data line (nil when the event has no counterpart). Internal events are
// written as Python's json.dumps writes them (WIRE §4).
func completionLine(data []byte, ch chunker, internal bool, usage *map[string]int) []byte {
	var e struct {
		chatevent.Parsed
		Sources json.RawMessage `json:"sources"`
		Trace   json.RawMessage `json:"trace"`
	}
	if json.Unmarshal(data, &e) != nil {
		return nil
	}
	switch e.Type {
	case chatevent.TypeTextDelta:
		switch {
		case e.Delta == workflows.TimeoutNotice:
			return ch.chunk("timeout", map[string]any{"content": e.Delta}, "stop")
		case strings.HasPrefix(e.Delta, workflows.ErrorNoticePrefix):
			return ch.chunk("error", map[string]any{"content": e.Delta}, "stop")
		}
		return ch.chunk("", map[string]any{"content": e.Delta}, nil)
	case chatevent.TypeCompleted:
		if u := e.Response.Usage; u != nil {
			*usage = map[string]int{"prompt_tokens": u.InputTokens, "completion_tokens": u.OutputTokens, "total_tokens": u.TotalTokens}
		}
	}
	if !internal {
		return nil
	}
	var raw map[string]json.RawMessage
	_ = json.Unmarshal(data, &raw)
	var out []kv
	switch e.Type {
	case chatevent.TypeToolCallStarted:
		out = []kv{{"status", json.RawMessage(`"tool_calling"`)}, {"tool", raw["tool"]}}
	case chatevent.TypeToolCallCompleted:
		out = []kv{{"status", json.RawMessage(`"tool_completed"`)}}
		for _, k := range []string{"tool", "tool_call_id", "chunk_count", "elapsed_ms"} {
			if v, ok := raw[k]; ok {
				out = append(out, kv{k, v})
			}
		}
	case chatevent.TypeKnowledgeSources:
		out = []kv{{"sources", e.Sources}}
	case chatevent.TypePipelineTrace:
		out = []kv{{"pipeline_trace", e.Trace}}
	default:
		return nil
	}
	return pyDumps(out)
}

// kv is one member of an object written in order.
type kv struct {
	key string
	val json.RawMessage
}

// pyDumps writes an object the way Python's json.dumps does by default:
// members in the given order, ", " and ": " between items (also inside the
// values), and every character outside ASCII escaped as \uXXXX (UTF-16).
func pyDumps(obj []kv) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range obj {
		if i > 0 {
			b.WriteString(", ")
		}
		k, _ := json.Marshal(m.key)
		pyValue(&b, k)
		b.WriteString(": ")
		pyValue(&b, m.val)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// htmlEscapes are the escapes Go's encoder writes and json.dumps does not.
var htmlEscapes = map[string]byte{`\u003c`: '<', `\u003e`: '>', `\u0026`: '&'}

// pyValue copies compact JSON into b with json.dumps' separators and ASCII
// escaping.
func pyValue(b *bytes.Buffer, v json.RawMessage) {
	var compact bytes.Buffer
	if json.Compact(&compact, v) != nil {
		b.WriteString("null")
		return
	}
	in := compact.Bytes()
	inString := false
	for i := 0; i < len(in); {
		c := in[i]
		switch {
		case inString && c == '\\':
			// Go writes <, > and & as \u003c, \u003e and \u0026; json.dumps
			// writes them as they are.
			if lit, ok := htmlEscapes[string(in[i:min(i+6, len(in))])]; ok {
				b.WriteByte(lit)
				i += 6
				continue
			}
			b.Write(in[i : i+2])
			i += 2
			continue
		case c == '"':
			inString = !inString
		case !inString && (c == ',' || c == ':'):
			b.WriteByte(c)
			b.WriteByte(' ')
			i++
			continue
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(in[i:])
			if r >= 0x10000 {
				r1, r2 := utf16.EncodeRune(r)
				fmt.Fprintf(b, "\\u%04x\\u%04x", r1, r2)
			} else {
				fmt.Fprintf(b, "\\u%04x", r)
			}
			i += n
			continue
		}
		b.WriteByte(c)
		i++
	}
}

// completionJSON waits for the run's last event and returns a
// chat.completion object.
func (s *Server) completionJSON(c *fiber.Ctx, st *startedTurn, id string, created int64) error {
	a, err := s.collectAnswer(c, st)
	if err != nil {
		return err
	}
	var usage map[string]int
	if u := a.usage; u != nil {
		usage = map[string]int{"prompt_tokens": u.InputTokens, "completion_tokens": u.OutputTokens, "total_tokens": u.TotalTokens}
	}
	return c.JSON(map[string]any{"id": id, "object": "chat.completion", "created": created, "model": st.Model,
		"choices": []map[string]any{{"index": 0, "message": map[string]any{"role": "assistant", "content": a.text.String()},
			"finish_reason": "stop"}}, "usage": usage, "sources": a.sourceList()})
}
