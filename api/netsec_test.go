package api

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/models"
	"github.com/valyala/fasthttp"
)

// TestZonedProviderURLsAreRefused: an IPv6 zone does not take an internal
// or metadata address past the outbound guard of ai-config and the
// document processors.
func TestZonedProviderURLsAreRefused(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	for _, u := range []string{"http://[::1%25lo]:6379/", "http://[fd00:ec2::254%25eth0]/", "http://[fe80::a9fe:a9fe%25eth0]/",
		"http://[fc00::1%251]/"} {
		r := h.do("PUT", adminPath+"/system-configs/ai-config", map[string]any{"rerank": map[string]any{"provider": "cohere",
			"model": "rerank-v3", "base_url": u}}, h.admin)
		if r.Status != 422 || r.Code != 422 || !strings.Contains(r.Msg, "rerank.base_url") {
			t.Errorf("ai-config rerank %s: %d %s", u, r.Status, r.Raw)
		}
		r = h.do("PUT", adminPath+"/system-configs/doc-processor", map[string]any{"processors": []map[string]any{{"name": "D",
			"type": "Docling", "base_url": u, "enabled": true}}}, h.admin)
		if r.Status != 422 || !strings.Contains(r.Msg, "base_url") {
			t.Errorf("doc-processor %s: %d %s", u, r.Status, r.Raw)
		}
	}
}

// TestClientIP: X-Forwarded-For is walked from the right past the trusted
// proxies; what a client wrote left of that is never believed, and the
// header of an untrusted peer is ignored.
func TestClientIP(t *testing.T) {
	s := &Server{proxies: trustedProxies([]string{"10.0.0.0/8", "192.0.2.1", "bogus"}, nil)}
	app := fiber.New()
	for _, tc := range []struct {
		peer string
		xff  []string
		want string
	}{
		{"10.0.0.1", nil, "10.0.0.1"},
		{"10.0.0.1", []string{"203.0.113.7"}, "203.0.113.7"},
		{"10.0.0.1", []string{"9.9.1.1, 203.0.113.7"}, "203.0.113.7"},
		{"10.0.0.1", []string{"9.9.2.1, 203.0.113.7, 10.3.3.3"}, "203.0.113.7"},
		{"10.0.0.1", []string{"9.9.3.1", "203.0.113.7,192.0.2.1"}, "203.0.113.7"},
		{"10.0.0.1", []string{"203.0.113.7", "10.4.4.4"}, "203.0.113.7"},
		{"10.0.0.1", []string{"2001:db8::1"}, "2001:db8::1"},
		{"10.0.0.1", []string{"::ffff:203.0.113.7"}, "203.0.113.7"},
		{"10.0.0.1", []string{"203.0.113.7, not-an-ip"}, "10.0.0.1"},
		{"10.0.0.1", []string{"203.0.113.7, "}, "10.0.0.1"},
		{"10.0.0.1", []string{"10.5.5.5"}, "10.0.0.1"},
		{"10.0.0.1", []string{""}, "10.0.0.1"},
		{"198.51.100.9", []string{"203.0.113.7"}, "198.51.100.9"},
		{"198.51.100.9", []string{"1.2.3.4, 10.0.0.1"}, "198.51.100.9"},
	} {
		var req fasthttp.Request
		for _, v := range tc.xff {
			req.Header.Add("X-Forwarded-For", v)
		}
		var fctx fasthttp.RequestCtx
		fctx.Init(&req, &net.TCPAddr{IP: net.ParseIP(tc.peer), Port: 4321}, nil)
		c := app.AcquireCtx(&fctx)
		got := s.clientIP(c)
		app.ReleaseCtx(c)
		if got != tc.want {
			t.Errorf("peer %s, X-Forwarded-For %q: %q, want %q", tc.peer, tc.xff, got, tc.want)
		}
	}
	if got := (&Server{}).clientIP(app.AcquireCtx(&fasthttp.RequestCtx{})); got != "0.0.0.0" {
		t.Errorf("no proxies, no peer: %q", got)
	}
}

// TestSpoofedForwardedForSharesOneBucket: behind a proxy that appends its
// peer, a client that makes up a new leftmost X-Forwarded-For entry for
// each guess still meets its own limit.
func TestSpoofedForwardedForSharesOneBucket(t *testing.T) {
	h := newHarness(t, "sqlite", map[string]string{"LORE_SITE_PASSWORD_MAX_FAILURES": "3"})
	st := saSite(h, "spoofed")
	h.must(200, "PUT", adminPath+"/sites/"+itoa(st.ID)+"/password", map[string]string{"password": "right-pw"}, h.admin)
	counts := map[int]int{}
	for i := range 8 {
		r := h.do("POST", clientPath+"/client/sites/spoofed/verify-password", map[string]string{"password": "wrong"}, "",
			"X-Forwarded-For", "9.9."+strconv.Itoa(i)+".1, 203.0.113.7")
		counts[r.Status]++
	}
	if counts[401] != 3 || counts[429] != 5 {
		t.Fatalf("8 guesses with spoofed entries: %v (want 3 × 401, 5 × 429)", counts)
	}
	// Another client behind the proxy has its own bucket.
	h.must(401, "POST", clientPath+"/client/sites/spoofed/verify-password", map[string]string{"password": "wrong"}, "",
		"X-Forwarded-For", "203.0.113.8")
}

// TestClientIPWithoutForwardedForIsThePeer: a request through a trusted
// proxy that sent no X-Forwarded-For is the proxy's, not an empty address.
func TestClientIPWithoutForwardedForIsThePeer(t *testing.T) {
	h := newHarness(t, "sqlite", nil) // the in-process client (0.0.0.0) is a trusted proxy
	var site, doc struct {
		ID int64 `json:"id"`
	}
	h.must(201, "POST", adminPath+"/sites", map[string]any{"name": "IP"}, h.admin).into(t, &site)
	h.must(201, "POST", adminPath+"/documents", map[string]any{"site_id": site.ID, "title": "d", "status": "published"}, h.admin).into(t, &doc)
	h.must(200, "GET", "/v1/documents/"+itoa(doc.ID), nil, "")
	if err := h.s.FlushViews(context.Background()); err != nil {
		t.Fatal(err)
	}
	var ev models.ViewEvent
	if err := h.d.DB.NewSelect().Model(&ev).Limit(1).Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ev.IP != "0.0.0.0" {
		t.Fatalf("recorded IP %q, want the peer 0.0.0.0", ev.IP)
	}
}

// TestLoginLockIsPerAddress: failures from one address lock the account
// for that address only; failures from many addresses together lock it for
// everyone at the account-wide limit, which parallel guesses cannot pass.
func TestLoginLockIsPerAddress(t *testing.T) {
	h := newHarness(t, "sqlite", map[string]string{"LORE_LOGIN_MAX_FAILURES": "5", "LORE_LOGIN_ACCOUNT_MAX_FAILURES": "20",
		"LORE_LOGIN_ACCOUNT_LOCK": "1m"})
	login := func(email, pw, ip string) *resp {
		return h.do("POST", adminPath+"/users:login", map[string]string{"email": email, "password": pw}, "", "X-Forwarded-For", ip)
	}
	h.userToken("editor")
	email := "editor" + strconv.Itoa(h.users) + "@example.com"
	for range 5 {
		if r := login(email, "wrong-password", "198.51.100.1"); r.Status != 400 {
			t.Fatalf("wrong password: %d %s", r.Status, r.Raw)
		}
	}
	if r := login(email, "password123", "198.51.100.1"); r.Status != 429 || r.Header.Get("Retry-After") == "" {
		t.Fatalf("right password from the locked address: %d %s", r.Status, r.Raw)
	}
	if r := login(email, "password123", "198.51.100.2"); r.Status != 200 {
		t.Fatalf("right password from another address: %d %s", r.Status, r.Raw)
	}
	if r := login(email, "password123", "198.51.100.1"); r.Status != 429 {
		t.Fatalf("the locked address after a success elsewhere: %d %s", r.Status, r.Raw)
	}

	h.userToken("editor")
	email = "editor" + strconv.Itoa(h.users) + "@example.com"
	var next atomic.Int64
	counts := parallel(150, func() *resp {
		return login(email, "wrong-password", "203.0.113."+strconv.FormatInt(next.Add(1), 10))
	})
	if counts[400] != 20 || counts[429] != 130 {
		t.Fatalf("150 parallel guesses from 150 addresses: %v (want 20 × 400, 130 × 429)", counts)
	}
	if r := login(email, "password123", "198.51.100.3"); r.Status != 429 || r.Header.Get("Retry-After") == "" {
		t.Fatalf("right password during the account-wide lock: %d %s", r.Status, r.Raw)
	}
}

// serve runs the harness's server on a real listener until the test ends.
func serve(t *testing.T, h *harness) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = h.s.App().Listener(ln); close(done) }()
	t.Cleanup(func() { _ = h.s.App().Shutdown(); <-done })
	return ln.Addr().String()
}

// rawExchange writes raw to a new connection and reads every response
// until the server closes it.
func rawExchange(t *testing.T, addr, raw string) ([]*http.Response, []string) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(15 * time.Second))
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	var out []*http.Response
	var bodies []string
	for {
		res, err := http.ReadResponse(br, nil)
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return out, bodies
		}
		if err != nil {
			t.Fatalf("reading a response: %v (after %d)", err, len(out))
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		out, bodies = append(out, res), append(bodies, string(b))
	}
}

// TestMalformedRequestsEchoNothingAndClose: a request fasthttp cannot read
// is answered with a fixed 400 that quotes none of its headers, and a
// request with both Content-Length and Transfer-Encoding is refused and
// its connection closed, so nothing pipelined behind it is served.
func TestMalformedRequestsEchoNothingAndClose(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	addr := serve(t, h)
	secrets := "Authorization: Bearer secret-token-123\r\nCookie: sid=secret-cookie-456\r\n"
	for name, raw := range map[string]string{
		"bad header key":   "GET /health HTTP/1.1\r\nHost: x\r\n" + secrets + "Bad\x01Key: v\r\n\r\n",
		"bad header value": "GET /health HTTP/1.1\r\nHost: x\r\n" + secrets + "X-Thing: a\x7fb\r\n\r\n",
		"bad content len":  "POST /health HTTP/1.1\r\nHost: x\r\n" + secrets + "Content-Length: nope\r\n\r\n",
		"bad encoding":     "POST /health HTTP/1.1\r\nHost: x\r\n" + secrets + "Transfer-Encoding: gzip\r\n\r\n",
	} {
		res, bodies := rawExchange(t, addr, raw+"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
		if len(res) != 1 || res[0].StatusCode != 400 {
			t.Errorf("%s: %d responses %v", name, len(res), bodies)
			continue
		}
		if strings.Contains(bodies[0], "secret") || strings.Contains(bodies[0], "Bearer") || !strings.Contains(bodies[0], `"code":400`) {
			t.Errorf("%s: answer %s", name, bodies[0])
		}
	}
	for name, raw := range map[string]string{
		"length first":   "POST /health HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"encoding first": "POST /health HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\ncontent-length: 5\r\n\r\n0\r\n\r\n",
	} {
		res, bodies := rawExchange(t, addr, raw+"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
		if len(res) != 1 || res[0].StatusCode != 400 || !res[0].Close || !strings.Contains(bodies[0], "Transfer-Encoding") {
			t.Errorf("%s: %d responses %v", name, len(res), bodies)
		}
	}
	// A well-formed pipeline is still served in full.
	res, bodies := rawExchange(t, addr, "GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	if len(res) != 2 || res[0].StatusCode != 200 || res[1].StatusCode != 200 {
		t.Fatalf("well-formed pipeline: %d responses %v", len(res), bodies)
	}
}
