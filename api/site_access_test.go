package api

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/lorekb/lore/models"
)

// saSite creates an active site through the admin API.
func saSite(h *harness, slug string) SiteResponse {
	h.t.Helper()
	var st SiteResponse
	h.must(201, "POST", adminPath+"/sites", map[string]any{"name": "Site " + slug, "slug": slug}, h.admin).into(h.t, &st)
	return st
}

// saToken exchanges a site password for an access token.
func saToken(h *harness, slug, password string) string {
	h.t.Helper()
	var tok SiteAccessToken
	h.must(200, "POST", clientPath+"/client/sites/"+slug+"/verify-password", map[string]string{"password": password}, "").into(h.t, &tok)
	if tok.AccessToken == "" || tok.ExpiresIn != 24*3600 {
		h.t.Fatalf("token %+v", tok)
	}
	return tok.AccessToken
}

// saContent creates a published document in a collection of the site and a
// chat session of member m1 on it (owned by csSecret); it returns the
// document id.
func saContent(h *harness, siteID int64) int64 {
	h.t.Helper()
	var col CollectionResponse
	h.must(201, "POST", adminPath+"/collections", map[string]any{"title": "Guide", "site_id": siteID}, h.admin).into(h.t, &col)
	var doc DocumentResponse
	h.must(201, "POST", adminPath+"/documents", map[string]any{"title": "Secret plan", "site_id": siteID,
		"collection_id": col.ID, "status": "published", "content": "the plan"}, h.admin).into(h.t, &doc)
	now := time.Now().UTC()
	sess := &models.ChatSession{ThreadID: fmt.Sprintf("thread-%d", siteID), TenantID: doc.TenantID, SiteID: &siteID,
		MemberID: "m1", OwnerHash: chatSecretHash(csSecret), Title: "t", Source: "web_chat", CreatedAt: now, UpdatedAt: now}
	if _, err := h.d.DB.NewInsert().Model(sess).Exec(context.Background()); err != nil {
		h.t.Fatal(err)
	}
	return doc.ID
}

func TestSiteAccessPasswordFlow(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		csOwner(h) // the owner of saContent's chat sessions
		site := saSite(h, "vault")
		other := saSite(h, "annex")
		docID := saContent(h, site.ID)
		saContent(h, other.ID)
		sid := itoa(site.ID)
		t.Cleanup(func() { _ = h.s.CloseViews(context.Background()) })

		// public by default
		var st SiteAccessStatus
		h.must(200, "GET", clientPath+"/client/sites/vault/access-status", nil, "").into(t, &st)
		if !st.IsPublic || st.RequiresPassword || st.HasPassword {
			t.Fatalf("default status %+v", st)
		}
		h.must(200, "GET", clientPath+"/sites/"+sid, nil, "") // warms the client detail cache
		h.must(404, "GET", clientPath+"/client/sites/nope/access-status", nil, "")
		h.must(404, "GET", clientPath+"/client/sites/vault/access-status?tenant_slug=nope", nil, "")
		h.must(200, "GET", "/api/v1/client/sites/vault/access-status?tenant_slug=default", nil, "")
		r := h.must(400, "POST", clientPath+"/client/sites/vault/verify-password", map[string]string{"password": "x"}, "")
		if !strings.Contains(r.Msg, "no access password") {
			t.Fatalf("no password: %s", r.Raw)
		}

		// setting the password: validated, role-checked, nothing stored on bad input
		pw := adminPath + "/sites/" + sid + "/password"
		for _, body := range []any{map[string]string{"password": "abc"}, map[string]string{"password": strings.Repeat("x", 65)},
			map[string]any{"password": 1234}, map[string]string{}, map[string]any{"password": nil}, "not json"} {
			if r := h.do("PUT", pw, body, h.admin); r.Status/100 != 4 {
				t.Fatalf("bad body %v: %d", body, r.Status)
			}
		}
		if row := saRow(h, site.ID); row.RequiresPassword || row.PasswordHash != "" {
			t.Fatalf("bad input stored: %+v", row)
		}
		h.must(403, "PUT", pw, map[string]string{"password": "open-sesame"}, h.userToken(models.RoleEditor, site.ID))
		h.must(404, "PUT", pw, map[string]string{"password": "open-sesame"}, h.userToken(models.RoleSiteAdmin, other.ID))
		h.must(404, "PUT", adminPath+"/sites/99999/password", map[string]string{"password": "open-sesame"}, h.admin)
		var sr SiteResponse
		h.must(200, "PUT", pw, map[string]string{"password": "open-sesame"}, h.userToken(models.RoleSiteAdmin, site.ID)).into(t, &sr)
		if sr.IsPublic || !sr.RequiresPassword || !sr.HasPassword || strings.Contains(fmt.Sprint(sr), "open-sesame") {
			t.Fatalf("after set: %+v", sr)
		}
		if row := saRow(h, site.ID); !strings.HasPrefix(row.PasswordHash, "$2") {
			t.Fatalf("not a bcrypt hash: %q", row.PasswordHash)
		}
		h.must(200, "GET", clientPath+"/client/sites/vault/access-status", nil, "").into(t, &st)
		if st.IsPublic || !st.RequiresPassword || !st.HasPassword {
			t.Fatalf("protected status %+v", st)
		}
		var cs ClientSite
		h.must(200, "GET", clientPath+"/sites/"+sid, nil, "").into(t, &cs)
		if !cs.RequiresPassword || cs.IsPublic {
			t.Fatalf("cached client detail not refreshed: %+v", cs)
		}

		reads := []string{
			clientPath + "/documents?site_id=" + sid,
			clientPath + "/documents/" + itoa(docID),
			clientPath + "/collections:tree?site_id=" + sid + "&include_documents=true",
			clientPath + "/chat/sessions?member_id=m1&site_id=" + sid,
			clientPath + "/chat/sessions/thread-" + sid + "?member_id=m1",
			clientPath + "/chat/sessions/thread-" + sid + "/messages",
		}
		refused := func(token, msg string) {
			t.Helper()
			for _, p := range reads {
				r := h.do("GET", p, nil, "", SiteAccessHeader, token)
				want := 403 // a token sent but not valid: the client asks for the password again
				if token == "" {
					want = 401
				}
				if r.Status != want || r.Code != want || r.Msg != msg {
					t.Fatalf("GET %s with %q: %d %s", p, token, r.Status, r.Raw)
				}
			}
		}
		allowed := func(token string) {
			t.Helper()
			for _, p := range reads {
				if r := h.do("GET", p, nil, "", SiteAccessHeader, token); r.Status != 200 {
					t.Fatalf("GET %s with token: %d %s", p, r.Status, r.Raw)
				}
			}
		}
		refused("", "site access token required")
		refused("garbage", "invalid site access token")
		refused(h.admin, "invalid site access token") // an admin JWT is not a site token

		// wrong password → 401; right → a token that opens every read
		r = h.must(401, "POST", clientPath+"/client/sites/vault/verify-password", map[string]string{"password": "wrong"}, "")
		if r.Code != 401 {
			t.Fatalf("%s", r.Raw)
		}
		h.must(422, "POST", clientPath+"/client/sites/vault/verify-password", map[string]string{"password": ""}, "")
		h.must(404, "POST", clientPath+"/client/sites/nope/verify-password", map[string]string{"password": "x"}, "")
		tok := saToken(h, "vault", "open-sesame")
		allowed(tok)
		// the document list without site_id still hides the site
		var pg Page[DocumentResponse]
		h.must(200, "GET", clientPath+"/documents", nil, "").into(t, &pg)
		for _, d := range pg.List {
			if d.SiteID == site.ID {
				t.Fatalf("protected document listed without site_id")
			}
		}

		// a token of another site, a forged one and an expired one are refused
		h.must(200, "PUT", adminPath+"/sites/"+itoa(other.ID)+"/password", map[string]string{"password": "annex-pass"}, h.admin)
		otherTok := saToken(h, "annex", "annex-pass")
		refused(otherTok, "invalid site access token")
		h.must(200, "GET", clientPath+"/documents?site_id="+itoa(other.ID), nil, "", SiteAccessHeader, otherTok)
		row := saRow(h, site.ID)
		forge := func(method jwt.SigningMethod, key any, exp time.Time) string {
			c := siteAccessClaims{SiteID: site.ID, PWF: passwordFingerprint(row.PasswordHash),
				RegisteredClaims: jwt.RegisteredClaims{Issuer: siteAccessIssuer, ExpiresAt: jwt.NewNumericDate(exp)}}
			s, err := jwt.NewWithClaims(method, c).SignedString(key)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		refused(forge(jwt.SigningMethodHS256, []byte(h.d.Cfg.JWTSecret), time.Now().Add(time.Hour)), "invalid site access token")
		refused(forge(jwt.SigningMethodHS256, h.s.siteAccessKey(), time.Now().Add(-time.Minute)), "invalid site access token")
		refused(forge(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, time.Now().Add(time.Hour)), "invalid site access token")
		allowed(forge(jwt.SigningMethodHS256, h.s.siteAccessKey(), time.Now().Add(time.Hour)))

		// changing the password revokes earlier tokens
		h.must(200, "PUT", pw, map[string]string{"password": "new-secret"}, h.admin)
		refused(tok, "invalid site access token")
		h.must(401, "POST", clientPath+"/client/sites/vault/verify-password", map[string]string{"password": "open-sesame"}, "")
		tok = saToken(h, "vault", "new-secret")
		allowed(tok)

		// removing it opens the site again
		h.must(403, "DELETE", pw, nil, h.userToken(models.RoleEditor, site.ID))
		h.must(200, "DELETE", pw, nil, h.admin).into(t, &sr)
		if !sr.IsPublic || sr.RequiresPassword || sr.HasPassword {
			t.Fatalf("after clear: %+v", sr)
		}
		h.must(200, "GET", clientPath+"/client/sites/vault/access-status", nil, "").into(t, &st)
		if !st.IsPublic || st.RequiresPassword || st.HasPassword {
			t.Fatalf("cleared status %+v", st)
		}
		allowed("")
		// an inactive site is 404 for the access routes
		h.setSite(site.ID, "status = ?", models.SiteInactive)
		h.must(404, "GET", clientPath+"/client/sites/vault/access-status", nil, "")
		h.must(404, "POST", clientPath+"/client/sites/vault/verify-password", map[string]string{"password": "x"}, "")
	})
}

func saRow(h *harness, id int64) *models.Site {
	h.t.Helper()
	st, err := h.d.DB.GetSite(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return st
}

func TestSitePasswordRateLimit(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			h := newHarness(t, dialect, map[string]string{"LORE_SITE_PASSWORD_MAX_FAILURES": "3"})
			a, b := saSite(h, "a-site"), saSite(h, "b-site")
			for _, st := range []SiteResponse{a, b} {
				h.must(200, "PUT", adminPath+"/sites/"+itoa(st.ID)+"/password", map[string]string{"password": "right-pw"}, h.admin)
			}
			verify := func(slug, password string) *resp {
				return h.do("POST", clientPath+"/client/sites/"+slug+"/verify-password", map[string]string{"password": password}, "")
			}
			// a success resets the count
			verify("a-site", "wrong")
			verify("a-site", "wrong")
			saToken(h, "a-site", "right-pw")
			for i := 0; i < 3; i++ {
				if r := verify("a-site", "wrong"); r.Status != 401 {
					t.Fatalf("failure %d: %d %s", i+1, r.Status, r.Raw)
				}
			}
			r := verify("a-site", "right-pw")
			if r.Status != 429 || r.Code != 429 || r.Header.Get("Retry-After") == "" {
				t.Fatalf("blocked: %d %s", r.Status, r.Raw)
			}
			// per site: the other site is not blocked
			saToken(h, "b-site", "right-pw")
		})
	}
}

func TestSiteAPIKeys(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		site := saSite(h, "botsite")
		other := saSite(h, "elsewhere")
		keys := adminPath + "/sites/" + itoa(site.ID) + "/api-keys"

		var k APIKeyCreated
		r := h.must(201, "POST", keys, map[string]string{"name": "ci"}, h.admin)
		r.into(t, &k)
		if !strings.HasPrefix(k.Key, "lore_") || len(k.Key) != 37 || k.Name != "ci" || k.Prefix != k.Key[:11] || k.ID == 0 {
			t.Fatalf("created %+v", k)
		}
		var k2 APIKeyCreated
		h.must(201, "POST", keys, nil, h.userToken(models.RoleSiteAdmin, site.ID)).into(t, &k2) // body optional
		if k2.Key == k.Key || k2.Name != "" {
			t.Fatalf("second key %+v", k2)
		}
		h.must(422, "POST", keys, map[string]string{"name": strings.Repeat("n", 101)}, h.admin)
		h.must(403, "POST", keys, nil, h.userToken(models.RoleEditor, site.ID))
		h.must(404, "POST", keys, nil, h.userToken(models.RoleSiteAdmin, other.ID))
		h.must(404, "POST", adminPath+"/sites/99999/api-keys", nil, h.admin)

		// only the hash is stored; the list never shows keys
		var rows []models.SiteAPIKey
		if err := h.d.DB.NewSelect().Model(&rows).Order("id").Scan(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(rows) != 2 || rows[0].KeyHash != HashAPIKey(k.Key) || strings.Contains(rows[0].KeyHash, k.Key[5:]) {
			t.Fatalf("stored %+v", rows)
		}
		r = h.must(200, "GET", keys, nil, h.admin)
		var list []APIKeyResponse
		r.into(t, &list)
		if len(list) != 2 || list[0].ID != k2.ID || list[1].Prefix != k.Prefix || strings.Contains(string(r.Raw), k.Key) ||
			strings.Contains(string(r.Raw), `"key"`) || list[1].RevokedAt != nil {
			t.Fatalf("list %s", r.Raw)
		}

		// the key authenticates the bot API until revoked
		h.must(200, "GET", clientPath+"/bot/models", nil, k.Key)
		h.must(401, "GET", clientPath+"/bot/models", nil, "lore_notakey")
		st, err := h.d.DB.SiteByAPIKeyHash(context.Background(), HashAPIKey(k.Key))
		if err != nil || st.ID != site.ID {
			t.Fatalf("lookup: %v %+v", err, st)
		}
		h.must(404, "DELETE", adminPath+"/sites/"+itoa(other.ID)+"/api-keys/"+itoa(k.ID), nil, h.admin)
		h.must(422, "DELETE", keys+"/abc", nil, h.admin)
		h.must(404, "DELETE", keys+"/99999", nil, h.admin)
		var rk APIKeyResponse
		h.must(200, "DELETE", keys+"/"+itoa(k.ID), nil, h.admin).into(t, &rk)
		if rk.RevokedAt == nil || rk.ID != k.ID {
			t.Fatalf("revoked %+v", rk)
		}
		h.must(401, "GET", clientPath+"/bot/models", nil, k.Key)
		h.must(401, "POST", clientPath+"/bot/chat/completions", map[string]any{"messages": []map[string]string{{"role": "user", "content": "hi"}}}, k.Key)
		h.must(200, "GET", clientPath+"/bot/models", nil, k2.Key)
		first := *rk.RevokedAt
		h.must(200, "DELETE", keys+"/"+itoa(k.ID), nil, h.admin).into(t, &rk) // idempotent
		if !rk.RevokedAt.Equal(first) {
			t.Fatalf("revocation time moved: %v → %v", first, rk.RevokedAt)
		}
	})
}
