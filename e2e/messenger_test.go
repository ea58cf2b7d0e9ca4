package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/db/dbtest"
	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/internal/msgr"
	"github.com/lorekb/lore/models"
	"github.com/lorekb/lore/workflows"
)

const (
	fakeCorp   = "wwe2ecorp"
	fakeSecret = "e2e-secret"
	fakeToken  = "e2e-callback-token"
	fakeAgent  = "1000002"
)

// fakeMessenger is the messenger platform's HTTP API: gettoken, the two send
// endpoints and kefu sync_msg, recording what Lore sends.
type fakeMessenger struct {
	srv *httptest.Server

	mu        sync.Mutex
	tokens    int
	appSends  []map[string]any
	kefuSends []map[string]any
	syncs     []map[string]any
}

func newFakeMessenger(t *testing.T) *fakeMessenger {
	f := &fakeMessenger{}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeMessenger) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	reply := func(v map[string]any) { _ = json.NewEncoder(w).Encode(v) }
	if r.URL.Path == "/cgi-bin/gettoken" {
		if r.URL.Query().Get("corpid") != fakeCorp || r.URL.Query().Get("corpsecret") != fakeSecret {
			reply(map[string]any{"errcode": 40001, "errmsg": "invalid credential"})
			return
		}
		f.mu.Lock()
		f.tokens++
		f.mu.Unlock()
		reply(map[string]any{"errcode": 0, "errmsg": "ok", "access_token": "e2e-access-token", "expires_in": 7200})
		return
	}
	if r.URL.Query().Get("access_token") != "e2e-access-token" {
		reply(map[string]any{"errcode": 40014, "errmsg": "invalid access_token"})
		return
	}
	var body map[string]any
	dec := json.NewDecoder(r.Body)
	dec.UseNumber()
	_ = dec.Decode(&body)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.URL.Path {
	case "/cgi-bin/message/send":
		f.appSends = append(f.appSends, body)
		reply(map[string]any{"errcode": 0, "errmsg": "ok", "invaliduser": ""})
	case "/cgi-bin/kf/send_msg":
		f.kefuSends = append(f.kefuSends, body)
		reply(map[string]any{"errcode": 0, "errmsg": "ok", "msgid": fmt.Sprintf("sent-%d", len(f.kefuSends))})
	case "/cgi-bin/kf/sync_msg":
		f.syncs = append(f.syncs, body)
		now := time.Now().Unix()
		var list []any
		if body["cursor"] == nil || body["cursor"] == "" {
			list = []any{
				map[string]any{"msgid": "kf-1", "open_kfid": "wkE2E", "external_userid": "wmCustomer1", "send_time": now,
					"origin": 3, "msgtype": "text", "text": map[string]any{"content": "How do I install Lore?"}},
				map[string]any{"msgid": "kf-2", "open_kfid": "wkE2E", "external_userid": "wmCustomer1", "send_time": now,
					"origin": 4, "msgtype": "event", "event": map[string]any{"event_type": "enter_session"}},
				map[string]any{"msgid": "kf-3", "open_kfid": "wkE2E", "external_userid": "wmCustomer1", "send_time": now,
					"origin": 5, "msgtype": "text", "text": map[string]any{"content": "a human agent's message"}},
				map[string]any{"msgid": "kf-4", "open_kfid": "wkE2E", "external_userid": "wmCustomer1", "send_time": now,
					"origin": 3, "msgtype": "image", "image": map[string]any{"media_id": "m"}},
			}
		}
		reply(map[string]any{"errcode": 0, "errmsg": "ok", "next_cursor": "cursor-1", "has_more": 0, "msg_list": list})
	default:
		http.NotFound(w, r)
	}
}

// counts returns the numbers of token fetches, app sends, kefu sends and syncs.
func (f *fakeMessenger) counts() (tokens, app, kefu, syncs int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tokens, len(f.appSends), len(f.kefuSends), len(f.syncs)
}

// messengerPlatform signs and encrypts callbacks the way the platform does.
type messengerPlatform struct {
	t      *testing.T
	a      *app
	site   int64
	crypto *msgr.Crypto
}

// post delivers an encrypted callback with inner XML to path.
func (p *messengerPlatform) post(path, inner string) (int, string, time.Duration) {
	p.t.Helper()
	enc, err := p.crypto.Encrypt([]byte(inner))
	if err != nil {
		p.t.Fatal(err)
	}
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	q := url.Values{"msg_signature": {p.crypto.Signature(ts, "nonce", enc)}, "timestamp": {ts}, "nonce": {"nonce"},
		"site_id": {itoa(p.site)}}
	body := fmt.Sprintf("<xml><ToUserName><![CDATA[%s]]></ToUserName><Encrypt><![CDATA[%s]]></Encrypt></xml>", fakeCorp, enc)
	req := httptest.NewRequest("POST", path+"?"+q.Encode(), strings.NewReader(body))
	req.Header.Set("Content-Type", "text/xml")
	start := time.Now()
	res, err := p.a.srv.App().Test(req, -1)
	if err != nil {
		p.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(raw), time.Since(start)
}

func appMessage(msgID, user, text string) string {
	return fmt.Sprintf("<xml><ToUserName><![CDATA[%s]]></ToUserName><FromUserName><![CDATA[%s]]></FromUserName>"+
		"<CreateTime>%d</CreateTime><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[%s]]></Content>"+
		"<MsgId>%s</MsgId><AgentID>%s</AgentID></xml>", fakeCorp, user, time.Now().Unix(), text, msgID, fakeAgent)
}

// storeBotConfig enables both messenger channels for tenant 1.
func storeBotConfig(t *testing.T, a *app, aesKey string) {
	t.Helper()
	cfg := deps.DefaultBotConfig()
	ch := deps.MessengerChannel{Enabled: true, CorpID: fakeCorp, AgentID: fakeAgent, Secret: fakeSecret, Token: fakeToken, EncodingAESKey: aesKey}
	cfg.WecomApp, cfg.WecomKefu = ch, ch
	b, _ := json.Marshal(cfg)
	now := time.Now().UTC()
	row := &models.SystemConfig{TenantID: 1, ConfigKey: deps.BotConfigKey, Value: string(b), CreatedAt: now, UpdatedAt: now}
	if _, err := a.d.DB.NewInsert().Model(row).Exec(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestMessengerChannelsAnswerThroughThePlatformAPI(t *testing.T) {
	for _, dialect := range dbtest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			fake := newFakeMessenger(t)
			a := newApp(t, dialect, map[string]string{"MESSENGER_API_BASE_URL": fake.srv.URL})
			site := a.site("Messenger " + dialect)
			a.waitStatus(a.newDoc(site, "Installation", installDoc, "published"), "completed")
			keyBytes := make([]byte, 32)
			_, _ = rand.Read(keyBytes)
			aesKey := base64.StdEncoding.EncodeToString(keyBytes)[:43]
			storeBotConfig(t, a, aesKey)
			cr, err := msgr.NewCrypto(fakeToken, aesKey, fakeCorp)
			if err != nil {
				t.Fatal(err)
			}
			p := &messengerPlatform{t: t, a: a, site: site, crypto: cr}
			ctx := context.Background()

			// App channel: acknowledged at once, answered through message/send.
			status, body, took := p.post("/v1/bot/wecom-app", appMessage("msg-1", "zhangsan", "How do I install Lore?"))
			_, sends, _, _ := fake.counts()
			if status != 200 || body != "success" || sends != 0 || took > 5*time.Second {
				t.Fatalf("callback: %d %q after %s with %d sends", status, body, took, sends)
			}
			eventually(t, 60*time.Second, "the answer to be sent", func() bool { _, n, _, _ := fake.counts(); return n == 1 })
			fake.mu.Lock()
			send := fake.appSends[0]
			fake.mu.Unlock()
			text, _ := send["text"].(map[string]any)["content"].(string)
			if send["touser"] != "zhangsan" || send["msgtype"] != "text" || fmt.Sprint(send["agentid"]) != fakeAgent ||
				!strings.Contains(text, "[1]") {
				t.Fatalf("message/send body: %v", send)
			}

			// The platform redelivers the same MsgId: acknowledged, not answered again.
			if status, body, _ := p.post("/api/v1/bot/msgr-app", appMessage("msg-1", "zhangsan", "How do I install Lore?")); status != 200 || body != "success" {
				t.Fatalf("redelivery: %d %q", status, body)
			}
			time.Sleep(2 * time.Second)
			if _, n, _, _ := fake.counts(); n != 1 {
				t.Fatalf("redelivery was answered: %d sends", n)
			}

			// A second message continues the user's thread; the token is reused.
			if status, _, _ := p.post("/v1/bot/wecom-app", appMessage("msg-2", "zhangsan", "And how do I upgrade?")); status != 200 {
				t.Fatalf("second message: %d", status)
			}
			eventually(t, 60*time.Second, "the second answer", func() bool { _, n, _, _ := fake.counts(); return n == 2 })
			if tokens, _, _, _ := fake.counts(); tokens != 1 {
				t.Fatalf("gettoken called %d times, want 1", tokens)
			}
			var sessions struct {
				Items []struct {
					ThreadID     string `json:"thread_id"`
					Source       string `json:"source"`
					MessageCount int    `json:"message_count"`
				} `json:"list"`
			}
			// A messenger user's conversation is never readable through the
			// client API, whatever member id is asked for (issue 16.7); the
			// admin API shows it.
			if r := a.do("GET", fmt.Sprintf("/v1/chat/sessions?member_id=zhangsan&site_id=%d", site), nil, ""); r.Status != 200 ||
				!strings.Contains(string(r.Data), `"total":0`) {
				t.Fatalf("client list of a messenger user's sessions: %d %s", r.Status, r.Raw)
			}
			sessionsPath := fmt.Sprintf("/admin/api/v1/sites/%d/chat-sessions?keyword=zhangsan&search_field=member_id", site)
			a.admin("GET", sessionsPath, nil, &sessions)
			if len(sessions.Items) != 1 || sessions.Items[0].Source != "wecom_app" ||
				!strings.HasPrefix(sessions.Items[0].ThreadID, fmt.Sprintf("wecom_app-%d-zhangsan-", site)) {
				t.Fatalf("sessions: %+v", sessions)
			}
			thread := sessions.Items[0].ThreadID
			for _, path := range []string{"/v1/chat/sessions/" + thread + "?member_id=zhangsan",
				"/v1/chat/sessions/" + thread + "/messages?member_id=zhangsan"} {
				if r := a.do("GET", path, nil, ""); r.Status != 404 {
					t.Fatalf("GET %s: %d %s", path, r.Status, r.Raw)
				}
			}
			if r := a.do("DELETE", "/v1/chat/sessions/"+thread+"?member_id=zhangsan", nil, ""); r.Status != 404 {
				t.Fatalf("client delete of a messenger session: %d %s", r.Status, r.Raw)
			}
			eventually(t, 20*time.Second, "both turns stored", func() bool {
				n, _ := a.d.DB.NewSelect().Model((*models.ChatMessage)(nil)).
					Where("thread_id = ? AND role = 'user'", thread).Count(ctx)
				return n == 2
			})

			// After the user deletes the session, the next message starts a new
			// thread whose runs cannot collide with the old thread's.
			a.admin("DELETE", fmt.Sprintf("/admin/api/v1/sites/%d/chat-sessions/%s", site, thread), nil, nil)
			if status, _, _ := p.post("/v1/bot/wecom-app", appMessage("msg-3", "zhangsan", "How do I install Lore?")); status != 200 {
				t.Fatalf("message after delete: %d", status)
			}
			eventually(t, 60*time.Second, "the answer in the new thread", func() bool { _, n, _, _ := fake.counts(); return n == 3 })
			a.admin("GET", sessionsPath, nil, &sessions)
			if len(sessions.Items) != 1 || sessions.Items[0].ThreadID == thread {
				t.Fatalf("sessions after delete: %+v", sessions)
			}

			// Kefu channel: the notification triggers a durable sync_msg pull and
			// one reply to the customer's text message (the event, the human
			// agent's message and the image are not answered).
			event := fmt.Sprintf("<xml><ToUserName><![CDATA[%s]]></ToUserName><CreateTime>%d</CreateTime>"+
				"<MsgType><![CDATA[event]]></MsgType><Event><![CDATA[kf_msg_or_event]]></Event>"+
				"<Token><![CDATA[ENCApHxnGDNAVNY4AaSJKj4Tb5mwsEMzxhFmHVGcra996NR]]></Token>"+
				"<OpenKfId><![CDATA[wkE2E]]></OpenKfId></xml>", fakeCorp, time.Now().Unix())
			if status, body, _ := p.post("/v1/bot/wecom-kefu", event); status != 200 || body != "success" {
				t.Fatalf("kefu event: %d %q", status, body)
			}
			eventually(t, 60*time.Second, "the kefu reply", func() bool { _, _, n, _ := fake.counts(); return n == 1 })
			fake.mu.Lock()
			kf, firstSync := fake.kefuSends[0], fake.syncs[0]
			fake.mu.Unlock()
			kfText, _ := kf["text"].(map[string]any)["content"].(string)
			if kf["touser"] != "wmCustomer1" || kf["open_kfid"] != "wkE2E" || !strings.Contains(kfText, "[1]") {
				t.Fatalf("kf/send_msg body: %v", kf)
			}
			if firstSync["token"] != "ENCApHxnGDNAVNY4AaSJKj4Tb5mwsEMzxhFmHVGcra996NR" || firstSync["open_kfid"] != "wkE2E" {
				t.Fatalf("sync_msg body: %v", firstSync)
			}
			// The sync workflow is findable and named like every other one.
			if m := a.describeMeta(workflows.KefuSyncID(site, "wkE2E")); m.Kind != workflows.KindKefuSync || m.Site != site ||
				m.Tenant == 0 || m.RequestedBy != "wecom-kefu:wkE2E" || !strings.Contains(m.Title, "'wkE2E'") {
				t.Fatalf("kefu sync meta %+v", m)
			}
			var sess models.ChatSession
			if err := a.d.DB.NewSelect().Model(&sess).Where("member_id = ?", "wmCustomer1").Scan(ctx); err != nil ||
				sess.Source != "wecom_kefu" || !strings.HasPrefix(sess.ThreadID, fmt.Sprintf("wecom_kefu-%d-wkE2E-wmCustomer1-", site)) {
				t.Fatalf("kefu session: %+v %v", sess, err)
			}

			// The next notification pulls from the stored cursor: nothing new.
			if status, _, _ := p.post("/v1/bot/msgr-kefu", event); status != 200 {
				t.Fatalf("second kefu event: %d", status)
			}
			eventually(t, 30*time.Second, "the second pull", func() bool {
				fake.mu.Lock()
				defer fake.mu.Unlock()
				return len(fake.syncs) >= 2 && fake.syncs[len(fake.syncs)-1]["cursor"] == "cursor-1"
			})
			time.Sleep(time.Second)
			if tokens, _, n, _ := fake.counts(); n != 1 || tokens != 1 {
				t.Fatalf("after the second pull: %d kefu sends, %d token fetches", n, tokens)
			}

			// A text message delivered in the callback itself is answered directly,
			// in the same customer's thread.
			direct := fmt.Sprintf("<xml><ToUserName><![CDATA[%s]]></ToUserName><CreateTime>%d</CreateTime>"+
				"<MsgType><![CDATA[text]]></MsgType><MsgId>kf-direct-1</MsgId><OpenKfId><![CDATA[wkE2E]]></OpenKfId>"+
				"<ExternalUserID><![CDATA[wmCustomer1]]></ExternalUserID><Text><Content><![CDATA[And how do I upgrade?]]></Content></Text></xml>",
				fakeCorp, time.Now().Unix())
			for i := 0; i < 2; i++ {
				if status, body, _ := p.post("/v1/bot/wecom-kefu", direct); status != 200 || body != "success" {
					t.Fatalf("direct kefu message: %d %q", status, body)
				}
			}
			eventually(t, 60*time.Second, "the direct kefu reply", func() bool { _, _, n, _ := fake.counts(); return n == 2 })
			time.Sleep(time.Second)
			n, _ := a.d.DB.NewSelect().Model((*models.ChatMessage)(nil)).Where("thread_id = ? AND role = 'user'", sess.ThreadID).Count(ctx)
			if _, _, kn, _ := fake.counts(); kn != 2 || n != 2 {
				t.Fatalf("direct kefu message: %d sends, %d user messages in the thread", kn, n)
			}
		})
	}
}
