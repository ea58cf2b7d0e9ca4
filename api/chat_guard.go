package api

import (
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/models"
)

// Public chat runs on the operator's model key, so what an anonymous caller
// may steer is bounded here, for every entry (responses, completions, the bot
// API and messenger turns alike):
//   - the upstream model is always the tenant's ai-config chat model; a
//     caller's model name is ignored;
//   - caller instructions (instructions, system and developer messages) are
//     dropped unless LORE_CHAT_CALLER_INSTRUCTIONS_MAX allows them, then
//     capped to that many characters and placed below Lore's own prompt;
//   - requests are limited per client IP and site and per site
//     (LORE_CHAT_RATE_PER_IP, LORE_CHAT_RATE_PER_SITE per minute; 429 with
//     Retry-After), counted in the cache backend like the login limits.

// chatRateWindow is the window of the chat request limits.
const chatRateWindow = time.Minute

// guardTurn applies the model and instruction rules to a turn.
func (s *Server) guardTurn(t *chatTurn) {
	t.Model = ""
	limit := s.d.Cfg.ChatCallerInstructionsMax
	switch {
	case limit <= 0:
		t.Instructions = ""
	case utf8.RuneCountInString(t.Instructions) > limit:
		t.Instructions = string([]rune(t.Instructions)[:limit])
	}
}

// chatRateLimit counts one chat request of the caller against the limits
// of its IP and of the site.
func (s *Server) chatRateLimit(c *fiber.Ctx, site *models.Site) error {
	site64 := strconv.FormatInt(site.ID, 10)
	if site.ID == 0 { // a turn of no site (chatScope) counts against its tenant
		site64 = "t" + strconv.FormatInt(site.TenantID, 10)
	}
	for _, l := range []struct {
		lim attemptLimit
		key string
	}{
		{attemptLimit{name: "chat-ip", max: int64(max(s.d.Cfg.ChatRatePerIP, 1)), window: chatRateWindow}, c.IP() + "|" + site64},
		{attemptLimit{name: "chat-site", max: int64(max(s.d.Cfg.ChatRatePerSite, 1)), window: chatRateWindow}, site64},
	} {
		wait, err := s.reserve(c.UserContext(), l.lim, l.key)
		if err != nil {
			return err
		}
		if wait > 0 {
			return tooManyAttempts(c, wait, "chat requests")
		}
	}
	return nil
}
