package api

import (
	"fmt"
	"sort"
	"strings"
)

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
		note := "assigned sites"
		switch {
		case r.Perm == Public:
			note = "no token needed"
		case r.Perm == AdminOnly:
			note = ""
		case strings.HasPrefix(r.Path, "/users"):
			note = "own account only"
		case strings.HasPrefix(r.Path, "/jobs"):
			note = "jobs they started"
		}
		rows = append(rows, fmt.Sprintf("| `%s %s` | %s | %s | %s | %s |", r.Method, r.Path,
			cell(r.Perm, AdminOnly), cell(r.Perm, SiteAdminUp), cell(r.Perm, EditorUp), note))
	}
	sort.Strings(rows)
	return "| route | admin | site_admin | editor | scope for non-admins |\n|---|---|---|---|---|\n" + strings.Join(rows, "\n") + "\n"
}
