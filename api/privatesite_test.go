package api

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lorekb/lore/models"
)

// TestPrivateSites (is_public=false), on both dialects: a private site is
// not in the Client API's site list nor in client lists that span sites;
// its detail, documents, tree, files and chat answer 401 to anonymous readers
// and to staff of other sites, and 200 to the admin token of its own staff
// (the platform admin, an editor assigned to it). A site behind a password
// keeps its public detail (its sign-in page) and is out of the list too;
// its own staff read its content without the password. Making the site
// public again opens it at once.
func TestPrivateSites(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		pub, priv, locked := kbSite(h, "Open"), kbSite(h, "Hidden"), kbSite(h, "Vault")
		docs := map[int64]int64{}
		for _, st := range []*models.Site{pub, priv, locked} {
			docs[st.ID] = kbDocument(h, map[string]any{"title": st.Name + " guide", "content": "text", "site_id": st.ID, "status": "published"}).ID
		}
		h.must(200, "PUT", fmt.Sprintf("%s/sites/%d", adminPath, priv.ID), map[string]any{"is_public": false}, h.admin)
		h.must(200, "PUT", fmt.Sprintf("%s/sites/%d/password", adminPath, locked.ID), map[string]any{"password": "open-sesame"}, h.admin)
		editor := h.userToken(models.RoleEditor, priv.ID)
		stranger := h.userToken(models.RoleSiteAdmin, pub.ID)

		var list Page[ClientSite]
		h.must(200, "GET", clientPath+"/sites?size=100", nil, "").into(t, &list)
		if len(list.List) != 1 || list.List[0].ID != pub.ID {
			t.Fatalf("client site list: %+v", list.List)
		}
		var dl Page[DocumentResponse]
		h.must(200, "GET", clientPath+"/documents?size=100", nil, "").into(t, &dl)
		if len(dl.List) != 1 || dl.List[0].ID != docs[pub.ID] {
			t.Fatalf("client documents across sites: %+v", dl.List)
		}

		reads := func(st *models.Site) []string {
			sid := itoa(st.ID)
			return []string{clientPath + "/documents?site_id=" + sid, clientPath + "/documents/" + itoa(docs[st.ID]),
				clientPath + "/collections:tree?site_id=" + sid}
		}
		for _, path := range append(reads(priv), clientPath+"/sites/"+itoa(priv.ID), clientPath+"/sites:bySlug/"+priv.Slug) {
			for who, tok := range map[string]string{"anonymous": "", "another site's admin": stranger, "a bad token": "not-a-token"} {
				if r := h.do("GET", path, nil, tok); r.Status != 401 {
					t.Errorf("%s as %s: %d %s", path, who, r.Status, r.Raw)
				}
			}
			for who, tok := range map[string]string{"platform admin": h.admin, "its editor": editor} {
				if r := h.do("GET", path, nil, tok); r.Status != 200 {
					t.Errorf("%s as %s: %d %s", path, who, r.Status, r.Raw)
				}
			}
		}
		// A file of the private site, and its chat.
		var up FileUploadResult
		h.upload("/files:upload", h.admin, []upPart{{"file", "private.txt", []byte("private")}},
			map[string]string{"folder": "sites/" + itoa(priv.ID)}).into(t, &up)
		download := clientPath + "/files/" + up.ObjectName + ":download"
		h.must(401, "GET", download, nil, "")
		h.must(401, "GET", download, nil, stranger)
		h.must(200, "GET", download, nil, editor)
		chat := map[string]any{"input": "hello", "user": "m", "filter": map[string]any{"site_id": priv.ID}}
		if r := h.do("POST", clientPath+"/chat/responses", chat, ""); r.Status != 401 {
			t.Errorf("chat on the private site: %d %s", r.Status, r.Raw)
		}
		h.must(200, "GET", clientPath+"/sites/"+itoa(locked.ID), nil, "")
		for _, path := range reads(locked) {
			h.must(401, "GET", path, nil, "")
			h.must(200, "GET", path, nil, h.admin)
		}
		for _, path := range append(reads(pub), clientPath+"/sites/"+itoa(pub.ID)) {
			h.must(200, "GET", path, nil, "")
		}

		h.must(200, "PUT", fmt.Sprintf("%s/sites/%d", adminPath, priv.ID), map[string]any{"is_public": true}, h.admin)
		for _, path := range append(reads(priv), clientPath+"/sites/"+itoa(priv.ID), download) {
			h.must(200, "GET", path, nil, "")
		}
		h.must(200, "GET", clientPath+"/sites?size=100", nil, "").into(t, &list)
		if len(list.List) != 2 || strings.Contains(fmt.Sprint(list.List), "Vault") {
			t.Fatalf("client site list after opening: %+v", list.List)
		}
	})
}
