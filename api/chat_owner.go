package api

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/models"
)

// Chat privacy. A session opened through the client API belongs to an owner
// secret and, when the request's member id is strong, to that member id too: the first chat request without one gets a new
// secret, returned once, in the X-Lore-Session-Secret response header and in
// the lore_chat_secret cookie (HttpOnly). Every later request that carries
// it (header, else cookie) opens its sessions under it, and only a request
// that carries it may continue, re-attach to, list, read (messages, tool
// results), rate or delete them; to anyone else they do not exist (404).
// The database keeps only the secret's SHA-256. Messenger sessions have no
// owner secret, so the client API never shows them.
//
// A strong member id (strongMemberID: an unguessable per-visitor id such as
// the reference client's getVisitorId(), "v_" and 16 random hex digits kept
// in localStorage and sent as member_id / user on every chat call) is a
// bearer credential like the secret: a session opened with one also keeps
// its hash (chat_sessions.owner_member_hash), and a request naming that
// member id continues, re-attaches to, lists, reads, rates and deletes it
// without the secret. This is what serves the reference client cross-origin,
// where it sends no cookie and reads no custom header. A weak member id
// ("alice", "anonymous", short or odd characters) grants nothing: the secret
// is needed.
//
// A browser needs no code for this: the cookie comes with the first answer
// and goes back on every request to the same origin (the reference's client
// behind its /api-proxy rewrite, or any same-origin reverse proxy). Its
// attributes: Path=/, HttpOnly, a year's Max-Age, SameSite=Lax; Secure over
// https; and SameSite=None; Secure when the request came over https from
// another origin that LORE_CORS_ORIGINS admits with credentials (a client
// that sends credentials: "include"). See docs/security.md, "Chat privacy".

const (
	// chatSecretHeader carries the owner secret both ways.
	chatSecretHeader = "X-Lore-Session-Secret"
	// chatSecretCookie is the cookie that carries it for browsers.
	chatSecretCookie = "lore_chat_secret"
	// chatSecretMaxAge is the cookie's lifetime in seconds (a year).
	chatSecretMaxAge = 365 * 24 * 3600
)

// chatSecretGivenDoc documents the secret on the routes that open sessions.
const chatSecretGivenDoc = "A request without an owner secret gets one with the answer that opened its session: the " +
	chatSecretHeader + " response header and the " + chatSecretCookie + " cookie (HttpOnly). Send it back (the header, " +
	"or the cookie, which a browser does by itself on the same origin) to continue the thread and to read, rate or " +
	"delete its sessions; previous_response_id of another owner's thread is 403. A strong member id (user: " + strongMemberDoc +
	") owns the sessions it opens as the secret does."

// chatOwner is the owner secret of a chat request.
type chatOwner struct {
	secret string
	hash   string
	// fresh: made for this request; sent to the caller once its session
	// exists (giveChatSecret).
	fresh bool
}

// validChatSecret: 32 to 128 characters of the URL-safe base64 alphabet
// (ours are 43: 32 random bytes).
func validChatSecret(v string) bool {
	if len(v) < 32 || len(v) > 128 {
		return false
	}
	for i := 0; i < len(v); i++ {
		ch := v[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '_') {
			return false
		}
	}
	return true
}

func chatSecretHash(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// callerChatSecret is the owner secret the request carries: the header
// (malformed: 422), else a well-formed cookie (a malformed one is ignored),
// else "".
func callerChatSecret(c *fiber.Ctx) (string, error) {
	if h := strings.TrimSpace(c.Get(chatSecretHeader)); h != "" {
		if !validChatSecret(h) {
			return "", Invalid("%s: not a session secret (32 to 128 characters: letters, digits, '-', '_')", chatSecretHeader)
		}
		return h, nil
	}
	if ck := c.Cookies(chatSecretCookie); validChatSecret(ck) {
		return ck, nil
	}
	return "", nil
}

// chatOwnerOf is the owner of the sessions a chat request opens: its own
// secret, or a new one.
func chatOwnerOf(c *fiber.Ctx) (chatOwner, error) {
	secret, err := callerChatSecret(c)
	if err != nil || secret != "" {
		return chatOwner{secret: secret, hash: chatSecretHash(secret)}, err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return chatOwner{}, err
	}
	secret = base64.RawURLEncoding.EncodeToString(b)
	return chatOwner{secret: secret, hash: chatSecretHash(secret), fresh: true}, nil
}

// giveChatSecret returns a fresh secret to the caller (header and cookie),
// once its session exists; a secret the caller sent is not echoed.
func (s *Server) giveChatSecret(c *fiber.Ctx, o chatOwner) {
	if !o.fresh {
		return
	}
	c.Set(chatSecretHeader, o.secret)
	ck := &fiber.Cookie{Name: chatSecretCookie, Value: o.secret, Path: "/", MaxAge: chatSecretMaxAge,
		HTTPOnly: true, SameSite: fiber.CookieSameSiteLaxMode}
	if c.Protocol() == "https" {
		ck.Secure = true
		if s.credentialedCrossOrigin(c) {
			ck.SameSite = fiber.CookieSameSiteNoneMode
		}
	}
	c.Cookie(ck)
}

// credentialedCrossOrigin: the request comes from another origin that the
// CORS policy admits with credentials.
func (s *Server) credentialedCrossOrigin(c *fiber.Ctx) bool {
	origin := c.Get(fiber.HeaderOrigin)
	if origin == "" || s.corsPolicy == nil || strings.EqualFold(origin, c.BaseURL()) {
		return false
	}
	_, creds := s.corsPolicy.allow(origin)
	return creds
}

// ownsChatSession: the request carries the session's owner secret, or
// names (member) the strong member id the session was opened with. Sessions
// with neither (messenger sessions, sessions stored before owner secrets)
// are never owned through the client API.
func ownsChatSession(c *fiber.Ctx, sess *models.ChatSession, member string) (bool, error) {
	secret, err := callerChatSecret(c)
	if err != nil {
		return false, err
	}
	if secret != "" && sess.OwnerHash != "" &&
		subtle.ConstantTimeCompare([]byte(chatSecretHash(secret)), []byte(sess.OwnerHash)) == 1 {
		return true, nil
	}
	return ownsAsMember(member, sess), nil
}

// strongMemberID: a member id that may stand as an owner credential: 18 to
// 64 characters of [A-Za-z0-9_-] (16 random characters after a short prefix
// such as the reference's "v_"), at least 6 of them distinct (no
// "aaaaaaaaaaaaaaaaaa"; 16 random hex digits have fewer with odds of about
// 1e-9), and not containing "anonymous".
func strongMemberID(m string) bool {
	if len(m) < 18 || len(m) > 64 {
		return false
	}
	seen := map[byte]bool{}
	for i := 0; i < len(m); i++ {
		ch := m[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '_') {
			return false
		}
		seen[ch] = true
	}
	return len(seen) >= 6 && !strings.Contains(strings.ToLower(m), "anonymous")
}

// memberOwnerHash is the owner hash of a strong member id ("" for a weak
// one); domain-separated from the secrets' hashes.
func memberOwnerHash(member string) string {
	if !strongMemberID(member) {
		return ""
	}
	return chatSecretHash("member:" + member)
}

// ownsAsMember: member is strong and is the member id the session was
// opened with.
func ownsAsMember(member string, sess *models.ChatSession) bool {
	h := memberOwnerHash(member)
	return h != "" && sess.OwnerMemberHash != "" && subtle.ConstantTimeCompare([]byte(h), []byte(sess.OwnerMemberHash)) == 1
}

// callerOwnerHash is the hash of the request's owner secret ("" without one).
func callerOwnerHash(c *fiber.Ctx) (string, error) {
	secret, err := callerChatSecret(c)
	if err != nil || secret == "" {
		return "", err
	}
	return chatSecretHash(secret), nil
}

// memberHandlePrefix starts the handle staff see in place of a strong
// member id; its ':' keeps the handle itself from ever being a strong
// member id.
const memberHandlePrefix = "visitor:"

// memberHandle is the member id as staff see it (the admin lists of a
// site's sessions and ratings, the chat runs' job metadata). A strong member
// id is a bearer credential of its visitor on every site, so staff get a
// pseudonym instead: an HMAC of the site and the member id under the
// server's secret key, stable so a visitor's sessions can still be grouped,
// different per site, and useless on the client API. Weak member ids grant
// nothing and are shown as they are.
func (s *Server) memberHandle(siteID int64, member string) string {
	if !strongMemberID(member) {
		return member
	}
	key := s.d.Cfg.SecretKey
	if key == "" {
		key = s.d.Cfg.JWTSecret
	}
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write([]byte("lore chat member handle\x00" + strconv.FormatInt(siteID, 10) + "\x00" + member))
	return memberHandlePrefix + hex.EncodeToString(mac.Sum(nil)[:8])
}
