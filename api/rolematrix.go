package api

import (
	"fmt"
	"sort"
	"strings"
)

// Scopes of an admin route for site_admin and editor users, beyond its least
// role (the last column of RoleMatrix). AdminOnly routes have none.
const (
	ScopeNone          = ""
	ScopePublic        = "no token needed"
	ScopeAssignedSites = "assigned sites"
	ScopeOwnAccount    = "own account only"
	ScopeOwnJobs       = "jobs of assigned sites"
	ScopeOwnTenant     = "own tenant"
)

// RouteScope says how the handler of an admin route limits a site_admin or
// editor: to the sites assigned to them, to their own account, to the jobs
// of their sites or to their own tenant.
func RouteScope(r Route) string {
	switch {
	case r.Perm == Public:
		return ScopePublic
	case r.Perm == AdminOnly:
		return ScopeNone
	case strings.HasPrefix(r.Path, "/users"):
		return ScopeOwnAccount
	case strings.HasPrefix(r.Path, "/jobs"), strings.HasPrefix(r.Path, "/tasks"):
		return ScopeOwnJobs
	case strings.HasPrefix(r.Path, "/tenants"):
		return ScopeOwnTenant
	}
	return ScopeAssignedSites
}

// RoleMatrix renders the admin route × role table of README from the route
// table, so the documentation cannot drift from what the middleware enforces.
// Routes marked "assigned sites" are further limited by the handler to the
// sites assigned to a site_admin or editor.
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
		rows = append(rows, fmt.Sprintf("| `%s %s` | %s | %s | %s | %s |", r.Method, r.Path,
			cell(r.Perm, AdminOnly), cell(r.Perm, SiteAdminUp), cell(r.Perm, EditorUp), RouteScope(r)))
	}
	sort.Strings(rows)
	return "| route | admin | site_admin | editor | scope for non-admins |\n|---|---|---|---|---|\n" + strings.Join(rows, "\n") + "\n"
}
