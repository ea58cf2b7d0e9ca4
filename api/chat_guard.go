package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/internal/cache"
	"github.com/lorekb/lore/internal/chatbudget"
	"github.com/lorekb/lore/models"
	"go.temporal.io/sdk/client"
)

// Public chat runs on the operator's model key, so what an anonymous caller
// may steer is bounded here, for every entry (responses, completions, the bot
// API and messenger turns alike):
//   - the upstream model is always the tenant's ai-config chat model; a
//     caller's model name is ignored;
//   - caller instructions (instructions, system and developer messages) are
//     dropped unless the site allows them (ee-config chat.caller_instructions),
//     then capped to LORE_CHAT_CALLER_INSTRUCTIONS_MAX characters and placed
//     below Lore's own prompt;
//   - requests are limited per client IP and site and per site
//     (LORE_CHAT_RATE_PER_IP, LORE_CHAT_RATE_PER_SITE per minute; 429 with
//     Retry-After), counted in the cache backend like the login limits;
//   - a site's turns stop for the rest of the UTC day once its chat has used
//     its daily token budget (LORE_CHAT_DAILY_TOKEN_BUDGET, or the site's
//     ee-config chat.daily_token_budget; 429 with Retry-After), and each
//     client turn reserves an estimate of its tokens before its model calls
//     (chatbudget.Reserve), so concurrent or long turns cannot overrun it;
//   - a user message is at most LORE_CHAT_MESSAGE_MAX_CHARS characters and
//     a request's messages together LORE_CHAT_INPUT_MAX_CHARS (422 above),
//     since the model is sent the whole input on every pass of a turn.

// chatRateWindow is the window of the chat request limits.
const chatRateWindow = time.Minute

// siteChatSettings is the chat entry of a site's bot_config, managed by
// ee-config.
type siteChatSettings struct {
	CallerInstructions bool `json:"caller_instructions"`
	// DailyTokenBudget: nil is the server default, 0 no budget.
	DailyTokenBudget *int64 `json:"daily_token_budget,omitempty"`
}

func readChatSettings(st *models.Site) siteChatSettings {
	var out siteChatSettings
	if raw, ok := botConfigMap(st.BotConfig)["chat"]; ok {
		enc, _ := json.Marshal(raw)
		_ = json.Unmarshal(enc, &out)
	}
	return out
}

// dailyTokenBudget is the site's budget (0: none).
func (s *Server) dailyTokenBudget(st *models.Site) int64 {
	if b := readChatSettings(st).DailyTokenBudget; b != nil {
		return max(*b, 0)
	}
	return max(s.d.Cfg.ChatDailyTokenBudget, 0)
}

// guardTurn applies the model and instruction rules to a turn.
func (s *Server) guardTurn(t *chatTurn) {
	t.Model = ""
	limit := s.d.Cfg.ChatCallerInstructionsMax
	switch {
	case limit <= 0 || t.Site == nil || !readChatSettings(t.Site).CallerInstructions:
		t.Instructions = ""
	case utf8.RuneCountInString(t.Instructions) > limit:
		t.Instructions = string([]rune(t.Instructions)[:limit])
	}
}

// chatRateLimit counts one chat request of the caller against the limits
// of its IP and of the site, then checks the site's daily token budget.
func (s *Server) chatRateLimit(c *fiber.Ctx, site *models.Site) error {
	wait, err := s.siteRateLimit(c.UserContext(), "chat", s.clientIP(c), site)
	if err != nil {
		return err
	}
	if wait > 0 {
		return tooManyAttempts(c, wait, "chat requests")
	}
	return s.chatBudget(c, site)
}

// siteRateLimit counts one request of kind ("chat": a chat turn) from the
// client address ip against the per-IP and per-site limits of the site's
// chat (LORE_CHAT_RATE_PER_IP, LORE_CHAT_RATE_PER_SITE per minute) and
// returns how long the caller must wait (0: go ahead).
func (s *Server) siteRateLimit(ctx context.Context, kind, ip string, site *models.Site) (time.Duration, error) {
	site64 := strconv.FormatInt(site.ID, 10)
	if site.ID == 0 { // a turn of no site (chatScope) counts against its tenant
		site64 = "t" + strconv.FormatInt(site.TenantID, 10)
	}
	for _, l := range []struct {
		lim attemptLimit
		key string
	}{
		{attemptLimit{name: kind + "-ip", max: int64(max(s.d.Cfg.ChatRatePerIP, 1)), window: chatRateWindow}, ip + "|" + site64},
		{attemptLimit{name: kind + "-site", max: int64(max(s.d.Cfg.ChatRatePerSite, 1)), window: chatRateWindow}, site64},
	} {
		wait, err := s.reserve(ctx, l.lim, l.key)
		if err != nil || wait > 0 {
			return wait, err
		}
	}
	return 0, nil
}

// errBudgetSpent refuses a turn of a site whose chat has used its daily
// token budget.
var errBudgetSpent = Errf(http.StatusTooManyRequests, "this site's chat has used its daily token budget; try again after 00:00 UTC")

// chatBudget refuses a turn of a site whose chat has used its daily token
// budget, until the next UTC midnight (a turn of no site: its tenant's
// chats of no site, under the server default).
func (s *Server) chatBudget(c *fiber.Ctx, site *models.Site) error {
	spent, err := s.budgetSpent(c.UserContext(), site)
	if err != nil || !spent {
		return err
	}
	c.Set(fiber.HeaderRetryAfter, strconv.Itoa(int(chatbudget.UntilReset(time.Now())/time.Second)+1))
	return errBudgetSpent
}

// budgetSpent: the site has a daily token budget and its chat has used it
// today (UTC).
func (s *Server) budgetSpent(ctx context.Context, site *models.Site) (bool, error) {
	budget := s.dailyTokenBudget(site)
	if budget <= 0 {
		return false, nil
	}
	used, err := s.tokensUsedToday(ctx, site, time.Now())
	return err == nil && used >= budget, err
}

// tokensUsedToday is the chat tokens counted today (UTC) for the site, or
// for its tenant when it is the no-site scope of chatScope (ID 0).
func (s *Server) tokensUsedToday(ctx context.Context, site *models.Site, now time.Time) (int64, error) {
	ctr, ok := s.d.Cache.(cache.Counter)
	if !ok {
		return 0, nil
	}
	return chatbudget.Used(ctx, ctr, chatbudget.Scope(site.ID, site.TenantID), now)
}

// chatMessage is one message of a chat request, for the size checks.
type chatMessage struct {
	Role string
	Text string
}

// checkChatInput refuses (422, naming field) a request whose user message is
// over LORE_CHAT_MESSAGE_MAX_CHARS characters, or whose messages together
// (every role: the whole input or messages array) are over
// LORE_CHAT_INPUT_MAX_CHARS.
func (s *Server) checkChatInput(field string, msgs []chatMessage) error {
	perMsg, total := s.d.Cfg.ChatMessageMaxChars, s.d.Cfg.ChatInputMaxChars
	sum := 0
	for i, m := range msgs {
		n := utf8.RuneCountInString(m.Text)
		if perMsg > 0 && m.Role == "user" && n > perMsg {
			where := field
			if len(msgs) > 1 || field == "messages" {
				where = field + "[" + strconv.Itoa(i) + "]"
			}
			return Invalid("%s: a user message may have at most %d characters (this one has %d)", where, perMsg, n)
		}
		sum += n
	}
	if total > 0 && sum > total {
		return Invalid("%s: the messages may have at most %d characters together (these have %d)", field, total, sum)
	}
	return nil
}

// turnPromptChars is the characters a turn sends the model as its prompt
// (user message, history, instructions), for its budget estimate.
func turnPromptChars(t *chatTurn) int {
	n := utf8.RuneCountInString(t.Text) + utf8.RuneCountInString(t.Instructions)
	for _, m := range t.History {
		n += utf8.RuneCountInString(m.Content)
	}
	return n
}

// reserveTurnBudget reserves the estimated tokens of a client turn against
// its site's daily budget (see chatbudget.Reserve); a turn that would take
// the count past the budget is 429. Messenger turns (Reply set) count
// against the budget when stored but are not refused, so they reserve
// nothing; nor does a site without a budget or a cache without counters.
func (s *Server) reserveTurnBudget(ctx context.Context, t *chatTurn) (chatbudget.Reservation, error) {
	budget := s.dailyTokenBudget(t.Site)
	ctr, ok := s.d.Cache.(cache.Counter)
	if t.Reply != nil || budget <= 0 || !ok {
		return chatbudget.Reservation{}, nil
	}
	est := chatbudget.Estimate(turnPromptChars(t), s.d.Cfg.AgentMaxIterations+1)
	r, ok, err := chatbudget.Reserve(ctx, ctr, chatbudget.Scope(t.Site.ID, t.Site.TenantID), est, budget, time.Now())
	if err != nil {
		return chatbudget.Reservation{}, err
	}
	if !ok {
		return chatbudget.Reservation{}, errTurnOverBudget
	}
	return r, nil
}

// errTurnOverBudget refuses a turn whose reservation does not fit the
// site's budget; budgetRetryAfter gives it its Retry-After.
var errTurnOverBudget = Errf(http.StatusTooManyRequests,
	"this site's chat has used its daily token budget (with the turns in progress); try again after 00:00 UTC")

// budgetRetryAfter sets Retry-After (seconds to 00:00 UTC) when err is the
// refusal of reserveTurnBudget, and returns err.
func budgetRetryAfter(c *fiber.Ctx, err error) error {
	if err == errTurnOverBudget {
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(int(chatbudget.UntilReset(time.Now())/time.Second)+1))
	}
	return err
}

// releaseTurnBudget gives a reservation back.
func (s *Server) releaseTurnBudget(r chatbudget.Reservation) {
	if r.Tokens() == 0 {
		return
	}
	ctr, ok := s.d.Cache.(cache.Counter)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.Release(ctx, ctr); err != nil {
		s.log.Warn("release a chat turn's token reservation", "err", err)
	}
}

// releaseAfterRun gives a launched turn's reservation back once its run has
// ended, which is after the run stored the turn and counted its real usage.
// A run that outlives the wait (the stream deadline and two minutes) is
// released then; a process that stops first leaves the reservation counted
// until the day's count expires.
func (s *Server) releaseAfterRun(tc client.Client, wfID string, r chatbudget.Reservation) {
	if r.Tokens() == 0 {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.d.Cfg.ChatStreamTimeout()+2*time.Minute)
		defer cancel()
		_ = tc.GetWorkflow(ctx, wfID, "").Get(ctx, nil)
		s.releaseTurnBudget(r)
	}()
}
