package msgr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"
)

const (
	fakeCorp   = "wwcorp"
	fakeSecret = "s3cret-value"
)

// fakeAPI is an in-process stand-in for the platform's HTTP API.
type fakeAPI struct {
	t *testing.T

	tokenCalls atomic.Int32 // tokens minted
	tokenReqs  atomic.Int32 // gettoken requests, successful or not
	posts      atomic.Int32
	tokenDelay time.Duration
	expiresIn  int

	mu          sync.Mutex
	current     string // the only access token the server accepts
	staleCode   int    // errcode for a request carrying another token
	sendCodes   []int  // errcodes to return for the next POSTs, in order
	invalidUser string
	bodies      []string
	appSends    []appTextRequest
	kefuSends   []kefuTextRequest
	syncReqs    []kefuSyncRequest
	syncResp    string
}

func newFakeAPI(t *testing.T) (*fakeAPI, *httptest.Server) {
	f := &fakeAPI{t: t, expiresIn: 7200, staleCode: errcodeInvalidToken}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	return f, srv
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if r.URL.Path == "/cgi-bin/gettoken" {
		f.tokenReqs.Add(1)
		if r.Method != http.MethodGet {
			http.Error(w, "method", http.StatusMethodNotAllowed)
			return
		}
		if q.Get("corpid") != fakeCorp || q.Get("corpsecret") != fakeSecret {
			writeJSON(w, map[string]any{"errcode": 40001, "errmsg": "invalid credential"})
			return
		}
		n := f.tokenCalls.Add(1)
		time.Sleep(f.tokenDelay)
		tok := fmt.Sprintf("tok-%d", n)
		f.mu.Lock()
		f.current = tok
		f.mu.Unlock()
		writeJSON(w, map[string]any{"errcode": 0, "errmsg": "ok", "access_token": tok, "expires_in": f.expiresIn})
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "method", http.StatusMethodNotAllowed)
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		f.t.Errorf("Content-Type = %q", ct)
	}
	f.posts.Add(1)
	body, _ := io.ReadAll(r.Body)

	f.mu.Lock()
	defer f.mu.Unlock()
	if q.Get("access_token") != f.current {
		writeJSON(w, map[string]any{"errcode": f.staleCode, "errmsg": "invalid access_token"})
		return
	}
	if len(f.sendCodes) > 0 {
		code := f.sendCodes[0]
		f.sendCodes = f.sendCodes[1:]
		if code != 0 {
			writeJSON(w, map[string]any{"errcode": code, "errmsg": fmt.Sprintf("error %d", code)})
			return
		}
	}
	f.bodies = append(f.bodies, string(body))
	switch r.URL.Path {
	case "/cgi-bin/message/send":
		var m appTextRequest
		if err := json.Unmarshal(body, &m); err != nil {
			f.t.Errorf("message/send body %s: %v", body, err)
		}
		f.appSends = append(f.appSends, m)
		writeJSON(w, map[string]any{"errcode": 0, "errmsg": "ok", "invaliduser": f.invalidUser, "msgid": "x"})
	case "/cgi-bin/kf/send_msg":
		var m kefuTextRequest
		if err := json.Unmarshal(body, &m); err != nil {
			f.t.Errorf("kf/send_msg body %s: %v", body, err)
		}
		f.kefuSends = append(f.kefuSends, m)
		writeJSON(w, map[string]any{"errcode": 0, "errmsg": "ok", "msgid": "y"})
	case "/cgi-bin/kf/sync_msg":
		var m kefuSyncRequest
		if err := json.Unmarshal(body, &m); err != nil {
			f.t.Errorf("kf/sync_msg body %s: %v", body, err)
		}
		f.syncReqs = append(f.syncReqs, m)
		_, _ = io.WriteString(w, f.syncResp)
	default:
		http.NotFound(w, r)
	}
}

// expireServerToken makes the server reject the token it last issued, as
// if it expired on the platform side before the client's cache noticed.
func (f *fakeAPI) expireServerToken() {
	f.mu.Lock()
	f.current = "expired-on-server"
	f.mu.Unlock()
}

func TestNewClientDefaults(t *testing.T) {
	c := NewClient("", "c", "s", nil)
	if c.baseURL != DefaultBaseURL || c.hc == nil || c.hc.Timeout == 0 {
		t.Fatalf("defaults not applied: base=%q hc=%v", c.baseURL, c.hc)
	}
	if c := NewClient("http://x/", "c", "s", nil); c.baseURL != "http://x" {
		t.Fatalf("trailing slash kept: %q", c.baseURL)
	}
}

func TestClientTokenCachedAcrossConcurrentSends(t *testing.T) {
	f, srv := newFakeAPI(t)
	f.tokenDelay = 50 * time.Millisecond // keep the fetch in flight while others arrive
	c := NewClient(srv.URL, fakeCorp, fakeSecret, srv.Client())

	const workers, each = 16, 5
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				errs <- c.SendAppText(context.Background(), "1000002", fmt.Sprintf("user%d", w), "hi")
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("SendAppText: %v", err)
		}
	}
	if n := f.tokenCalls.Load(); n != 1 {
		t.Fatalf("gettoken called %d times, want 1", n)
	}
	if len(f.appSends) != workers*each {
		t.Fatalf("delivered %d messages, want %d", len(f.appSends), workers*each)
	}
	m := f.appSends[0]
	if m.MsgType != "text" || m.AgentID != 1000002 || m.Text.Content != "hi" || !strings.HasPrefix(m.ToUser, "user") {
		t.Fatalf("unexpected request %+v", m)
	}
	if !strings.Contains(f.bodies[0], `"agentid":1000002`) {
		t.Fatalf("agentid must be a JSON number: %s", f.bodies[0])
	}
}

func TestClientTokenRefreshedFiveMinutesBeforeExpiry(t *testing.T) {
	f, srv := newFakeAPI(t)
	c := NewClient(srv.URL, fakeCorp, fakeSecret, srv.Client())
	clock := time.Unix(1_700_000_000, 0)
	var clockMu sync.Mutex
	c.now = func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return clock }
	advance := func(d time.Duration) { clockMu.Lock(); clock = clock.Add(d); clockMu.Unlock() }

	ctx := context.Background()
	tok, err := c.AccessToken(ctx)
	if err != nil || tok != "tok-1" {
		t.Fatalf("AccessToken = %q, %v", tok, err)
	}
	advance(7200*time.Second - 5*time.Minute - time.Second)
	if tok, _ := c.AccessToken(ctx); tok != "tok-1" || f.tokenCalls.Load() != 1 {
		t.Fatalf("token refreshed too early: %q after %d calls", tok, f.tokenCalls.Load())
	}
	advance(time.Second)
	if tok, _ := c.AccessToken(ctx); tok != "tok-2" || f.tokenCalls.Load() != 2 {
		t.Fatalf("token not refreshed 5 minutes before expiry: %q after %d calls", tok, f.tokenCalls.Load())
	}

	// A token that lives less than the safety margin is used but not cached.
	f.expiresIn = 200
	c.invalidate("tok-2")
	for i := 0; i < 3; i++ {
		if _, err := c.AccessToken(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.tokenCalls.Load(); n != 5 {
		t.Fatalf("short-lived tokens: %d gettoken calls, want 5", n)
	}
}

func TestClientRetriesOnceOnExpiredToken(t *testing.T) {
	for _, code := range []int{errcodeInvalidToken, errcodeExpiredToken} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			f, srv := newFakeAPI(t)
			f.staleCode = code
			c := NewClient(srv.URL, fakeCorp, fakeSecret, srv.Client())
			ctx := context.Background()
			if err := c.SendKefuText(ctx, "wkA", "wmB", "first"); err != nil {
				t.Fatal(err)
			}
			f.expireServerToken()
			if err := c.SendKefuText(ctx, "wkA", "wmB", "second"); err != nil {
				t.Fatalf("send after server-side expiry: %v", err)
			}
			if n := f.tokenCalls.Load(); n != 2 {
				t.Fatalf("gettoken calls = %d, want 2", n)
			}
			if n := f.posts.Load(); n != 3 {
				t.Fatalf("POSTs = %d, want 3 (send, rejected send, retried send)", n)
			}
			if len(f.kefuSends) != 2 || f.kefuSends[1].Text.Content != "second" {
				t.Fatalf("delivered %+v", f.kefuSends)
			}
			if tok, _ := c.AccessToken(ctx); tok != "tok-2" {
				t.Fatalf("cache holds %q, want the refreshed tok-2", tok)
			}
		})
	}
}

func TestClientRetryIsBounded(t *testing.T) {
	f, srv := newFakeAPI(t)
	c := NewClient(srv.URL, fakeCorp, fakeSecret, srv.Client())
	f.sendCodes = []int{errcodeExpiredToken, errcodeExpiredToken, errcodeExpiredToken}
	err := c.SendKefuText(context.Background(), "wkA", "wmB", "hi")
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Code != errcodeExpiredToken {
		t.Fatalf("err = %v, want APIError 42001", err)
	}
	if n := f.posts.Load(); n != 2 {
		t.Fatalf("POSTs = %d, want exactly 2 (one retry)", n)
	}
	if n := f.tokenCalls.Load(); n != 2 {
		t.Fatalf("gettoken calls = %d, want 2", n)
	}
}

func TestClientAPIErrorNotRetried(t *testing.T) {
	f, srv := newFakeAPI(t)
	c := NewClient(srv.URL, fakeCorp, fakeSecret, srv.Client())
	f.sendCodes = []int{95001}
	err := c.SendAppText(context.Background(), "1000002", "u", "hi")
	if err == nil || !strings.Contains(err.Error(), "95001") || !strings.Contains(err.Error(), "error 95001") {
		t.Fatalf("err = %v, want errcode and errmsg", err)
	}
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Op != "message/send" || apiErr.Code != 95001 {
		t.Fatalf("err = %#v", err)
	}
	if n := f.posts.Load(); n != 1 {
		t.Fatalf("POSTs = %d, want 1", n)
	}
}

func TestClientGetTokenError(t *testing.T) {
	f, srv := newFakeAPI(t)
	c := NewClient(srv.URL, fakeCorp, "wrong-secret", srv.Client())
	err := c.SendKefuText(context.Background(), "wkA", "wmB", "hi")
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Op != "gettoken" || apiErr.Code != 40001 {
		t.Fatalf("err = %v, want gettoken APIError 40001", err)
	}
	if !strings.Contains(err.Error(), "40001") || !strings.Contains(err.Error(), "invalid credential") {
		t.Fatalf("error text %q lacks errcode/errmsg", err)
	}
	if f.posts.Load() != 0 {
		t.Fatal("send attempted without a token")
	}
	// Failures are not cached: the next call asks again.
	if _, err := c.AccessToken(context.Background()); err == nil {
		t.Fatal("wrong secret produced a token")
	}
	if n := f.tokenReqs.Load(); n != 2 {
		t.Fatalf("gettoken requests = %d, want 2 (errors must not be cached)", n)
	}
}

func TestClientInvalidUserIsAnError(t *testing.T) {
	f, srv := newFakeAPI(t)
	f.invalidUser = "ghost"
	c := NewClient(srv.URL, fakeCorp, fakeSecret, srv.Client())
	err := c.SendAppText(context.Background(), "1000002", "ghost", "hi")
	if err == nil || !strings.Contains(err.Error(), "ghost") {
		t.Fatalf("err = %v, want invaliduser error", err)
	}
}

func TestClientSplitsLongText(t *testing.T) {
	f, srv := newFakeAPI(t)
	c := NewClient(srv.URL, fakeCorp, fakeSecret, srv.Client())
	// 3-byte runes with an odd ASCII offset so 2048 falls mid-rune.
	text := "a<b>&" + strings.Repeat("知识库", 600) + strings.Repeat("z", 100)
	if err := c.SendKefuText(context.Background(), "wkA", "wmB", text); err != nil {
		t.Fatal(err)
	}
	if len(f.kefuSends) != 3 {
		t.Fatalf("sent %d parts, want 3", len(f.kefuSends))
	}
	var joined strings.Builder
	for i, m := range f.kefuSends {
		if m.ToUser != "wmB" || m.OpenKfID != "wkA" || m.MsgType != "text" {
			t.Fatalf("part %d: bad envelope %+v", i, m)
		}
		if len(m.Text.Content) > MaxTextBytes || !utf8.ValidString(m.Text.Content) {
			t.Fatalf("part %d: %d bytes, valid=%v", i, len(m.Text.Content), utf8.ValidString(m.Text.Content))
		}
		joined.WriteString(m.Text.Content)
	}
	if joined.String() != text {
		t.Fatal("parts do not reassemble to the original text in order")
	}
	if !strings.Contains(f.bodies[0], `"content":"a<b>&`) {
		t.Fatalf("text must be sent without HTML escaping: %.60s", f.bodies[0])
	}
	if f.tokenCalls.Load() != 1 {
		t.Fatalf("gettoken calls = %d, want 1", f.tokenCalls.Load())
	}
}

func TestClientStopsAtFirstFailedPart(t *testing.T) {
	f, srv := newFakeAPI(t)
	c := NewClient(srv.URL, fakeCorp, fakeSecret, srv.Client())
	f.sendCodes = []int{0, 45009}
	err := c.SendAppText(context.Background(), "7", "u", strings.Repeat("x", 3*MaxTextBytes))
	if err == nil || !strings.Contains(err.Error(), "part 2 of 3") || !strings.Contains(err.Error(), "45009") {
		t.Fatalf("err = %v", err)
	}
	if len(f.appSends) != 1 {
		t.Fatalf("delivered %d parts, want 1", len(f.appSends))
	}
}

func TestClientSendValidation(t *testing.T) {
	f, srv := newFakeAPI(t)
	c := NewClient(srv.URL, fakeCorp, fakeSecret, srv.Client())
	ctx := context.Background()
	if err := c.SendAppText(ctx, "abc", "u", "hi"); err == nil {
		t.Error("non-numeric agent id accepted")
	}
	if err := c.SendAppText(ctx, "1", "", "hi"); err == nil {
		t.Error("empty recipient accepted")
	}
	if err := c.SendAppText(ctx, "1", "u", ""); err == nil {
		t.Error("empty text accepted")
	}
	if err := c.SendKefuText(ctx, "", "wm", "hi"); err == nil {
		t.Error("empty open_kfid accepted")
	}
	if f.posts.Load() != 0 {
		t.Fatalf("invalid sends reached the server %d times", f.posts.Load())
	}
}

func TestSyncKefu(t *testing.T) {
	f, srv := newFakeAPI(t)
	f.syncResp = `{"errcode":0,"errmsg":"ok","next_cursor":"c2","has_more":1,"msg_list":[
		{"msgid":"m1","open_kfid":"wkA","external_userid":"wmB","send_time":1700000000,"origin":3,"msgtype":"text","text":{"content":"你好"}},
		{"msgid":"m2","open_kfid":"wkA","external_userid":"wmB","send_time":1700000001,"origin":3,"msgtype":"image","image":{"media_id":"x"}},
		{"msgid":"m3","open_kfid":"wkA","send_time":1700000002,"origin":4,"msgtype":"event","event":{"event_type":"enter_session"}}]}`
	c := NewClient(srv.URL, fakeCorp, fakeSecret, srv.Client())
	msgs, next, more, err := c.SyncKefu(context.Background(), "ENCtok", "wkA", "c1")
	if err != nil {
		t.Fatal(err)
	}
	if next != "c2" || !more || len(msgs) != 3 {
		t.Fatalf("next=%q more=%v n=%d", next, more, len(msgs))
	}
	want := KefuSyncedMessage{MsgID: "m1", OpenKfID: "wkA", ExternalUserID: "wmB", MsgType: "text", Content: "你好", Origin: KefuOriginCustomer, SendTime: 1700000000}
	if msgs[0] != want {
		t.Fatalf("msgs[0] = %+v, want %+v", msgs[0], want)
	}
	if msgs[1].MsgType != "image" || msgs[1].Content != "" || msgs[2].Origin != 4 {
		t.Fatalf("non-text messages: %+v %+v", msgs[1], msgs[2])
	}
	req := f.syncReqs[0]
	if req != (kefuSyncRequest{Cursor: "c1", Token: "ENCtok", OpenKfID: "wkA", Limit: 1000}) {
		t.Fatalf("request = %+v", req)
	}
	for _, k := range []string{`"cursor":"c1"`, `"token":"ENCtok"`, `"open_kfid":"wkA"`, `"limit":1000`} {
		if !strings.Contains(f.bodies[0], k) {
			t.Fatalf("request body %s lacks %s", f.bodies[0], k)
		}
	}

	// First page: no cursor field at all; has_more as a JSON boolean false.
	f.syncResp = `{"errcode":0,"errmsg":"ok","next_cursor":"c9","has_more":false,"msg_list":[]}`
	msgs, next, more, err = c.SyncKefu(context.Background(), "ENCtok", "wkA", "")
	if err != nil || more || next != "c9" || len(msgs) != 0 {
		t.Fatalf("second page: %v %q %v %v", msgs, next, more, err)
	}
	if strings.Contains(f.bodies[1], `"cursor"`) {
		t.Fatalf("empty cursor should be omitted: %s", f.bodies[1])
	}

	f.syncResp = `{"errcode":95007,"errmsg":"invalid msg token"}`
	if _, _, _, err := c.SyncKefu(context.Background(), "bad", "wkA", ""); err == nil || !strings.Contains(err.Error(), "95007") {
		t.Fatalf("err = %v, want errcode 95007", err)
	}
}

func TestFlexBool(t *testing.T) {
	cases := map[string]bool{`true`: true, `false`: false, `1`: true, `0`: false, `"1"`: true, `"0"`: false, `null`: false, `2`: true}
	for in, want := range cases {
		var b flexBool
		if err := json.Unmarshal([]byte(in), &b); err != nil || bool(b) != want {
			t.Errorf("%s → %v, %v; want %v", in, b, err, want)
		}
	}
	var b flexBool
	if err := json.Unmarshal([]byte(`"maybe"`), &b); err == nil {
		t.Error("garbage accepted")
	}
}

func TestClientErrorsDoNotLeakSecrets(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL
	srv.Close() // connection refused from now on
	c := NewClient(base, fakeCorp, fakeSecret, nil)
	_, err := c.AccessToken(context.Background())
	if err == nil {
		t.Fatal("expected a transport error")
	}
	if strings.Contains(err.Error(), fakeSecret) || strings.Contains(err.Error(), "corpsecret") {
		t.Fatalf("error leaks the secret: %v", err)
	}
}

func TestClientHTTPStatusError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "boom", http.StatusBadGateway)
	}))
	defer srv.Close()
	c := NewClient(srv.URL, fakeCorp, fakeSecret, srv.Client())
	if _, err := c.AccessToken(context.Background()); err == nil || !strings.Contains(err.Error(), "502") {
		t.Fatalf("err = %v, want HTTP 502 error", err)
	}
}

func TestAccessTokenHonoursCallerContext(t *testing.T) {
	f, srv := newFakeAPI(t)
	f.tokenDelay = 300 * time.Millisecond
	c := NewClient(srv.URL, fakeCorp, fakeSecret, srv.Client())

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := c.AccessToken(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want DeadlineExceeded", err)
	}
	if time.Since(start) > 200*time.Millisecond {
		t.Fatal("AccessToken did not return when the caller's context expired")
	}
	// The shared fetch kept going and a patient caller gets its result.
	tok, err := c.AccessToken(context.Background())
	if err != nil || tok != "tok-1" || f.tokenCalls.Load() != 1 {
		t.Fatalf("AccessToken = %q, %v after %d fetches", tok, err, f.tokenCalls.Load())
	}
}

func TestSplitText(t *testing.T) {
	if got := SplitText("", 10); len(got) != 0 {
		t.Fatalf("empty: %q", got)
	}
	if got := SplitText("short", 10); len(got) != 1 || got[0] != "short" {
		t.Fatalf("short: %q", got)
	}
	if got := SplitText("0123456789", 10); len(got) != 1 {
		t.Fatalf("exactly max: %q", got)
	}
	// "é" is 2 bytes; a 5-byte limit must not cut it.
	got := SplitText("aééé", 4)
	if strings.Join(got, "|") != "aé|éé" {
		t.Fatalf("rune boundary: %q", got)
	}
	// 4-byte emoji.
	got = SplitText("🙂🙂🙂", 5)
	if strings.Join(got, "|") != "🙂|🙂|🙂" {
		t.Fatalf("emoji: %q", got)
	}
	// Prefer a newline in the second half of the piece.
	got = SplitText("hello\nworld wide", 10)
	if got[0] != "hello\n" {
		t.Fatalf("newline preference: %q", got)
	}
	// But not one so early that pieces become tiny.
	got = SplitText("a\nbcdefghijklmn", 10)
	if got[0] != "a\nbcdefghi" {
		t.Fatalf("early newline: %q", got)
	}
	// Invalid UTF-8 still makes progress and loses nothing.
	bad := strings.Repeat("\x80", 25)
	got = SplitText(bad, 10)
	if strings.Join(got, "") != bad || len(got) != 3 {
		t.Fatalf("invalid utf8: %q", got)
	}
	if got := SplitText(strings.Repeat("x", 5000), 0); len(got) != 3 || len(got[0]) != MaxTextBytes {
		t.Fatalf("default max: %d parts", len(got))
	}
}
