package api

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/lorekb/lore/models"
	"github.com/valyala/fasthttp"
)

// otherSecret is a second client's owner secret.
const otherSecret = "someone-elses-secret-0123456789abcdefghijk"

// coThread inserts a full thread (csFullThread) and gives it an owner
// secret ("" for none) and, when site > 0, a site and a source.
func coThread(h *harness, thread, member, secret string, site int64, source string) {
	h.t.Helper()
	csFullThread(h, thread, member)
	owner := ""
	if secret != "" {
		owner = chatSecretHash(secret)
	}
	q := h.d.DB.NewUpdate().Model((*models.ChatSession)(nil)).Set("owner_hash = ?", owner).Set("source = ?", source).
		Where("thread_id = ?", thread)
	if site > 0 {
		q = q.Set("site_id = ?", site)
	}
	if _, err := q.Exec(context.Background()); err != nil {
		h.t.Fatal(err)
	}
}

// coList is the comma-separated thread ids GET /chat/sessions?member_id=
// lists with the given headers.
func coList(t *testing.T, h *harness, member string, hdr ...string) string {
	t.Helper()
	var l ChatSessionList
	h.must(200, "GET", chatPath+"/sessions?member_id="+member, nil, "", hdr...).into(t, &l)
	var ids []string
	for _, s := range l.Items {
		ids = append(ids, s.ThreadID)
	}
	return strings.Join(ids, ",")
}

// TestChatSessionsBelongToTheirOwnerSecret: a member id grants nothing by
// itself (issue 16.7). Only the owner secret a session was opened under
// (header or cookie) reads, lists, rates or deletes it; messenger sessions
// are never readable through the client API; the bulk delete keeps other
// owners' sessions and enforces the site password. On the old code every
// read below with member_id alone answered 200 and ?member_id=anonymous
// listed every anonymous session.
func TestChatSessionsBelongToTheirOwnerSecret(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		open := csSite(h, "open", false)
		coThread(h, "mine", "m1", csSecret, open, "web_chat")
		coThread(h, "theirs", "m1", otherSecret, open, "web_chat")
		coThread(h, "anon-mine", "anonymous", csSecret, open, "web_chat")
		coThread(h, "anon-theirs", "anonymous", otherSecret, open, "web_chat")
		coThread(h, "msgr", "zhangsan", "", open, "wecom_app")
		coThread(h, "legacy", "m1", "", open, "web_chat") // stored before owner secrets

		none := []string{chatSecretHeader, ""}
		other := []string{chatSecretHeader, otherSecret}
		mine := []string{chatSecretHeader, csSecret}
		cookie := []string{"Cookie", chatSecretCookie + "=" + csSecret}
		reads := func(thread, member string) []string {
			return []string{chatPath + "/sessions/" + thread + "?member_id=" + member,
				chatPath + "/sessions/" + thread + "/messages?member_id=" + member,
				chatPath + "/sessions/" + thread + "/tool-result/" + thread + "-call?member_id=" + member,
				chatPath + "/responses/" + thread + "?member_id=" + member}
		}
		for _, who := range [][]string{none, other} {
			for _, p := range reads("mine", "m1") {
				if r := h.do("GET", p, nil, "", who...); r.Status != 404 {
					t.Fatalf("GET %s with %q: %d %s", p, who[1], r.Status, r.Raw)
				}
			}
			if r := h.do("DELETE", chatPath+"/sessions/mine?member_id=m1", nil, "", who...); r.Status != 404 {
				t.Fatalf("delete with %q: %d %s", who[1], r.Status, r.Raw)
			}
			if r := h.do("POST", chatPath+"/feedback", map[string]any{"thread_id": "mine", "message_seq": 0, "member_id": "m1",
				"rating": "up"}, "", who...); r.Status != 404 {
				t.Fatalf("feedback with %q: %d %s", who[1], r.Status, r.Raw)
			}
		}
		if got := csThreadRows(h, "mine"); got != "1 2 1 1" {
			t.Fatalf("refused requests changed the thread: %s", got)
		}
		// The owner reads with the header or the cookie.
		for _, who := range [][]string{mine, cookie} {
			for _, p := range reads("mine", "m1")[:3] {
				if r := h.do("GET", p, nil, "", who...); r.Status != 200 {
					t.Fatalf("GET %s with %s: %d %s", p, who[0], r.Status, r.Raw)
				}
			}
		}
		// A messenger session and a session without an owner are nobody's.
		for _, who := range [][]string{none, mine, other} {
			for _, p := range append(reads("msgr", "zhangsan"), reads("legacy", "m1")...) {
				if r := h.do("GET", p, nil, "", who...); r.Status != 404 {
					t.Fatalf("GET %s with %q: %d %s", p, who[1], r.Status, r.Raw)
				}
			}
		}
		// Lists show the caller's own sessions only.
		list := func(member string, who []string) string { t.Helper(); return coList(t, h, member, who...) }
		for _, c := range []struct {
			member string
			who    []string
			want   string
		}{{"anonymous", none, ""}, {"anonymous", mine, "anon-mine"}, {"anonymous", cookie, "anon-mine"},
			{"anonymous", other, "anon-theirs"}, {"m1", none, ""}, {"zhangsan", mine, ""}, {"zhangsan", none, ""}} {
			if got := list(c.member, c.who); got != c.want {
				t.Errorf("list %s with %q: %q, want %q", c.member, c.who[1], got, c.want)
			}
		}
		// A malformed secret is bad input.
		for _, bad := range []string{"short", strings.Repeat("x", 129), strings.Repeat("é", 20)} {
			if r := h.do("GET", chatPath+"/sessions?member_id=m1", nil, "", chatSecretHeader, bad); r.Status != 422 {
				t.Fatalf("secret %q: %d %s", bad, r.Status, r.Raw)
			}
		}
		// The bulk delete without a secret deletes nothing; with one, only
		// its owner's sessions.
		var del ChatSessionsDeleted
		h.must(200, "DELETE", chatPath+"/sessions?member_id=m1", nil, "", none...).into(t, &del)
		if del.Deleted != 0 || csThreadRows(h, "mine") != "1 2 1 1" {
			t.Fatalf("bulk delete without a secret: %+v", del)
		}
		h.must(200, "DELETE", chatPath+"/sessions?member_id=m1", nil, "", mine...).into(t, &del)
		if del.Deleted != 1 || csThreadRows(h, "mine") != "0 0 0 0" || csThreadRows(h, "theirs") != "1 2 1 1" ||
			csThreadRows(h, "legacy") != "1 2 1 1" {
			t.Fatalf("bulk delete: %+v, theirs %s", del, csThreadRows(h, "theirs"))
		}
	})
}

// TestChatBulkDeleteEnforcesTheSitePassword: DELETE /chat/sessions needs a
// password-protected site's token as the single delete does; without
// site_id it keeps such sessions (on the old code it deleted them all).
func TestChatBulkDeleteEnforcesTheSitePassword(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		csOwner(h)
		vault := saSite(h, "vault")
		h.must(200, "PUT", adminPath+"/sites/"+itoa(vault.ID)+"/password", map[string]string{"password": "open-sesame"}, h.admin)
		open := csSite(h, "open", false)
		coThread(h, "locked", "m1", csSecret, vault.ID, "web_chat")
		coThread(h, "free", "m1", csSecret, open, "web_chat")

		h.must(401, "DELETE", chatPath+"/sessions?member_id=m1&site_id="+itoa(vault.ID), nil, "")
		h.must(401, "DELETE", chatPath+"/sessions/locked?member_id=m1", nil, "")
		var del ChatSessionsDeleted
		h.must(200, "DELETE", chatPath+"/sessions?member_id=m1", nil, "").into(t, &del)
		if del.Deleted != 1 || csThreadRows(h, "locked") != "1 2 1 1" || csThreadRows(h, "free") != "0 0 0 0" {
			t.Fatalf("without a site: %+v, locked %s", del, csThreadRows(h, "locked"))
		}
		tok := saToken(h, "vault", "open-sesame")
		h.must(200, "DELETE", chatPath+"/sessions?member_id=m1&site_id="+itoa(vault.ID), nil, "", SiteAccessHeader, tok).into(t, &del)
		if del.Deleted != 1 || csThreadRows(h, "locked") != "0 0 0 0" {
			t.Fatalf("with the token: %+v", del)
		}
	})
}

// TestChatSecretCookie: a fresh secret goes out once, in the header and an
// HttpOnly cookie for every path; SameSite=Lax on the same origin, None and
// Secure for a credentialed cross-origin caller over https.
func TestChatSecretCookie(t *testing.T) {
	h := newHarness(t, "sqlite", map[string]string{"LORE_CORS_ORIGINS": "https://docs.example.com"})
	cookieOf := func(headers ...string) *http.Cookie {
		t.Helper()
		fctx := &fasthttp.RequestCtx{}
		fctx.Request.Header.SetHost("api.example.com")
		for i := 0; i+1 < len(headers); i += 2 {
			fctx.Request.Header.Set(headers[i], headers[i+1])
		}
		app := h.s.App()
		c := app.AcquireCtx(fctx)
		defer app.ReleaseCtx(c)
		o, err := chatOwnerOf(c)
		if err != nil {
			t.Fatal(err)
		}
		h.s.giveChatSecret(c, o)
		hdr := http.Header{}
		for _, v := range fctx.Response.Header.Cookies() {
			hdr.Add("Set-Cookie", string(v))
		}
		for _, ck := range (&http.Response{Header: hdr}).Cookies() {
			if ck.Name == chatSecretCookie {
				if string(fctx.Response.Header.Peek(chatSecretHeader)) != ck.Value || !validChatSecret(ck.Value) {
					t.Fatalf("header %q, cookie %q", fctx.Response.Header.Peek(chatSecretHeader), ck.Value)
				}
				return ck
			}
		}
		return nil
	}
	ck := cookieOf()
	if ck == nil || !ck.HttpOnly || ck.Path != "/" || ck.SameSite != http.SameSiteLaxMode || ck.Secure || ck.MaxAge < 300*24*3600 {
		t.Fatalf("same origin: %+v", ck)
	}
	ck = cookieOf("Origin", "https://docs.example.com", "X-Forwarded-Proto", "https")
	if ck == nil || ck.SameSite != http.SameSiteNoneMode || !ck.Secure {
		t.Fatalf("cross origin over https: %+v", ck)
	}
	ck = cookieOf("Origin", "https://evil.example.org", "X-Forwarded-Proto", "https")
	if ck == nil || ck.SameSite != http.SameSiteLaxMode || !ck.Secure {
		t.Fatalf("an origin CORS does not admit: %+v", ck)
	}
	// A caller that sent its secret is not given another.
	if ck := cookieOf(chatSecretHeader, csSecret); ck != nil {
		t.Fatalf("secret sent again: %+v", ck)
	}
	if ck := cookieOf("Cookie", chatSecretCookie+"="+csSecret); ck != nil {
		t.Fatalf("secret sent again: %+v", ck)
	}
}

// TestBadChatSecretIsRefused extends the bad-input suite: a malformed
// owner secret on any chat route is 422 and changes nothing.
func TestBadChatSecretIsRefused(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	site := csSite(h, "open", false)
	coThread(h, "th", "m1", csSecret, site, "web_chat")
	before := h.fingerprint()
	bodies := map[string]any{
		"/chat/responses":   map[string]any{"input": "hi", "filter": map[string]any{"site_id": site}},
		"/chat/completions": map[string]any{"messages": []map[string]string{{"role": "user", "content": "hi"}}, "filter": map[string]any{"site_id": site}},
		"/chat/feedback":    map[string]any{"thread_id": "th", "message_seq": 0, "member_id": "m1", "rating": "up"},
	}
	n := 0
	for _, r := range h.s.Routes() {
		if r.Surface != Client || !strings.HasPrefix(r.Path, "/chat") {
			continue
		}
		path := clientPath + strings.NewReplacer("{thread_id}", "th", "{tool_call_id}", "th-call").Replace(r.Path) + "?member_id=m1"
		for _, bad := range []string{"short", "has spaces in it but is long enough to pass", strings.Repeat("z", 200)} {
			res := h.do(r.Method, path, bodies[r.Path], "", chatSecretHeader, bad)
			if res.Status != 422 || res.Code != 422 || !strings.Contains(string(res.Raw), chatSecretHeader) {
				t.Errorf("%s %s with secret %.20q: %d %s", r.Method, path, bad, res.Status, res.Raw)
			}
			n++
		}
	}
	if n < 8*3 {
		t.Fatalf("only %d chat requests checked", n)
	}
	if after := h.fingerprint(); after != before {
		t.Fatalf("changed:\n%s\n%s", before, after)
	}
}
