package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/activities"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/internal/msgr"
	"github.com/lorekb/lore/internal/telemetry"
	"github.com/lorekb/lore/models"
	"github.com/lorekb/lore/workflows"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// BotWebhookQuery is the query of the messenger callbacks (WIRE.md §5).
type BotWebhookQuery struct {
	MsgSignature string `query:"msg_signature" doc:"SHA-1 signature over token, timestamp, nonce and the encrypted payload" validate:"max=128"`
	Timestamp    string `query:"timestamp" doc:"Unix seconds; must lie within MESSENGER_REPLAY_WINDOW of now" validate:"max=32"`
	Nonce        string `query:"nonce" validate:"max=128"`
	SiteID       *int64 `query:"site_id" doc:"the site whose tenant's bot-config holds the channel settings" validate:"required"`
	Echostr      string `query:"echostr" doc:"encrypted echo string (GET URL verification only)" validate:"max=8192"`
}

// Plain-text bodies of the callbacks.
const (
	botAck          = "success"
	botVerifyFailed = "verification failed"
)

func (s *Server) botWebhookRoutes() []Route {
	endpoints := []struct{ path, channel, name string }{
		{"/bot/wecom-kefu", activities.ChannelKefu, "customer-service (kefu)"},
		{"/bot/msgr-kefu", activities.ChannelKefu, "customer-service (kefu)"},
		{"/bot/wecom-app", activities.ChannelApp, "application"},
		{"/bot/msgr-app", activities.ChannelApp, "application"},
	}
	var out []Route
	for _, e := range endpoints {
		out = append(out,
			Route{Surface: Client, Method: http.MethodGet, Path: e.path, Tag: "bot", Perm: Public, Raw: "text/plain",
				Query: BotWebhookQuery{}, Handler: s.botVerify(e.channel),
				Summary: "URL verification of the " + e.name + " bot channel: answers the decrypted echostr",
				Description: "400 text/plain `verification failed` on a bad signature, corp id or timestamp. " +
					"Configuration problems are enveloped: unknown site 404, channel disabled 403, incomplete settings 400."},
			Route{Surface: Client, Method: http.MethodPost, Path: e.path, Tag: "bot", Perm: Public, Raw: "text/plain",
				Query: BotWebhookQuery{}, Handler: s.botCallback(e.channel), MaxBody: s.messengerBodyMax(),
				Summary: "Message callback of the " + e.name + " bot channel (encrypted XML body); answers `success`",
				Description: "The body is `<xml><Encrypt>…</Encrypt></xml>`. A bad signature, decryption or XML gives 400 " +
					"with an empty body, a stale timestamp 400, a body over MESSENGER_MAX_BODY_BYTES 413. An accepted " +
					"message is answered `success` at once; the answer is pushed through the messenger API when the " +
					"chat run ends. Redelivered message ids are acknowledged and ignored."})
	}
	return out
}

// botPlain writes a text/plain response.
func botPlain(c *fiber.Ctx, status int, body string) error {
	c.Set(fiber.HeaderContentType, fiber.MIMETextPlainCharsetUTF8)
	return c.Status(status).SendString(body)
}

// botAccept acknowledges a callback.
func botAccept(c *fiber.Ctx) error { return botPlain(c, http.StatusOK, botAck) }

// botEndpoint is a callback's resolved configuration.
type botEndpoint struct {
	site    *models.Site
	channel string
	cfg     *deps.MessengerChannel
	crypto  *msgr.Crypto
}

// bindBotQuery reads and validates the callback query.
func bindBotQuery(c *fiber.Ctx) (BotWebhookQuery, error) {
	var q BotWebhookQuery
	if err := bindQuery(c, &q); err != nil {
		return q, err
	}
	if *q.SiteID < 1 {
		return q, Invalid("site_id: must be at least 1")
	}
	return q, nil
}

// botChannel resolves the configuration of a callback: the active site and
// the channel from the site's own bot_config or else its tenant's bot-config
// (MessengerChannelFor), which must be enabled for the site and complete. Every configuration problem is a 4xx envelope, never a 500.
func (s *Server) botChannel(c *fiber.Ctx, channel string, siteID int64) (*botEndpoint, error) {
	ctx := c.UserContext()
	site, err := s.d.DB.GetSite(ctx, siteID)
	if errors.Is(err, db.ErrNotFound) || (err == nil && (site.Status != models.SiteActive || site.Deleting)) {
		return nil, NotFound("site")
	}
	if err != nil {
		return nil, err
	}
	cfg, err := s.d.BotConfig(ctx, site.TenantID)
	if err != nil {
		var synErr *json.SyntaxError
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &synErr) || errors.As(err, &typeErr) {
			return nil, BadRequest("the stored bot-config is not valid: %v", err)
		}
		return nil, err
	}
	ch, err := activities.MessengerChannelFor(&cfg, channel, site)
	switch {
	case errors.Is(err, activities.ErrChannelDisabled):
		return nil, Errf(http.StatusForbidden, "the %s bot integration is not enabled", channel)
	case errors.Is(err, activities.ErrChannelNotForSite):
		return nil, Errf(http.StatusForbidden, "the %s bot integration is not enabled for site %d", channel, site.ID)
	case err != nil:
		return nil, BadRequest("%v", err)
	}
	if ch.Token == "" || ch.EncodingAESKey == "" || ch.CorpID == "" {
		return nil, BadRequest("the %s bot configuration is incomplete: token, encoding_aes_key and corp_id are required", channel)
	}
	cr, err := msgr.NewCrypto(ch.Token, ch.EncodingAESKey, ch.CorpID)
	if err != nil {
		return nil, BadRequest("the %s bot configuration is invalid: %v", channel, err)
	}
	return &botEndpoint{site: site, channel: channel, cfg: ch, crypto: cr}, nil
}

// botVerify answers the GET URL-verification handshake with the decrypted
// echostr.
func (s *Server) botVerify(channel string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		q, err := bindBotQuery(c)
		if err != nil {
			return err
		}
		ep, err := s.botChannel(c, channel, *q.SiteID)
		if err != nil {
			return err
		}
		if err := msgr.CheckTimestamp(q.Timestamp, time.Now(), s.d.Cfg.MessengerReplayWindow); err != nil {
			s.log.Info("bot verification refused", "channel", channel, "site_id", ep.site.ID, "err", err)
			return botPlain(c, http.StatusBadRequest, botVerifyFailed)
		}
		plain, err := ep.crypto.VerifyURL(q.MsgSignature, q.Timestamp, q.Nonce, q.Echostr)
		if err != nil {
			s.log.Info("bot verification refused", "channel", channel, "site_id", ep.site.ID, "err", err)
			return botPlain(c, http.StatusBadRequest, botVerifyFailed)
		}
		return botPlain(c, http.StatusOK, string(plain))
	}
}

// botCallback handles a POST message callback: size and replay checks
// before anything is parsed, then signature, decryption and safe XML, then
// the channel's message handling.
func (s *Server) botCallback(channel string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		q, err := bindBotQuery(c)
		if err != nil {
			return err
		}
		body := c.Body() // read within messengerBodyMax by limitBody
		if err := msgr.CheckTimestamp(q.Timestamp, time.Now(), s.d.Cfg.MessengerReplayWindow); err != nil {
			s.log.Info("bot callback refused", "channel", channel, "err", err)
			return botPlain(c, http.StatusBadRequest, "")
		}
		ep, err := s.botChannel(c, channel, *q.SiteID)
		if err != nil {
			return err
		}
		inner, replayKey, err := ep.crypto.OpenEnvelope(q.MsgSignature, q.Timestamp, q.Nonce, body)
		if err != nil {
			s.log.Info("bot callback refused", "channel", channel, "site_id", ep.site.ID, "err", err)
			return botPlain(c, http.StatusBadRequest, "")
		}
		// A message without MsgId is identified by its signed parts only.
		c.Locals(botEnvelopeKey, "env-"+replayKey)
		if channel == activities.ChannelKefu {
			return s.botKefuMessage(c, ep, inner)
		}
		return s.botAppMessage(c, ep, inner)
	}
}

// botEnvelopeKey holds the hash of a callback's signed envelope.
const botEnvelopeKey = "bot_envelope"

// botMsgID is the message id, or the envelope hash for a message without one.
func botMsgID(c *fiber.Ctx, msgID string) string {
	if msgID != "" {
		return msgID
	}
	env, _ := c.Locals(botEnvelopeKey).(string)
	return env
}

// botMark records a message id as processed; it reports false for a
// redelivery. A message without an id is known by its signed envelope (see
// botMsgID), so a replay of it within the window runs once.
func (s *Server) botMark(c *fiber.Ctx, ep *botEndpoint, msgID string) (bool, error) {
	msgID = botMsgID(c, msgID)
	return s.d.DB.MarkMessageProcessed(c.UserContext(), ep.channel, activities.MessengerMsgKey(ep.cfg.CorpID, msgID))
}

// botStart starts the chat turn of an accepted text message in the
// sender's thread (found by the sender's channel ids) and acknowledges it.
// When the turn cannot start because of an outage the processed mark is
// removed and the error returned, so the platform's redelivery gets
// another chance; a turn that can never start (no chat model configured)
// is acknowledged and logged.
func (s *Server) botStart(c *fiber.Ctx, ep *botEndpoint, msgID string, ids []string, t chatTurn) error {
	thread, err := activities.MessengerThread(c.UserContext(), s.d.DB, ep.channel, ep.site.ID, t.MemberID, ids...)
	if err == nil {
		t.ThreadID = thread
		_, err = s.startChatTurn(c.UserContext(), t)
	}
	if err == nil {
		return botAccept(c)
	}
	var apiErr *Error
	if errors.As(err, &apiErr) && apiErr.Status < 500 {
		s.log.Warn("bot message not answered", "channel", ep.channel, "site_id", ep.site.ID, "err", err)
		return botAccept(c)
	}
	if msgID = botMsgID(c, msgID); msgID != "" {
		key := activities.MessengerMsgKey(ep.cfg.CorpID, msgID)
		if ferr := s.d.DB.ForgetProcessedMessage(c.UserContext(), ep.channel, key); ferr != nil {
			s.log.Error("bot: release processed mark", "channel", ep.channel, "key", key, "err", ferr)
		}
	}
	return err
}

// botAppMessage handles a decrypted application-channel message: a text
// message starts a turn in the sender's thread, anything else is
// acknowledged and ignored.
func (s *Server) botAppMessage(c *fiber.Ctx, ep *botEndpoint, inner []byte) error {
	m, err := msgr.ParseApp(inner)
	if err != nil {
		s.log.Info("bot app message ignored", "site_id", ep.site.ID, "err", err)
		return botAccept(c)
	}
	fresh, err := s.botMark(c, ep, m.MsgID)
	if err != nil || !fresh {
		return orAccept(c, err)
	}
	if m.MsgType != "text" || strings.TrimSpace(m.Content) == "" || m.FromUserName == "" {
		return botAccept(c)
	}
	agent := m.AgentID
	if agent == "" {
		agent = ep.cfg.AgentID
	}
	return s.botStart(c, ep, m.MsgID, []string{m.FromUserName}, chatTurn{Site: ep.site, Source: activities.ChannelApp,
		Text: m.Content, MemberID: m.FromUserName,
		Reply: &workflows.ReplyTarget{Channel: activities.ChannelApp, SiteID: ep.site.ID, ToUser: m.FromUserName, AgentID: agent}})
}

// botKefuMessage handles a decrypted customer-service message: a
// kf_msg_or_event notification starts (or nudges) the account's sync
// workflow, which pulls the messages; a direct text message starts a turn
// like the app channel; anything else is acknowledged and ignored.
func (s *Server) botKefuMessage(c *fiber.Ctx, ep *botEndpoint, inner []byte) error {
	ev, err := msgr.ParseKefu(inner)
	if err != nil {
		s.log.Info("bot kefu message ignored", "site_id", ep.site.ID, "err", err)
		return botAccept(c)
	}
	if ev.Event == msgr.EventKfMsgOrEvent {
		if err := s.startKefuSync(c, ep, ev); err != nil {
			return err
		}
		return botAccept(c)
	}
	fresh, err := s.botMark(c, ep, ev.MsgID)
	if err != nil || !fresh {
		return orAccept(c, err)
	}
	if ev.MsgType != "text" || strings.TrimSpace(ev.Content) == "" || ev.ExternalUserID == "" || ev.OpenKfID == "" {
		return botAccept(c)
	}
	return s.botStart(c, ep, ev.MsgID, []string{ev.OpenKfID, ev.ExternalUserID}, chatTurn{Site: ep.site,
		Source: activities.ChannelKefu, Text: ev.Content, MemberID: ev.ExternalUserID,
		Reply: &workflows.ReplyTarget{Channel: activities.ChannelKefu, SiteID: ep.site.ID, ToUser: ev.ExternalUserID, OpenKfID: ev.OpenKfID}})
}

// startKefuSync signals the account's KefuSync workflow with the callback's
// token, starting it when none runs (conflict policy USE_EXISTING), so the
// pull happens durably in the worker, never in this request.
func (s *Server) startKefuSync(c *fiber.Ctx, ep *botEndpoint, ev msgr.KefuEvent) error {
	tc, err := s.temporalClient()
	if err != nil {
		return err
	}
	id := workflows.KefuSyncID(ep.site.ID, ev.OpenKfID)
	opts := client.StartWorkflowOptions{ID: id, TaskQueue: s.d.Cfg.TemporalQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING}
	in := workflows.KefuSyncInput{SiteID: ep.site.ID, OpenKfID: ev.OpenKfID, Token: ev.Token}
	meta := workflows.JobMeta{Kind: workflows.KindKefuSync, TenantID: ep.site.TenantID, SiteID: ep.site.ID,
		RequestedBy: "wecom-kefu:" + ev.OpenKfID, RequestID: telemetry.RequestID(c.UserContext()),
		Title: workflows.JobTitle("Sync WeCom customer-service messages of account", ev.OpenKfID, ep.site.Name)}
	_, err = workflows.StartWithMeta(s.starter, meta, opts, func(opts client.StartWorkflowOptions) (client.WorkflowRun, error) {
		return tc.SignalWithStartWorkflow(c.UserContext(), id, workflows.SignalKefuSync, ev.Token, opts, workflows.KefuSync, in)
	})
	if err != nil {
		return Unavailable("could not start the kefu sync: %v", err)
	}
	return nil
}

// orAccept returns err when set (the platform will redeliver), else
// acknowledges the callback.
func orAccept(c *fiber.Ctx, err error) error {
	if err != nil {
		return err
	}
	return botAccept(c)
}
