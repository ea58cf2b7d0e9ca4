package api

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/lorekb/lore/models"
)

// TestStaffSeeVisitorHandlesNotMemberIDs: the admin lists of a site's chat
// sessions and ratings show a strong member id as a per-site handle, never
// the id itself, which is its visitor's credential on the client API of
// every site. The handle groups the visitor's sessions, can be searched, and
// grants nothing on the client API; the visitor's own id and secret still
// work; a weak member id is shown as it is. On the old code both lists
// returned the member id, and staff of one site could read the visitor's
// chats on another with it.
func TestStaffSeeVisitorHandlesNotMemberIDs(t *testing.T) {
	const visitor = "v_3f9a1c7e5b2d4860"
	eachDialect(t, func(t *testing.T, h *harness) {
		siteA, siteB := csSite(h, "site-a", false), csSite(h, "site-b", false)
		owned := func(thread, member string, site int64) {
			coThread(h, thread, member, csSecret, site, "web_chat")
			if _, err := h.d.DB.NewUpdate().Model((*models.ChatSession)(nil)).Set("owner_member_hash = ?", memberOwnerHash(member)).
				Where("thread_id = ?", thread).Exec(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		owned("a1", visitor, siteA)
		owned("a2", visitor, siteA)
		owned("a3", "alice", siteA)
		owned("b1", visitor, siteB)
		h.must(200, "POST", chatPath+"/feedback", map[string]any{"thread_id": "a1", "message_seq": 0, "member_id": visitor, "rating": "down"}, "")

		staff := h.userToken(models.RoleSiteAdmin, siteA)
		listA := h.must(200, "GET", fmt.Sprintf("/admin/v1/sites/%d/chat-sessions", siteA), nil, staff)
		if strings.Contains(string(listA.Raw), visitor) {
			t.Fatalf("the admin session list shows the member id: %s", listA.Raw)
		}
		var l SiteChatList
		listA.into(t, &l)
		handles := map[string]string{}
		for _, s := range l.List {
			handles[s.ThreadID] = s.MemberID
		}
		handle := handles["a1"]
		if !strings.HasPrefix(handle, memberHandlePrefix) || handles["a2"] != handle || handles["a3"] != "alice" || len(l.List) != 3 {
			t.Fatalf("handles %v", handles)
		}
		var lb SiteChatList
		h.must(200, "GET", fmt.Sprintf("/admin/v1/sites/%d/chat-sessions", siteB), nil, h.admin).into(t, &lb)
		if len(lb.List) != 1 || lb.List[0].MemberID == handle || !strings.HasPrefix(lb.List[0].MemberID, memberHandlePrefix) {
			t.Fatalf("site B shows %+v (site A's handle %s)", lb.List, handle)
		}

		fb := h.must(200, "GET", fmt.Sprintf("/admin/v1/feedback/list?site_id=%d", siteA), nil, staff)
		var fl FeedbackListPage
		fb.into(t, &fl)
		if strings.Contains(string(fb.Raw), visitor) || len(fl.List) != 1 || fl.List[0].MemberID != handle {
			t.Fatalf("the feedback list: %s (handle %s)", fb.Raw, handle)
		}

		// Searching: the handle finds the visitor's sessions, the whole id
		// too; a part of the id finds nothing, so it cannot be spelled out.
		search := func(kw, field string) string {
			var r SiteChatList
			h.must(200, "GET", fmt.Sprintf("/admin/v1/sites/%d/chat-sessions?keyword=%s&search_field=%s", siteA, kw, field), nil, staff).into(t, &r)
			var ids []string
			for _, s := range r.List {
				ids = append(ids, s.ThreadID)
			}
			return strings.Join(ids, ",")
		}
		for _, c := range []struct{ kw, field, want string }{
			{handle, "member_id", "a2,a1"}, {handle, "all", "a2,a1"}, {visitor, "member_id", "a2,a1"},
			{"v_3f9a", "member_id", ""}, {"v_3f9a", "all", ""}, {"alice", "member_id", "a3"},
		} {
			if got := search(c.kw, c.field); got != c.want {
				t.Errorf("search %q in %s: %q, want %q", c.kw, c.field, got, c.want)
			}
		}

		// What staff see grants nothing on the client API, on either site.
		for _, site := range []int64{siteA, siteB} {
			var cl ChatSessionList
			h.must(200, "GET", fmt.Sprintf("%s/sessions?member_id=%s&site_id=%d", chatPath, handle, site), nil, "").into(t, &cl)
			if cl.Total != 0 || len(cl.Items) != 0 {
				t.Fatalf("the handle lists %+v", cl)
			}
		}
		for _, p := range []string{"/sessions/b1?member_id=", "/sessions/b1/messages?member_id=", "/sessions/a1/messages?member_id="} {
			if r := h.do("GET", chatPath+p+handle, nil, ""); r.Status != 404 {
				t.Fatalf("GET %s with the handle: %d %s", p, r.Status, r.Raw)
			}
		}
		if r := h.do("DELETE", chatPath+"/sessions/b1?member_id="+handle, nil, ""); r.Status != 404 {
			t.Fatalf("delete with the handle: %d %s", r.Status, r.Raw)
		}

		// The visitor's own id and secret still work.
		if got := coList(t, h, visitor); len(strings.Split(got, ",")) != 3 || !strings.Contains(got, "b1") {
			t.Fatalf("the visitor's own list: %q", got)
		}
		h.must(200, "GET", chatPath+"/sessions/b1/messages?member_id="+visitor, nil, "")
		h.must(200, "GET", chatPath+"/sessions/a3/messages", nil, "", chatSecretHeader, csSecret)
	})
}
