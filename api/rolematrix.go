package api

import (
	"fmt"
	"sort"
	"strings"
)

// Scopes of an admin route below the platform admin, beyond its least role
// (the last column of RoleMatrix). Platform-only routes have none.
const (
	ScopeNone          = ""
	ScopePublic        = "no token needed"
	ScopeAssignedSites = "assigned sites (tenant admin: its tenant's sites)"
	ScopeOwnAccount    = "own account only (tenant admin: its tenant's users)"
	ScopeOwnJobs       = "jobs of assigned sites (tenant admin: its tenant's jobs)"
	ScopeStartedJobs   = "jobs of assigned sites, an editor's only those it started (tenant admin: its tenant's jobs)"
	ScopeOwnTenant     = "own tenant"
)

// RouteScope says how the handler of an admin route limits a tenant admin,
// site_admin or editor: to the sites they see (a tenant admin: every site of
// its tenant; others: the sites assigned to them), to their own account, to
// the jobs of their sites (an editor: those it started there) or to their own
// tenant. Anything outside is answered as missing (404), never 403.
func RouteScope(r Route) string {
	switch {
	case r.Perm == Public:
		return ScopePublic
	case r.Perm == PlatformOnly:
		return ScopeNone
	case strings.HasPrefix(r.Path, "/users/"):
		return ScopeOwnAccount
	case (strings.HasPrefix(r.Path, "/jobs") || strings.HasPrefix(r.Path, "/tasks")) && r.Perm == EditorUp:
		return ScopeStartedJobs
	case strings.HasPrefix(r.Path, "/jobs"), strings.HasPrefix(r.Path, "/tasks"):
		return ScopeOwnJobs
	case r.Perm == AdminOnly && !strings.HasPrefix(r.Path, "/sites/") && !strings.HasPrefix(r.Path, "/documents") &&
		!strings.HasPrefix(r.Path, "/collections") && !strings.HasPrefix(r.Path, "/files") && !strings.HasPrefix(r.Path, "/data-sources"),
		strings.HasPrefix(r.Path, "/tenants"), r.Path == "/documents:aiGenerate":
		return ScopeOwnTenant
	}
	return ScopeAssignedSites
}

// leastRoleName names a route's least role in the OpenAPI document.
var leastRoleName = map[Perm]string{AnyUser: "any user", EditorUp: "editor", SiteAdminUp: "site_admin",
	AdminOnly: "admin (tenant admins: their tenant)", PlatformOnly: "platform admin"}

// RoleMatrix renders the admin route × role table of docs/roles.md from the route
// table, so the documentation cannot drift from what the middleware enforces.
// The platform admin is an admin of the platform tenant; a tenant admin an
// admin of any other tenant (README "Tenants").
func RoleMatrix(routes []Route) string {
	var rows []string
	for _, r := range routes {
		if r.Surface != Admin || r.Path == "/health" {
			continue
		}
		cell := func(need Perm, role Perm) string {
			if need == Public || role >= need {
				return "✓"
			}
			return "–"
		}
		rows = append(rows, fmt.Sprintf("| `%s %s` | %s | %s | %s | %s | %s |", r.Method, r.Path,
			cell(r.Perm, PlatformOnly), cell(r.Perm, AdminOnly), cell(r.Perm, SiteAdminUp), cell(r.Perm, EditorUp), RouteScope(r)))
	}
	sort.Strings(rows)
	return "| route | platform admin | tenant admin | site_admin | editor | scope below platform admin |\n|---|---|---|---|---|---|\n" +
		strings.Join(rows, "\n") + "\n"
}
