package api

import (
	"context"
	"strings"
	"testing"

	"github.com/lorekb/lore/models"
)

// TestStrongMemberID: the rule that makes a member id an owner credential.
func TestStrongMemberID(t *testing.T) {
	for _, m := range []string{"v_3f9a1c7e5b2d4860", "v_0123456789abcdef", "3f9a1c7e5b2d4860ab", "visitor-Xq7_Lm2-Pz9kWt"} {
		if !strongMemberID(m) || memberOwnerHash(m) == "" {
			t.Errorf("%q should be strong", m)
		}
	}
	for _, m := range []string{"", "alice", "anonymous", "visitor-7f3a", "v_3f9a1c7e5b2d486", "v_aaaaaaaaaaaaaaaa",
		"anonymous-0123456789", "ANONYMOUS_user_12345678", "v_3f9a1c7e 5b2d4860", "v_3f9a1c7e.5b2d4860", "v_3f9a1c7e5b2d486é",
		strings.Repeat("ab1c2d3e", 9)} {
		if strongMemberID(m) || memberOwnerHash(m) != "" {
			t.Errorf("%q should be weak", m)
		}
	}
	if memberOwnerHash("v_3f9a1c7e5b2d4860") == chatSecretHash("v_3f9a1c7e5b2d4860") {
		t.Error("a member's hash is the same as a secret's")
	}
}

// TestChatSessionsBelongToTheirStrongMemberID: a session opened with a strong
// member id (the reference client's visitor id) is read, listed, rated and
// deleted with that member_id alone, as with the owner secret; another
// member id, strong or weak, gets nothing; sessions without the member's
// hash (weak member ids, messenger) still need the secret. On the old code
// every member_id-only read here was 404 and the lists were empty.
func TestChatSessionsBelongToTheirStrongMemberID(t *testing.T) {
	const visitor, stranger = "v_3f9a1c7e5b2d4860", "v_0c8e2a4f6b1d3957"
	eachDialect(t, func(t *testing.T, h *harness) {
		open := csSite(h, "open", false)
		owned := func(thread, member, secret, source string) {
			coThread(h, thread, member, secret, open, source)
			if _, err := h.d.DB.NewUpdate().Model((*models.ChatSession)(nil)).Set("owner_member_hash = ?", memberOwnerHash(member)).
				Where("thread_id = ?", thread).Exec(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		owned("v1", visitor, csSecret, "web_chat")
		owned("v2", visitor, otherSecret, "web_chat")
		owned("s1", stranger, otherSecret, "web_chat")
		owned("alice1", "alice", csSecret, "web_chat")
		coThread(h, "msgr", visitor, "", open, "wecom_app") // a messenger session of the same id: no member hash

		reads := func(thread, member string) []string {
			return []string{chatPath + "/sessions/" + thread + "?member_id=" + member,
				chatPath + "/sessions/" + thread + "/messages?member_id=" + member,
				chatPath + "/sessions/" + thread + "/tool-result/" + thread + "-call?member_id=" + member}
		}
		for _, p := range append(reads("v1", visitor), reads("v2", visitor)...) {
			if r := h.do("GET", p, nil, ""); r.Status != 200 {
				t.Fatalf("GET %s by the member id alone: %d %s", p, r.Status, r.Raw)
			}
		}
		// Without member_id the session read needs the secret.
		if r := h.do("GET", chatPath+"/sessions/v1", nil, ""); r.Status != 404 {
			t.Fatalf("GET without member_id: %d", r.Status)
		}
		for _, who := range []string{stranger, "alice", "anonymous"} {
			for _, p := range reads("v1", who) {
				if r := h.do("GET", p, nil, ""); r.Status != 404 {
					t.Fatalf("GET %s: %d %s", p, r.Status, r.Raw)
				}
			}
		}
		for _, p := range append(reads("msgr", visitor), reads("alice1", "alice")...) {
			if r := h.do("GET", p, nil, ""); r.Status != 404 {
				t.Fatalf("GET %s: %d %s", p, r.Status, r.Raw)
			}
		}
		// The secret still works on its own; and a member id that does not
		// own it is 404 with the wrong secret, 403 with the right one.
		if r := h.do("GET", reads("alice1", "alice")[1], nil, "", chatSecretHeader, csSecret); r.Status != 200 {
			t.Fatalf("secret read: %d %s", r.Status, r.Raw)
		}
		if r := h.do("GET", reads("v1", stranger)[1], nil, "", chatSecretHeader, csSecret); r.Status != 403 {
			t.Fatalf("secret with another member: %d %s", r.Status, r.Raw)
		}

		list := func(member string, hdr ...string) string { t.Helper(); return coList(t, h, member, hdr...) }
		for _, c := range []struct{ member, want string }{{visitor, "v2,v1"}, {stranger, "s1"}, {"alice", ""}, {"anonymous", ""}} {
			if got := list(c.member); got != c.want {
				t.Errorf("list %s: %q, want %q", c.member, got, c.want)
			}
		}
		if got := list("alice", chatSecretHeader, csSecret); got != "alice1" {
			t.Errorf("alice with the secret: %q", got)
		}

		// Rating and deleting by the member id alone; a stranger can do neither.
		rate := func(thread, member string) int {
			return h.do("POST", chatPath+"/feedback", map[string]any{"thread_id": thread, "message_seq": 0, "member_id": member,
				"rating": "up"}, "").Status
		}
		if st := rate("v1", stranger); st != 404 {
			t.Fatalf("stranger rates: %d", st)
		}
		if st := rate("v1", visitor); st != 200 {
			t.Fatalf("visitor rates: %d", st)
		}
		if r := h.do("DELETE", chatPath+"/sessions/v1?member_id="+stranger, nil, ""); r.Status != 404 {
			t.Fatalf("stranger deletes: %d", r.Status)
		}
		h.must(200, "DELETE", chatPath+"/sessions/v1?member_id="+visitor, nil, "")
		if got := csThreadRows(h, "v1"); got != "0 0 0 0" {
			t.Fatalf("after delete: %s", got)
		}
		var del ChatSessionsDeleted
		h.must(200, "DELETE", chatPath+"/sessions?member_id=alice", nil, "").into(t, &del)
		if del.Deleted != 0 {
			t.Fatalf("a weak member id bulk-deleted %d", del.Deleted)
		}
		h.must(200, "DELETE", chatPath+"/sessions?member_id="+visitor, nil, "").into(t, &del)
		if del.Deleted != 1 || csThreadRows(h, "v2") != "0 0 0 0" || csThreadRows(h, "msgr") != "1 2 1 1" || csThreadRows(h, "s1") != "1 2 1 1" {
			t.Fatalf("bulk delete by the member id: %+v", del)
		}
	})
}
