package api

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lorekb/lore/models"
)

const matrixStart, matrixEnd = "<!-- role-matrix:start -->\n", "<!-- role-matrix:end -->"

// TestReadmeRoleMatrixIsCurrent keeps README's role matrix equal to the one
// generated from the routes. UPDATE_README=1 rewrites it.
func TestReadmeRoleMatrixIsCurrent(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	want := RoleMatrix(h.s.Routes())
	path := filepath.Join("..", "README.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	i, j := strings.Index(readme, matrixStart), strings.Index(readme, matrixEnd)
	if i < 0 || j < i {
		t.Fatal("README.md has no role-matrix markers")
	}
	got := readme[i+len(matrixStart) : j]
	if got != want {
		if os.Getenv("UPDATE_README") == "1" {
			if err := os.WriteFile(path, []byte(readme[:i+len(matrixStart)]+want+readme[j:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Fatalf("README role matrix is stale; run UPDATE_README=1 go test ./api -run TestReadmeRoleMatrix\nwant:\n%s", want)
	}
}

var pathParam = regexp.MustCompile(`\{[a-z_]+\+?\}`)

// TestEveryAdminRouteEnforcesRoles calls every admin route as nobody (401),
// as each role below the route's least role (403) and as admin (never 401 or
// 403), on a fixture where the ids exist.
func TestEveryAdminRouteEnforcesRoles(t *testing.T) {
	h := newHarness(t, "sqlite", nil)
	var site struct {
		ID int64 `json:"id"`
	}
	h.must(201, "POST", "/admin/api/v1/sites", map[string]any{"name": "Matrix"}, h.admin).into(t, &site)
	tokens := map[Perm]string{
		EditorUp:    h.userToken(models.RoleEditor, site.ID),
		SiteAdminUp: h.userToken(models.RoleSiteAdmin, site.ID),
	}
	// User routes address a throwaway user, so password resets do not revoke
	// the tokens this test uses.
	var victim UserResponse
	h.must(201, "POST", "/admin/api/v1/users", map[string]any{"name": "v", "email": "victim@example.com", "password": "12345678"}, h.admin).into(t, &victim)
	n := 0
	for _, r := range h.s.Routes() {
		if r.Surface != Admin || r.Perm == Public {
			continue
		}
		n++
		id := "1"
		if strings.HasPrefix(r.Path, "/users") {
			id = itoa(victim.ID)
		}
		path := "/admin/api/v1" + pathParam.ReplaceAllString(r.Path, id)
		if res := h.do(r.Method, path, nil, ""); res.Status != http.StatusUnauthorized || res.Code != 401 {
			t.Errorf("%s %s as nobody: %d %s", r.Method, r.Path, res.Status, res.Raw)
		}
		for level, tok := range tokens {
			if level < r.Perm {
				if res := h.do(r.Method, path, nil, tok); res.Status != http.StatusForbidden {
					t.Errorf("%s %s as role level %d: %d, want 403", r.Method, r.Path, level, res.Status)
				}
			}
		}
		if r.Method == http.MethodDelete || r.Path == "/users/{id}/password" {
			continue // don't delete the fixture; a password change is the user's own (admins reset instead)
		}
		if res := h.do(r.Method, path, nil, h.admin); res.Status == 401 || res.Status == 403 || res.Status >= 500 {
			t.Errorf("%s %s as admin: %d %s", r.Method, r.Path, res.Status, res.Raw)
		}
	}
	if n < 30 {
		t.Fatalf("only %d admin routes", n)
	}
}
