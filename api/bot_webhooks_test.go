package api

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/db/dbtest"
	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/internal/msgr"
	"github.com/lorekb/lore/models"
)

const (
	botToken = "bot-token-123"
	botCorp  = "wwcorp0001"
)

// botAESKey is a random 43-character EncodingAESKey.
func botAESKey(t *testing.T) string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)[:43]
}

// botFixture is a site with a stored bot-config and the platform's crypto.
type botFixture struct {
	h      *harness
	site   int64
	other  int64
	key    string
	crypto *msgr.Crypto
}

// newBotFixture creates two active sites and stores cfg (with the app
// channel enabled and complete unless changed by edit) as bot-config.
func newBotFixture(t *testing.T, dialect string, env map[string]string, edit func(*deps.BotConfig)) *botFixture {
	h := newHarness(t, dialect, env)
	f := &botFixture{h: h, key: botAESKey(t)}
	f.site = botSite(h, "bot-site")
	f.other = botSite(h, "bot-other")
	ch := deps.MessengerChannel{Enabled: true, CorpID: botCorp, AgentID: "1000002", Secret: "sec", Token: botToken, EncodingAESKey: f.key}
	cfg := deps.DefaultBotConfig()
	cfg.WecomApp, cfg.WecomKefu = ch, ch
	if edit != nil {
		edit(&cfg)
	}
	f.storeConfig(cfg)
	cr, err := msgr.NewCrypto(botToken, f.key, botCorp)
	if err != nil {
		t.Fatal(err)
	}
	f.crypto = cr
	return f
}

// botSite inserts an active site and returns its id.
func botSite(h *harness, slug string) int64 {
	h.t.Helper()
	return h.insertSite(slug, slug, false).ID
}

// storeConfig replaces the tenant's bot-config.
func (f *botFixture) storeConfig(cfg deps.BotConfig) {
	f.h.t.Helper()
	ctx := context.Background()
	tid, _ := f.h.d.DB.EnsureDefaultTenant(ctx)
	b, _ := json.Marshal(cfg)
	now := time.Now().UTC()
	if _, err := f.h.d.DB.NewDelete().Model((*models.SystemConfig)(nil)).Where("tenant_id = ? AND config_key = ?", tid, deps.BotConfigKey).Exec(ctx); err != nil {
		f.h.t.Fatal(err)
	}
	row := &models.SystemConfig{TenantID: tid, ConfigKey: deps.BotConfigKey, Value: string(b), CreatedAt: now, UpdatedAt: now}
	if _, err := f.h.d.DB.NewInsert().Model(row).Exec(ctx); err != nil {
		f.h.t.Fatal(err)
	}
}

// verifyURL builds a signed GET verification URL for echo, encrypted with cr.
func (f *botFixture) verifyURL(path string, cr *msgr.Crypto, echo string, ts time.Time, site int64) string {
	f.h.t.Helper()
	enc, err := cr.Encrypt([]byte(echo))
	if err != nil {
		f.h.t.Fatal(err)
	}
	stamp := strconv.FormatInt(ts.Unix(), 10)
	q := url.Values{"msg_signature": {cr.Signature(stamp, "nonce1", enc)}, "timestamp": {stamp}, "nonce": {"nonce1"},
		"echostr": {enc}, "site_id": {itoa(site)}}
	return path + "?" + q.Encode()
}

// callback builds a signed POST callback for inner XML.
func (f *botFixture) callback(path, inner string, ts time.Time) (string, string) {
	f.h.t.Helper()
	enc, err := f.crypto.Encrypt([]byte(inner))
	if err != nil {
		f.h.t.Fatal(err)
	}
	stamp := strconv.FormatInt(ts.Unix(), 10)
	q := url.Values{"msg_signature": {f.crypto.Signature(stamp, "n2", enc)}, "timestamp": {stamp}, "nonce": {"n2"},
		"site_id": {itoa(f.site)}}
	body := fmt.Sprintf("<xml><ToUserName><![CDATA[%s]]></ToUserName><Encrypt><![CDATA[%s]]></Encrypt><AgentID><![CDATA[1000002]]></AgentID></xml>", botCorp, enc)
	return path + "?" + q.Encode(), body
}

// post sends an XML body.
func (f *botFixture) post(path, body string) *resp {
	f.h.t.Helper()
	return f.h.do(http.MethodPost, path, body, "", "Content-Type", "text/xml")
}

// processed counts processed_messages rows.
func (f *botFixture) processed() int64 {
	f.h.t.Helper()
	n, err := f.h.d.DB.NewSelect().Model((*models.ProcessedMessage)(nil)).Count(context.Background())
	if err != nil {
		f.h.t.Fatal(err)
	}
	return n
}

// forEachDialect runs fn as a subtest per database dialect.
func forEachDialect(t *testing.T, fn func(t *testing.T, dialect string)) {
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) { fn(t, dialect) })
	}
}

func appText(msgID, user, text string) string {
	return fmt.Sprintf("<xml><ToUserName><![CDATA[%s]]></ToUserName><FromUserName><![CDATA[%s]]></FromUserName>"+
		"<CreateTime>%d</CreateTime><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[%s]]></Content>"+
		"<MsgId>%s</MsgId><AgentID>1000002</AgentID></xml>", botCorp, user, time.Now().Unix(), text, msgID)
}

func TestBotWebhookURLVerification(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		f := newBotFixture(t, dialect, nil, func(c *deps.BotConfig) { c.WecomKefu.SiteIDs = []int64{999999} })
		h, now := f.h, time.Now()

		// Success on the app channel under every path and prefix.
		for _, p := range []string{"/v1/bot/wecom-app", "/v1/bot/msgr-app", "/api/v1/bot/wecom-app", "/api/v1/bot/msgr-app"} {
			r := h.must(200, "GET", f.verifyURL(p, f.crypto, "echo-"+p, now, f.site), nil, "")
			if string(r.Raw) != "echo-"+p || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") {
				t.Fatalf("%s: %q %s", p, r.Raw, r.Header.Get("Content-Type"))
			}
		}
		good := f.verifyURL("/v1/bot/wecom-app", f.crypto, "hello", now, f.site)

		// Bad signature.
		bad := strings.Replace(good, "msg_signature=", "msg_signature=0", 1)
		if r := h.must(400, "GET", bad, nil, ""); string(r.Raw) != "verification failed" ||
			!strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") {
			t.Fatalf("bad signature: %q", r.Raw)
		}
		// Encrypted for another corp (right token and key, wrong receive id).
		foreign, err := msgr.NewCrypto(botToken, f.key, "wwothercorp")
		if err != nil {
			t.Fatal(err)
		}
		if r := h.must(400, "GET", f.verifyURL("/v1/bot/wecom-app", foreign, "x", now, f.site), nil, ""); string(r.Raw) != "verification failed" {
			t.Fatalf("wrong corp: %q", r.Raw)
		}
		// Correctly signed but outside the replay window.
		if r := h.must(400, "GET", f.verifyURL("/v1/bot/wecom-app", f.crypto, "x", now.Add(-time.Hour), f.site), nil, ""); string(r.Raw) != "verification failed" {
			t.Fatalf("stale: %q", r.Raw)
		}
		// site_id is required; an unknown site is 404.
		noSite := strings.Replace(good, "site_id="+itoa(f.site), "", 1)
		if r := h.must(422, "GET", noSite, nil, ""); r.Code != 422 {
			t.Fatalf("missing site_id: %s", r.Raw)
		}
		h.must(422, "GET", strings.Replace(good, "site_id="+itoa(f.site), "site_id=abc", 1), nil, "")
		h.must(404, "GET", f.verifyURL("/v1/bot/wecom-app", f.crypto, "x", now, 987654), nil, "")

		// The kefu channel is limited to another site: 403.
		if r := h.must(403, "GET", f.verifyURL("/v1/bot/wecom-kefu", f.crypto, "x", now, f.site), nil, ""); r.Code != 403 {
			t.Fatalf("kefu not for site: %s", r.Raw)
		}
		// Disabled: 403; incomplete: 400 (never 500).
		cfg := deps.DefaultBotConfig()
		cfg.WecomApp = deps.MessengerChannel{Enabled: false, CorpID: botCorp, Token: botToken, EncodingAESKey: f.key}
		cfg.WecomKefu = deps.MessengerChannel{Enabled: true, CorpID: botCorp, EncodingAESKey: f.key}
		f.storeConfig(cfg)
		if r := h.must(403, "GET", f.verifyURL("/v1/bot/msgr-app", f.crypto, "x", now, f.site), nil, ""); r.Code != 403 {
			t.Fatalf("disabled: %s", r.Raw)
		}
		if r := h.must(400, "GET", f.verifyURL("/v1/bot/msgr-kefu", f.crypto, "x", now, f.site), nil, ""); r.Code != 400 ||
			!strings.Contains(r.Msg, "token") {
			t.Fatalf("incomplete: %s", r.Raw)
		}
		cfg.WecomKefu = deps.MessengerChannel{Enabled: true, CorpID: botCorp, Token: botToken, EncodingAESKey: "short"}
		f.storeConfig(cfg)
		h.must(400, "GET", f.verifyURL("/v1/bot/wecom-kefu", f.crypto, "x", now, f.site), nil, "")
	})
}

func TestBotWebhookPostRefusals(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dialect string) {
		f := newBotFixture(t, dialect, map[string]string{"MESSENGER_MAX_BODY_BYTES": "4096"}, nil)
		now := time.Now()
		path, body := f.callback("/v1/bot/wecom-app", appText("1001", "zhangsan", "hi"), now)

		// DOCTYPE / ENTITY, even when the query is signed.
		xxe := `<?xml version="1.0"?><!DOCTYPE xml [<!ENTITY e SYSTEM "file:///etc/passwd">]><xml><Encrypt>&e;</Encrypt></xml>`
		if r := f.post(path, xxe); r.Status != 400 || len(r.Raw) != 0 {
			t.Fatalf("doctype: %d %q", r.Status, r.Raw)
		}
		// Over MESSENGER_MAX_BODY_BYTES.
		big := "<xml><Encrypt>" + strings.Repeat("A", 5000) + "</Encrypt></xml>"
		if r := f.post(path, big); r.Status != 413 {
			t.Fatalf("oversize: %d %q", r.Status, r.Raw)
		}
		// Bad signature and tampered ciphertext.
		if r := f.post(strings.Replace(path, "msg_signature=", "msg_signature=f", 1), body); r.Status != 400 || len(r.Raw) != 0 {
			t.Fatalf("bad signature: %d %q", r.Status, r.Raw)
		}
		if r := f.post(path, strings.Replace(body, "<Encrypt><![CDATA[", "<Encrypt><![CDATA[x", 1)); r.Status != 400 {
			t.Fatalf("tampered: %d %q", r.Status, r.Raw)
		}
		// Not XML at all.
		if r := f.post(path, "not xml"); r.Status != 400 {
			t.Fatalf("garbage: %d %q", r.Status, r.Raw)
		}
		// Stale timestamp, otherwise valid.
		stalePath, staleBody := f.callback("/v1/bot/wecom-app", appText("1002", "zhangsan", "hi"), now.Add(-time.Hour))
		if r := f.post(stalePath, staleBody); r.Status != 400 {
			t.Fatalf("stale: %d %q", r.Status, r.Raw)
		}
		// Missing site_id.
		if r := f.post(strings.Replace(path, "site_id="+itoa(f.site), "", 1), body); r.Status != 422 {
			t.Fatalf("no site: %d %q", r.Status, r.Raw)
		}
		if n := f.processed(); n != 0 {
			t.Fatalf("refused callbacks stored %d processed messages", n)
		}
	})
}

func TestBotWebhookAcceptsAndDedupes(t *testing.T) {
	f := newBotFixture(t, "sqlite", nil, nil)
	now := time.Now()

	// A non-text message is acknowledged and remembered; its redelivery too.
	image := fmt.Sprintf("<xml><ToUserName>%s</ToUserName><FromUserName>lisi</FromUserName><CreateTime>1</CreateTime>"+
		"<MsgType>image</MsgType><PicUrl>http://x/y.png</PicUrl><MsgId>2001</MsgId><AgentID>1000002</AgentID></xml>", botCorp)
	for i := 0; i < 2; i++ {
		path, body := f.callback("/api/v1/bot/msgr-app", image, now)
		if r := f.post(path, body); r.Status != 200 || string(r.Raw) != "success" ||
			!strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") {
			t.Fatalf("image %d: %d %q", i, r.Status, r.Raw)
		}
	}
	if n := f.processed(); n != 1 {
		t.Fatalf("processed rows %d, want 1", n)
	}

	// A decrypted but unparsable inner message is acknowledged (WIRE.md §5).
	path, body := f.callback("/v1/bot/wecom-app", "<xml><Content>no type</Content></xml>", now)
	if r := f.post(path, body); r.Status != 200 || string(r.Raw) != "success" {
		t.Fatalf("no MsgType: %d %q", r.Status, r.Raw)
	}

	// A text message whose turn cannot start (no workflow engine here) is not
	// acknowledged, and its mark is released so the redelivery is processed.
	path, body = f.callback("/v1/bot/wecom-app", appText("2002", "lisi", "How do I install?"), now)
	if r := f.post(path, body); r.Status != 503 || r.Code != 503 {
		t.Fatalf("text without temporal: %d %q", r.Status, r.Raw)
	}
	if n := f.processed(); n != 1 {
		t.Fatalf("processed rows %d after a failed start, want 1", n)
	}

	// kefu: a sync notification needs the workflow engine as well.
	event := fmt.Sprintf("<xml><ToUserName>%s</ToUserName><CreateTime>1</CreateTime><MsgType>event</MsgType>"+
		"<Event>kf_msg_or_event</Event><Token>tok1</Token><OpenKfId>wkAAA</OpenKfId></xml>", botCorp)
	path, body = f.callback("/v1/bot/wecom-kefu", event, now)
	if r := f.post(path, body); r.Status != 503 {
		t.Fatalf("kefu event without temporal: %d %q", r.Status, r.Raw)
	}
	// ...while a kefu event of another kind is acknowledged and ignored.
	other := fmt.Sprintf("<xml><ToUserName>%s</ToUserName><CreateTime>1</CreateTime><MsgType>event</MsgType>"+
		"<Event>enter_session</Event></xml>", botCorp)
	path, body = f.callback("/v1/bot/msgr-kefu", other, now)
	if r := f.post(path, body); r.Status != 200 || string(r.Raw) != "success" {
		t.Fatalf("kefu other event: %d %q", r.Status, r.Raw)
	}
}

// TestBotMessagesWithoutMsgIdAreDedupedByEnvelope: a message without MsgId
// replayed within the window (the same signed envelope) is processed once;
// another envelope of the same content is a new message.
func TestBotMessagesWithoutMsgIdAreDedupedByEnvelope(t *testing.T) {
	f := newBotFixture(t, "sqlite", nil, nil)
	image := fmt.Sprintf("<xml><ToUserName>%s</ToUserName><FromUserName>lisi</FromUserName><CreateTime>1</CreateTime>"+
		"<MsgType>image</MsgType><PicUrl>http://x/y.png</PicUrl><AgentID>1000002</AgentID></xml>", botCorp)
	path, body := f.callback("/v1/bot/wecom-app", image, time.Now())
	for i := 0; i < 3; i++ {
		if r := f.post(path, body); r.Status != 200 || string(r.Raw) != "success" {
			t.Fatalf("replay %d: %d %q", i, r.Status, r.Raw)
		}
	}
	if n := f.processed(); n != 1 {
		t.Fatalf("processed rows %d after 3 deliveries of one envelope, want 1", n)
	}
	path, body = f.callback("/v1/bot/wecom-app", image, time.Now().Add(time.Second))
	if r := f.post(path, body); r.Status != 200 {
		t.Fatalf("new envelope: %d %q", r.Status, r.Raw)
	}
	if n := f.processed(); n != 2 {
		t.Fatalf("processed rows %d, want 2", n)
	}
}
