package api

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/lorekb/lore/models"
)

// fingerprint summarises every table: row counts and the latest update, so a
// refused request that changed anything shows up.
func (h *harness) fingerprint() string {
	ctx := context.Background()
	var b strings.Builder
	for _, m := range models.All() {
		n, err := h.d.DB.NewSelect().Model(m).Count(ctx)
		if err != nil {
			h.t.Fatal(err)
		}
		fmt.Fprintf(&b, "%T=%d ", m, n)
		if _, ok := reflect.TypeOf(m).Elem().FieldByName("UpdatedAt"); ok {
			var last time.Time
			_ = h.d.DB.NewSelect().Model(m).ColumnExpr("MAX(updated_at)").Scan(ctx, &last)
			fmt.Fprintf(&b, "@%d ", last.UnixNano())
		}
	}
	var views int64
	_ = h.d.DB.NewSelect().Model((*models.Document)(nil)).ColumnExpr("COALESCE(SUM(views),0)").Scan(ctx, &views)
	fmt.Fprintf(&b, "views=%d", views)
	return b.String()
}

var badBodies = []string{
	`{"title":`,                   // malformed
	`[]`,                          // wrong top-level type
	`"just a string"`,             // wrong top-level type
	`{"site_id":"one","title":5}`, // wrong field types
	`{"site_id":1e400}`,           // number out of range
	`{"name":"x"} {"name":"y"}`,   // trailing data
	`{"title":"a\u0000b","name":"a\u0000b","email":"a\u0000@b.c","input":"a\u0000"}`, // NUL
	`{"site_id":-5,"page":-1,"title":"` + strings.Repeat("x", 300) + `"}`,            // out of range
}

var badIDs = []string{"..%2F..%2Fetc%2Fpasswd", "1%27%20OR%201%3D1--", "-1", "99999999999999999999999", "abc", "%00"}

var badQueryValues = []string{"-1", "abc", "1%3BDROP%20TABLE%20documents", "99999999999999999999999", "%00", "id%20desc%3B--"}

// TestBadInputChangesNothing sends malformed input to every route of both
// surfaces; every answer must be a 4xx in the envelope (never a 5xx) and the
// database must be unchanged.
func TestBadInputChangesNothing(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			h := newHarness(t, dialect, nil)
			var site struct {
				ID int64 `json:"id"`
			}
			h.must(201, "POST", "/admin/api/v1/sites", map[string]any{"name": "Fixture"}, h.admin).into(t, &site)
			h.must(201, "POST", "/admin/api/v1/documents", map[string]any{"site_id": site.ID, "title": "Doc", "content": "x", "status": "published"}, h.admin)
			before := h.fingerprint()
			check := func(r Route, method, path, body string) {
				t.Helper()
				var res *resp
				if body == "" {
					res = h.do(method, path, nil, h.admin)
				} else {
					res = h.do(method, path, body, h.admin)
				}
				if res.Status >= 500 || res.Status < 400 {
					t.Errorf("%s %s body %.40q: status %d %s", method, path, body, res.Status, truncate(string(res.Raw), 200))
				}
				if r.Raw == "" || strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
					if res.Code != res.Status {
						t.Errorf("%s %s: not an error envelope: %s", method, path, truncate(string(res.Raw), 200))
					}
				}
				if now := h.fingerprint(); now != before {
					t.Fatalf("%s %s body %.40q changed the database:\nbefore %s\nafter  %s", method, path, body, before, now)
				}
			}
			for _, r := range h.s.Routes() {
				prefix := surfacePrefixes[r.Surface][0]
				if r.Path == "/health" || r.Path == "/users:login" || r.Multipart {
					continue
				}
				if strings.Contains(r.Path, "{") {
					for _, id := range badIDs {
						check(r, r.Method, prefix+pathParam.ReplaceAllString(r.Path, id), "")
					}
				}
				valid := prefix + pathParam.ReplaceAllString(r.Path, fmt.Sprint(site.ID))
				if r.Body != nil && !strings.Contains(r.Path, "/bot/wecom") && !strings.Contains(r.Path, "/bot/msgr") {
					for _, b := range badBodies {
						check(r, r.Method, valid, b)
					}
				}
				if r.Query != nil {
					for _, name := range queryNames(reflect.TypeOf(r.Query)) {
						for _, v := range badQueryValues {
							path := valid + "?" + name + "=" + v
							res := h.do(r.Method, path, nil, h.admin)
							if res.Status >= 500 {
								t.Errorf("%s %s: status %d %s", r.Method, path, res.Status, truncate(string(res.Raw), 200))
							}
							if now := h.fingerprint(); now != before && r.Method != http.MethodGet {
								t.Fatalf("%s %s changed the database", r.Method, path)
							}
						}
					}
				}
			}
			// The views of the fixture may grow through GET /documents/{id}
			// (a valid read); nothing else may change.
		})
	}
}

func queryNames(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous {
			out = append(out, queryNames(f.Type)...)
		}
		if n := f.Tag.Get("query"); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// TestTokensRefused covers invalid, expired, alg:none, wrongly signed tokens
// and tokens of deleted users.
func TestTokensRefused(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	secret := []byte(h.d.Cfg.JWTSecret)
	sign := func(method jwt.SigningMethod, key any, claims Claims) string {
		tok, err := jwt.NewWithClaims(method, claims).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	base := func(exp time.Time) Claims {
		return Claims{RegisteredClaims: jwt.RegisteredClaims{Subject: "1", Issuer: "lore", ExpiresAt: jwt.NewNumericDate(exp)}}
	}
	deleted := h.userToken(models.RoleEditor)
	var list Page[UserResponse]
	h.must(200, "GET", "/admin/api/v1/users?keyword=editor", nil, h.admin).into(t, &list)
	h.must(200, "DELETE", "/admin/api/v1/users/"+itoa(list.List[0].ID), nil, h.admin)
	cases := map[string]string{
		"expired":      sign(jwt.SigningMethodHS256, secret, base(time.Now().Add(-time.Minute))),
		"alg none":     sign(jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, base(time.Now().Add(time.Hour))),
		"wrong key":    sign(jwt.SigningMethodHS256, []byte("another-secret"), base(time.Now().Add(time.Hour))),
		"HS512":        sign(jwt.SigningMethodHS512, secret, base(time.Now().Add(time.Hour))),
		"no exp":       sign(jwt.SigningMethodHS256, secret, Claims{RegisteredClaims: jwt.RegisteredClaims{Subject: "1", Issuer: "lore"}}),
		"deleted user": deleted,
		"garbage":      "not.a.jwt",
	}
	before := h.fingerprint()
	for name, tok := range cases {
		for _, p := range []string{"/admin/api/v1/users", "/admin/api/v1/sites"} {
			r := h.do("GET", p, nil, tok)
			if r.Status != 401 || r.Code != 401 {
				t.Errorf("%s on %s: %d %s", name, p, r.Status, r.Raw)
			}
		}
		r := h.do("POST", "/admin/api/v1/sites", map[string]any{"name": "Nope " + name}, tok)
		if r.Status != 401 {
			t.Errorf("%s create: %d", name, r.Status)
		}
	}
	if h.fingerprint() != before {
		t.Fatal("refused tokens changed the database")
	}
}
