package activities

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lorekb/lore/internal/config"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/internal/llm"
	"github.com/lorekb/lore/internal/msgr"
	"github.com/lorekb/lore/models"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
)

// The two enterprise-messenger channels: the names of their bot-config
// sections, of their chat-session source and of their processed_messages
// rows.
const (
	ChannelKefu = "wecom_kefu"
	ChannelApp  = "wecom_app"
)

// Errors of MessengerChannelFor; the API answers both with 403.
var (
	// ErrChannelDisabled means the tenant has not enabled the channel.
	ErrChannelDisabled = errors.New("messenger channel is not enabled")
	// ErrChannelNotForSite means the channel is limited to other sites.
	ErrChannelNotForSite = errors.New("messenger channel is not enabled for this site")
)

// maxDeliverAttempts bounds DeliverReply's retries whatever the caller's
// retry policy: after it the answer is dropped, so a chat run never waits
// on an unreachable platform for long.
const maxDeliverAttempts = 6

// kefuFirstSyncMaxAge is how old a message may be on the very first pull of
// an account (no stored cursor): the platform returns days of history then,
// which must not all be answered when a bot is first connected.
const kefuFirstSyncMaxAge = time.Hour

// permanentCodes are platform errcodes that retrying cannot fix: invalid
// secret (40001), user (40003), corp id (40013) or agent (40056), a bad
// parameter (40058), empty content (44004), an API the app may not call
// (48002), missing privilege (60011), a server IP not on the allow list
// (60020) and no valid recipient (81013). Anything else (system busy, rate
// limits, unknown codes) is retried, within the caller's attempt limits.
var permanentCodes = map[int]bool{
	40001: true, 40003: true, 40013: true, 40056: true, 40058: true,
	44004: true, 48002: true, 60011: true, 60020: true, 81013: true,
}

// ReplyTarget says where a messenger answer goes. It has the field names
// of workflows.ReplyTarget (which this package cannot import), so the value
// the chat run passes to the "DeliverReply" activity decodes into it.
type ReplyTarget struct {
	Channel  string // wecom_kefu | wecom_app
	SiteID   int64
	ToUser   string // app: user id; kefu: external user id
	OpenKfID string
	AgentID  string
}

// safeIDPart matches user and account ids that can be used verbatim in a
// thread id (and so in URLs and workflow ids).
var safeIDPart = regexp.MustCompile(`^[A-Za-z0-9_.@-]{1,64}$`)

// threadPrefix is the stable part of the thread ids of one messenger user
// on one site and channel, e.g. "wecom_app-3-zhangsan-". Ids that are long
// or contain unusual characters are replaced by a hash so thread ids stay
// short and URL-safe.
func threadPrefix(channel string, siteID int64, ids ...string) string {
	var b strings.Builder
	b.WriteString(channel)
	b.WriteString("-")
	b.WriteString(strconv.FormatInt(siteID, 10))
	for _, id := range ids {
		b.WriteString("-")
		if safeIDPart.MatchString(id) {
			b.WriteString(id)
			continue
		}
		sum := sha256.Sum256([]byte(id))
		b.WriteString("h" + hex.EncodeToString(sum[:8]))
	}
	b.WriteString("-")
	return b.String()
}

// MessengerThread returns the thread a messenger user's message belongs
// to: the user's latest thread on this site and channel, so the
// conversation continues, or else a new id (the stable prefix and a random
// suffix). The suffix matters: chat-run workflow ids derive from thread id
// and turn, so a thread recreated after its session was deleted must not
// reuse the id of an earlier run still retained by Temporal. ids are the
// user's identifiers on the channel (kefu: account and customer).
func MessengerThread(ctx context.Context, d *db.DB, channel string, siteID int64, memberID string, ids ...string) (string, error) {
	prefix := threadPrefix(channel, siteID, ids...)
	thread, err := d.LatestMessengerThread(ctx, siteID, memberID, channel, prefix)
	if err != nil || thread != "" {
		return thread, err
	}
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return prefix + hex.EncodeToString(b), nil
}

// MessengerMsgKey is the processed_messages id of a platform message id:
// scoped by corp, because message ids are only unique within one corp.
func MessengerMsgKey(corpID, msgID string) string { return corpID + "/" + msgID }

// MessengerChannelFor returns the settings of channel for site: the site's
// own section of its bot_config when it is enabled there (where the
// reference's admin saves it, WIRE §5), else the tenant's bot-config:
// ErrChannelDisabled when the channel is off, ErrChannelNotForSite when it
// is limited to other sites. Callers check the fields they need.
func MessengerChannelFor(cfg *deps.BotConfig, channel string, site *models.Site) (*deps.MessengerChannel, error) {
	if own, ok := deps.SiteChannel(site.BotConfig, channel); ok && own.Enabled {
		return &own, nil
	}
	siteID := site.ID
	ch, err := cfg.Channel(channel)
	if err != nil {
		return nil, err
	}
	if !ch.Enabled {
		return nil, ErrChannelDisabled
	}
	if len(ch.SiteIDs) > 0 && !slices.Contains(ch.SiteIDs, siteID) {
		return nil, ErrChannelNotForSite
	}
	return ch, nil
}

// Messenger holds the activities of the messenger channels: delivering
// answers and pulling customer-service messages. One value is shared by
// every call, so platform clients (and their cached access tokens) are
// reused across activities.
type Messenger struct {
	DB *db.DB
	// Cfg gives MESSENGER_BASE_URL and the chat-run settings of a
	// customer-service turn.
	Cfg     *config.Config
	Tenants MessengerTenants
	// HTTPClient is used for the platform API (nil: msgr's default client).
	HTTPClient *http.Client

	mu      sync.Mutex
	clients map[clientKey]*msgr.Client
}

// MessengerTenants gives a tenant's bot configuration and its chat model.
type MessengerTenants interface {
	BotConfig(ctx context.Context, tenantID int64) (deps.BotConfig, error)
	ChatModel(ctx context.Context, tenantID int64) (llm.Model, string, error)
}

// clientKey identifies one platform client: one corp credential on one API
// origin.
type clientKey struct{ baseURL, corpID, secret string }

// client returns the cached platform client of a corp id and secret.
func (m *Messenger) client(corpID, secret string) *msgr.Client {
	k := clientKey{baseURL: m.Cfg.MessengerBaseURL, corpID: corpID, secret: secret}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.clients == nil {
		m.clients = map[clientKey]*msgr.Client{}
	}
	c := m.clients[k]
	if c == nil {
		c = msgr.NewClient(k.baseURL, corpID, secret, m.HTTPClient)
		m.clients[k] = c
	}
	return c
}

// permanent is a non-retryable application error.
func permanent(format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), ErrTypeMessengerPermanent, nil)
}

// classifyAPIError turns a platform error whose errcode retrying cannot fix
// into a non-retryable error; other errors (rate limits, system busy,
// transport failures) are returned as they are and retried.
func classifyAPIError(err error) error {
	var ae *msgr.APIError
	if errors.As(err, &ae) && permanentCodes[ae.Code] {
		return temporal.NewNonRetryableApplicationError(err.Error(), ErrTypeMessengerPermanent, err)
	}
	return err
}

// sendingChannel loads the site's channel settings needed to call the
// platform API; every failure is permanent.
func (m *Messenger) sendingChannel(ctx context.Context, channel string, siteID int64) (*models.Site, *deps.MessengerChannel, error) {
	site, err := m.DB.GetSite(ctx, siteID)
	if errors.Is(err, db.ErrNotFound) {
		return nil, nil, permanent("site %d no longer exists", siteID)
	}
	if err != nil {
		return nil, nil, err
	}
	cfg, err := m.Tenants.BotConfig(ctx, site.TenantID)
	if err != nil {
		return nil, nil, err
	}
	ch, err := MessengerChannelFor(&cfg, channel, site)
	if err != nil {
		return nil, nil, permanent("%s for site %d: %v", channel, siteID, err)
	}
	if ch.CorpID == "" || ch.Secret == "" {
		return nil, nil, permanent("%s: corp_id and secret are required to call the messenger API", channel)
	}
	return site, ch, nil
}

// DeliverReply sends a chat run's answer to the messenger user it came from
// (registered under the name "DeliverReply", which the chat run calls). An
// empty answer sends nothing. Long answers go out as several messages; the
// number already sent is recorded as heartbeat details, so a retry resumes
// after them where the details reached the server (best effort: heartbeats
// are batched). Errors retrying cannot fix are non-retryable, and after
// maxDeliverAttempts every error is.
func (m *Messenger) DeliverReply(ctx context.Context, target ReplyTarget, answer string) error {
	if strings.TrimSpace(answer) == "" {
		return nil
	}
	_, ch, err := m.sendingChannel(ctx, target.Channel, target.SiteID)
	if err != nil {
		return err
	}
	c := m.client(ch.CorpID, ch.Secret)
	var send func(part string) error
	switch target.Channel {
	case ChannelApp:
		agent := target.AgentID
		if agent == "" {
			agent = ch.AgentID
		}
		if _, perr := strconv.ParseInt(strings.TrimSpace(agent), 10, 64); perr != nil || target.ToUser == "" {
			return permanent("wecom_app reply needs a numeric agent id and a recipient (agent %q)", agent)
		}
		send = func(part string) error { return c.SendAppText(ctx, agent, target.ToUser, part) }
	case ChannelKefu:
		if target.OpenKfID == "" || target.ToUser == "" {
			return permanent("wecom_kefu reply needs open_kfid and the external user id")
		}
		send = func(part string) error { return c.SendKefuText(ctx, target.OpenKfID, target.ToUser, part) }
	default:
		return permanent("unknown messenger channel %q", target.Channel)
	}
	parts := msgr.SplitText(answer, msgr.MaxTextBytes)
	sent := 0
	if activity.HasHeartbeatDetails(ctx) {
		_ = activity.GetHeartbeatDetails(ctx, &sent)
	}
	for i := sent; i < len(parts); i++ {
		if err := send(parts[i]); err != nil {
			err = classifyAPIError(err)
			var appErr *temporal.ApplicationError
			if errors.As(err, &appErr) && appErr.NonRetryable() {
				return err
			}
			if attempt := activity.GetInfo(ctx).Attempt; attempt >= maxDeliverAttempts {
				return temporal.NewNonRetryableApplicationError(
					fmt.Sprintf("giving up after %d attempts: %v", attempt, err), ErrTypeMessengerPermanent, err)
			}
			return err
		}
		activity.RecordHeartbeat(ctx, i+1)
	}
	return nil
}

// KefuSyncInput asks for one page of a customer-service account's messages.
// Token is the one of the kf_msg_or_event callback; Cursor continues a pull
// within one sync (empty: start from the stored cursor).
type KefuSyncInput struct {
	SiteID   int64
	OpenKfID string
	Token    string
	Cursor   string
}

// KefuMessage is one customer text message to answer. Key is its
// processed_messages id.
type KefuMessage struct {
	Key            string
	MsgID          string
	OpenKfID       string
	ExternalUserID string
	Content        string
	SendTime       int64
}

// KefuPage is one pulled page: the customer text messages in it (other
// messages and events are dropped), where the next page starts, and the key
// under which that position is stored.
type KefuPage struct {
	Messages   []KefuMessage
	NextCursor string
	HasMore    bool
	CursorKey  string
}

// kefuCursorKey is the messenger_cursors key of an account.
func kefuCursorKey(corpID, openKfID string) string {
	return ChannelKefu + ":" + corpID + ":" + openKfID
}

// SyncKefu pulls one page of an account's messages via sync_msg, from the
// given cursor or else the stored one. It changes nothing: the workflow
// starts the turns and stores NextCursor afterwards (SaveKefuCursor), so a
// crash in between re-pulls the page and processed_messages drops what was
// already answered.
func (m *Messenger) SyncKefu(ctx context.Context, in KefuSyncInput) (KefuPage, error) {
	_, ch, err := m.sendingChannel(ctx, ChannelKefu, in.SiteID)
	if err != nil {
		return KefuPage{}, err
	}
	page := KefuPage{CursorKey: kefuCursorKey(ch.CorpID, in.OpenKfID)}
	cursor := in.Cursor
	first := false
	if cursor == "" {
		if cursor, err = m.DB.MessengerCursor(ctx, page.CursorKey); err != nil {
			return KefuPage{}, err
		}
		first = cursor == ""
	}
	msgs, next, more, err := m.client(ch.CorpID, ch.Secret).SyncKefu(ctx, in.Token, in.OpenKfID, cursor)
	if err != nil {
		return KefuPage{}, classifyAPIError(err)
	}
	oldest := time.Now().Add(-kefuFirstSyncMaxAge).Unix()
	for _, msg := range msgs {
		if msg.Origin != msgr.KefuOriginCustomer || msg.MsgType != "text" || strings.TrimSpace(msg.Content) == "" ||
			msg.MsgID == "" || msg.ExternalUserID == "" || (first && msg.SendTime > 0 && msg.SendTime < oldest) {
			continue
		}
		kf := msg.OpenKfID
		if kf == "" {
			kf = in.OpenKfID
		}
		page.Messages = append(page.Messages, KefuMessage{Key: MessengerMsgKey(ch.CorpID, msg.MsgID), MsgID: msg.MsgID,
			OpenKfID: kf, ExternalUserID: msg.ExternalUserID, Content: msg.Content, SendTime: msg.SendTime})
	}
	page.NextCursor, page.HasMore = next, more && next != ""
	return page, nil
}

// SaveKefuCursor stores where the next pull of an account starts.
func (m *Messenger) SaveKefuCursor(ctx context.Context, key, cursor string) error {
	return m.DB.SaveMessengerCursor(ctx, key, cursor)
}

// KefuTurnInput is one pulled customer message of a site.
type KefuTurnInput struct {
	SiteID int64
	Msg    KefuMessage
}

// KefuTurn is a stored user turn that a chat run must answer (Started), with
// everything the workflow needs to start that run.
type KefuTurn struct {
	Started bool
	ChatRunSpec
	SessionID int64
	Reply     ReplyTarget
}

// BeginKefuTurn marks the message processed and stores it as the next user
// turn of the customer's thread. A message already processed, a site that
// is gone or a tenant without a chat model yields Started=false: there is
// nothing to answer. If storing fails the mark is removed again, so the
// retry (or the next pull) processes the message.
func (m *Messenger) BeginKefuTurn(ctx context.Context, in KefuTurnInput) (KefuTurn, error) {
	site, err := m.DB.GetSite(ctx, in.SiteID)
	if errors.Is(err, db.ErrNotFound) || (err == nil && (site.Status != models.SiteActive || site.Deleting)) {
		return KefuTurn{}, nil
	}
	if err != nil {
		return KefuTurn{}, err
	}
	if _, _, err := m.Tenants.ChatModel(ctx, site.TenantID); err != nil {
		activity.GetLogger(ctx).Warn("kefu message not answered: no chat model", "site_id", site.ID, "err", err)
		return KefuTurn{}, nil
	}
	fresh, err := m.DB.MarkMessageProcessed(ctx, ChannelKefu, in.Msg.Key)
	if err != nil || !fresh {
		return KefuTurn{}, err
	}
	start := time.Now()
	thread, err := MessengerThread(ctx, m.DB, ChannelKefu, site.ID, in.Msg.ExternalUserID, in.Msg.OpenKfID, in.Msg.ExternalUserID)
	var ts *db.TurnStart
	if err == nil {
		ts, err = m.DB.StartTurn(ctx, db.BeginTurn{ThreadID: thread, TenantID: site.TenantID, SiteID: site.ID,
			MemberID: in.Msg.ExternalUserID, Source: ChannelKefu, UserText: in.Msg.Content})
	}
	if err != nil {
		if ferr := m.DB.ForgetProcessedMessage(context.WithoutCancel(ctx), ChannelKefu, in.Msg.Key); ferr != nil {
			activity.GetLogger(ctx).Error("kefu: release processed mark", "key", in.Msg.Key, "err", ferr)
		}
		return KefuTurn{}, err
	}
	return KefuTurn{Started: true, ChatRunSpec: NewChatRunSpec(m.Cfg, site, thread, ts.Turn, start), SessionID: ts.Session.ID,
		Reply: ReplyTarget{Channel: ChannelKefu, SiteID: site.ID, ToUser: in.Msg.ExternalUserID, OpenKfID: in.Msg.OpenKfID}}, nil
}
