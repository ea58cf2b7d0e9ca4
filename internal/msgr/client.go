package msgr

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// DefaultBaseURL is the messenger platform's API origin, used when
// NewClient is given an empty base URL (tests pass an httptest URL).
const DefaultBaseURL = "https://qyapi.weixin.qq.com"

// MaxTextBytes is the platform's limit for one text message body; longer
// replies are split into several messages by SplitText.
const MaxTextBytes = 2048

// KefuOriginCustomer is the KefuSyncedMessage.Origin value for messages
// sent by the customer, the only ones a bot should answer (others are
// system events, the bot's own replies or human agents).
const KefuOriginCustomer = 3

// Error codes meaning the access token is invalid (40014) or expired
// (42001); a send failing with either is retried once with a fresh token.
const (
	errcodeInvalidToken = 40014
	errcodeExpiredToken = 42001
)

const (
	// tokenSafetyMargin is how long before the advertised expiry a cached
	// token stops being used, so in-flight requests never carry a token
	// that expires on the way.
	tokenSafetyMargin = 5 * time.Minute
	// tokenFetchTimeout bounds a shared token fetch, which runs detached
	// from any single caller's cancellation.
	tokenFetchTimeout = 30 * time.Second
	// maxResponseBytes bounds API response bodies read into memory; a full
	// sync_msg page of 1000 long texts stays well below it.
	maxResponseBytes = 8 << 20
	// kefuSyncLimit is the page size requested from sync_msg (the
	// platform's maximum).
	kefuSyncLimit = 1000
)

// APIError is a non-zero errcode returned by the platform. It is a typed
// error so callers can errors.As it and react to specific codes (for
// example rate limits) without parsing strings.
type APIError struct {
	// Op names the endpoint, e.g. "gettoken" or "kf/send_msg".
	Op string
	// Code is the platform errcode.
	Code int
	// Msg is the platform errmsg.
	Msg string
}

// Error reports the endpoint, errcode and errmsg, which is what operators
// need to look the failure up in the platform's error-code table.
func (e *APIError) Error() string {
	return fmt.Sprintf("msgr: %s: errcode %d: %s", e.Op, e.Code, e.Msg)
}

// Client calls the messenger platform's server API to reply to users. It
// caches the corp access token and shares a single in-flight token fetch
// among concurrent callers, because gettoken is rate limited. A Client is
// safe for concurrent use.
type Client struct {
	baseURL string
	corpID  string
	secret  string
	hc      *http.Client
	now     func() time.Time

	mu         sync.Mutex
	token      string
	validUntil time.Time
	inflight   *tokenCall
}

// tokenCall is one shared gettoken request; done is closed after token
// and err are set.
type tokenCall struct {
	done  chan struct{}
	token string
	err   error
}

// NewClient returns a Client for one corp id/secret pair. baseURL defaults
// to DefaultBaseURL when empty; httpClient defaults to a client with a
// 15-second timeout when nil, so a stalled platform cannot hang replies.
func NewClient(baseURL, corpID, secret string, httpClient *http.Client) *Client {
	if baseURL == "" {
		baseURL = DefaultBaseURL
	}
	if httpClient == nil {
		httpClient = &http.Client{Timeout: 15 * time.Second}
	}
	return &Client{
		baseURL: strings.TrimRight(baseURL, "/"),
		corpID:  corpID,
		secret:  secret,
		hc:      httpClient,
		now:     time.Now,
	}
}

// AccessToken returns a valid access token, fetching one from
// /cgi-bin/gettoken only when the cached token is missing or within five
// minutes of expiry. Concurrent callers share one fetch; a caller whose
// ctx ends stops waiting without cancelling the fetch for the others.
func (c *Client) AccessToken(ctx context.Context) (string, error) {
	c.mu.Lock()
	if c.token != "" && c.now().Before(c.validUntil) {
		tok := c.token
		c.mu.Unlock()
		return tok, nil
	}
	call := c.inflight
	if call == nil {
		call = &tokenCall{done: make(chan struct{})}
		c.inflight = call
		go c.fetchToken(context.WithoutCancel(ctx), call)
	}
	c.mu.Unlock()

	select {
	case <-call.done:
		return call.token, call.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// fetchToken performs the shared gettoken request and publishes the
// result to the cache and to every waiter.
func (c *Client) fetchToken(ctx context.Context, call *tokenCall) {
	ctx, cancel := context.WithTimeout(ctx, tokenFetchTimeout)
	defer cancel()
	tok, ttl, err := c.requestToken(ctx)

	c.mu.Lock()
	if err == nil && ttl > tokenSafetyMargin {
		c.token = tok
		c.validUntil = c.now().Add(ttl - tokenSafetyMargin)
	}
	c.inflight = nil
	c.mu.Unlock()

	call.token, call.err = tok, err
	close(call.done)
}

// requestToken calls /cgi-bin/gettoken once.
func (c *Client) requestToken(ctx context.Context) (string, time.Duration, error) {
	q := url.Values{"corpid": {c.corpID}, "corpsecret": {c.secret}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.baseURL+"/cgi-bin/gettoken?"+q.Encode(), nil)
	if err != nil {
		return "", 0, fmt.Errorf("msgr: gettoken: %w", err)
	}
	raw, err := c.do(req, "gettoken")
	if err != nil {
		return "", 0, err
	}
	var resp struct {
		ErrCode     int    `json:"errcode"`
		ErrMsg      string `json:"errmsg"`
		AccessToken string `json:"access_token"`
		ExpiresIn   int64  `json:"expires_in"`
	}
	if err := json.Unmarshal(raw, &resp); err != nil {
		return "", 0, fmt.Errorf("msgr: gettoken: decode response: %w", err)
	}
	if resp.ErrCode != 0 {
		return "", 0, &APIError{Op: "gettoken", Code: resp.ErrCode, Msg: resp.ErrMsg}
	}
	if resp.AccessToken == "" {
		return "", 0, errors.New("msgr: gettoken: response has no access_token")
	}
	return resp.AccessToken, time.Duration(resp.ExpiresIn) * time.Second, nil
}

// invalidate drops the cached token if it is still tok, so a token the
// platform rejected is not reused while a newer one fetched by another
// goroutine is kept.
func (c *Client) invalidate(tok string) {
	c.mu.Lock()
	if c.token == tok {
		c.token = ""
		c.validUntil = time.Time{}
	}
	c.mu.Unlock()
}

// do sends req and returns the body of a 200 response. Transport errors
// are rewrapped without the request URL, which carries the corp secret or
// access token and must not reach logs.
func (c *Client) do(req *http.Request, op string) ([]byte, error) {
	resp, err := c.hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("msgr: %s: %w", op, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("msgr: %s: read response: %w", op, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("msgr: %s: unexpected HTTP status %s", op, resp.Status)
	}
	if len(raw) > maxResponseBytes {
		return nil, fmt.Errorf("msgr: %s: response larger than %d bytes", op, maxResponseBytes)
	}
	return raw, nil
}

// apiStatus is the errcode/errmsg pair every API response carries.
type apiStatus struct {
	ErrCode int    `json:"errcode"`
	ErrMsg  string `json:"errmsg"`
}

// call POSTs payload as JSON to path with the access token and decodes the
// response into out (if non-nil). A response saying the token is invalid
// or expired invalidates the cache and retries exactly once: the platform
// rejected the request outright, so the retry cannot duplicate a send.
func (c *Client) call(ctx context.Context, op, path string, payload, out any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // send user text verbatim, not as \u003c etc.
	if err := enc.Encode(payload); err != nil {
		return fmt.Errorf("msgr: %s: encode request: %w", op, err)
	}
	for attempt := 0; ; attempt++ {
		tok, err := c.AccessToken(ctx)
		if err != nil {
			return err
		}
		u := c.baseURL + path + "?" + url.Values{"access_token": {tok}}.Encode()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(buf.Bytes()))
		if err != nil {
			return fmt.Errorf("msgr: %s: %w", op, err)
		}
		req.Header.Set("Content-Type", "application/json; charset=utf-8")
		raw, err := c.do(req, op)
		if err != nil {
			return err
		}
		var st apiStatus
		if err := json.Unmarshal(raw, &st); err != nil {
			return fmt.Errorf("msgr: %s: decode response: %w", op, err)
		}
		if (st.ErrCode == errcodeInvalidToken || st.ErrCode == errcodeExpiredToken) && attempt == 0 {
			c.invalidate(tok)
			continue
		}
		if st.ErrCode != 0 {
			return &APIError{Op: op, Code: st.ErrCode, Msg: st.ErrMsg}
		}
		if out != nil {
			if err := json.Unmarshal(raw, out); err != nil {
				return fmt.Errorf("msgr: %s: decode response: %w", op, err)
			}
		}
		return nil
	}
}

// textBody is the {"content": ...} object of a text message.
type textBody struct {
	Content string `json:"content"`
}

// appTextRequest is the message/send body for a text message.
type appTextRequest struct {
	ToUser  string   `json:"touser"`
	MsgType string   `json:"msgtype"`
	AgentID int64    `json:"agentid"`
	Text    textBody `json:"text"`
}

// appSendResponse carries the per-recipient failures message/send reports
// alongside errcode 0.
type appSendResponse struct {
	InvalidUser    string `json:"invaliduser"`
	UnlicensedUser string `json:"unlicenseduser"`
}

// SendAppText sends text to one user through application agentID via
// /cgi-bin/message/send, splitting it into several messages when it is
// longer than MaxTextBytes. The platform reports an unknown recipient with
// errcode 0 and an "invaliduser" list, which is returned as an error here
// because nothing was delivered.
func (c *Client) SendAppText(ctx context.Context, agentID, toUser, text string) error {
	agent, err := strconv.ParseInt(strings.TrimSpace(agentID), 10, 64)
	if err != nil {
		return fmt.Errorf("msgr: message/send: agent id %q is not numeric", agentID)
	}
	if toUser == "" {
		return errors.New("msgr: message/send: empty recipient")
	}
	return c.sendParts(text, func(part string) error {
		var out appSendResponse
		req := appTextRequest{ToUser: toUser, MsgType: "text", AgentID: agent, Text: textBody{Content: part}}
		if err := c.call(ctx, "message/send", "/cgi-bin/message/send", req, &out); err != nil {
			return err
		}
		if out.InvalidUser != "" || out.UnlicensedUser != "" {
			return fmt.Errorf("msgr: message/send: recipient not delivered (invaliduser=%q unlicenseduser=%q)", out.InvalidUser, out.UnlicensedUser)
		}
		return nil
	})
}

// kefuTextRequest is the kf/send_msg body for a text message.
type kefuTextRequest struct {
	ToUser   string   `json:"touser"`
	OpenKfID string   `json:"open_kfid"`
	MsgType  string   `json:"msgtype"`
	Text     textBody `json:"text"`
}

// SendKefuText sends text from customer-service account openKfID to the
// external user via /cgi-bin/kf/send_msg, splitting it into several
// messages when it is longer than MaxTextBytes.
func (c *Client) SendKefuText(ctx context.Context, openKfID, externalUserID, text string) error {
	if openKfID == "" || externalUserID == "" {
		return errors.New("msgr: kf/send_msg: open_kfid and external user id are required")
	}
	return c.sendParts(text, func(part string) error {
		req := kefuTextRequest{ToUser: externalUserID, OpenKfID: openKfID, MsgType: "text", Text: textBody{Content: part}}
		return c.call(ctx, "kf/send_msg", "/cgi-bin/kf/send_msg", req, nil)
	})
}

// sendParts splits text and sends the parts in order, stopping at the
// first failure so the user never sees a later part without an earlier
// one.
func (c *Client) sendParts(text string, send func(part string) error) error {
	parts := SplitText(text, MaxTextBytes)
	if len(parts) == 0 {
		return errors.New("msgr: refusing to send empty text")
	}
	for i, p := range parts {
		if err := send(p); err != nil {
			if len(parts) == 1 {
				return err
			}
			return fmt.Errorf("part %d of %d: %w", i+1, len(parts), err)
		}
	}
	return nil
}

// SplitText splits s into pieces of at most maxBytes bytes (MaxTextBytes
// when maxBytes <= 0) without cutting a UTF-8 character in half, so every
// piece is valid text the platform accepts. When a newline falls in the
// second half of a piece the cut is made after it, keeping paragraphs
// intact. An empty s yields no pieces.
func SplitText(s string, maxBytes int) []string {
	if maxBytes <= 0 {
		maxBytes = MaxTextBytes
	}
	var parts []string
	for len(s) > maxBytes {
		cut := maxBytes
		for back := 0; back < utf8.UTFMax && cut > 0 && !utf8.RuneStart(s[cut]); back++ {
			cut--
		}
		if cut == 0 || !utf8.RuneStart(s[cut]) {
			cut = maxBytes // invalid UTF-8: no boundary to respect
		}
		if nl := strings.LastIndexByte(s[:cut], '\n'); nl >= cut/2 {
			cut = nl + 1
		}
		parts = append(parts, s[:cut])
		s = s[cut:]
	}
	if s != "" {
		parts = append(parts, s)
	}
	return parts
}

// KefuSyncedMessage is one message pulled by SyncKefu. Content is set for
// text messages; Origin tells who sent it (KefuOriginCustomer for the
// customer) and SendTime is Unix seconds.
type KefuSyncedMessage struct {
	MsgID          string
	OpenKfID       string
	ExternalUserID string
	MsgType        string
	Content        string
	Origin         int
	SendTime       int64
}

// kefuSyncRequest is the kf/sync_msg body.
type kefuSyncRequest struct {
	Cursor   string `json:"cursor,omitempty"`
	Token    string `json:"token,omitempty"`
	OpenKfID string `json:"open_kfid,omitempty"`
	Limit    int    `json:"limit"`
}

// kefuSyncResponse is the kf/sync_msg response.
type kefuSyncResponse struct {
	NextCursor string   `json:"next_cursor"`
	HasMore    flexBool `json:"has_more"`
	MsgList    []struct {
		MsgID          string   `json:"msgid"`
		OpenKfID       string   `json:"open_kfid"`
		ExternalUserID string   `json:"external_userid"`
		SendTime       int64    `json:"send_time"`
		Origin         int      `json:"origin"`
		MsgType        string   `json:"msgtype"`
		Text           textBody `json:"text"`
	} `json:"msg_list"`
}

// SyncKefu pulls one page of kefu messages via /cgi-bin/kf/sync_msg after
// a kf_msg_or_event callback. token is the callback's Token (it unlocks
// the callback's rate allowance); cursor is the previous nextCursor, empty
// on the first call. Callers loop while hasMore is true and persist
// nextCursor so messages are not processed twice.
func (c *Client) SyncKefu(ctx context.Context, token, openKfID, cursor string) (msgs []KefuSyncedMessage, nextCursor string, hasMore bool, err error) {
	var resp kefuSyncResponse
	req := kefuSyncRequest{Cursor: cursor, Token: token, OpenKfID: openKfID, Limit: kefuSyncLimit}
	if err := c.call(ctx, "kf/sync_msg", "/cgi-bin/kf/sync_msg", req, &resp); err != nil {
		return nil, "", false, err
	}
	msgs = make([]KefuSyncedMessage, 0, len(resp.MsgList))
	for _, m := range resp.MsgList {
		km := KefuSyncedMessage{
			MsgID:          m.MsgID,
			OpenKfID:       m.OpenKfID,
			ExternalUserID: m.ExternalUserID,
			MsgType:        m.MsgType,
			Origin:         m.Origin,
			SendTime:       m.SendTime,
		}
		if m.MsgType == "text" {
			km.Content = m.Text.Content
		}
		msgs = append(msgs, km)
	}
	return msgs, resp.NextCursor, bool(resp.HasMore), nil
}

// flexBool decodes has_more, which the platform sends as 0/1 while some
// documentation shows a JSON boolean; both (and their string forms) are
// accepted.
type flexBool bool

// UnmarshalJSON accepts true/false, numbers (non-zero is true), the
// strings "true"/"false"/"0"/"1", and null (false).
func (b *flexBool) UnmarshalJSON(data []byte) error {
	s := strings.TrimSpace(string(data))
	if uq, err := strconv.Unquote(s); err == nil {
		s = uq
	}
	switch s {
	case "true":
		*b = true
		return nil
	case "false", "null", "":
		*b = false
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("msgr: has_more: unexpected value %s", data)
	}
	*b = f != 0
	return nil
}
