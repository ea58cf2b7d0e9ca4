package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/golang-jwt/jwt/v5"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/models"
)

const userKey = "auth_user"

// Principal is the authenticated admin user of a request with the sites it
// may see: a site_admin's or editor's assigned sites, a tenant admin's
// tenant's sites; a platform admin sees every site (Sites stays empty).
type Principal struct {
	User  *models.User
	Sites map[int64]bool
	// Platform marks a platform admin: role admin in the platform tenant
	// (the bootstrap tenant, slug "default"). Admins of any other tenant
	// are tenant admins, limited to their tenant. See README "Tenants".
	Platform bool
}

// Claims are the JWT claims of an admin token. Ver is the user's token
// version: changing or resetting the password bumps it and older tokens stop
// working.
type Claims struct {
	Email string `json:"email"`
	Role  string `json:"role"`
	Ver   int64  `json:"ver"`
	jwt.RegisteredClaims
}

func (s *Server) issueToken(u *models.User) (string, error) {
	now := time.Now()
	claims := Claims{
		Email: u.Email, Role: u.Role, Ver: u.TokenVersion,
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   strconv.FormatInt(u.ID, 10),
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(s.d.Cfg.JWTTTL)),
			Issuer:    "lore",
		},
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(s.d.Cfg.JWTSecret))
}

// parseToken verifies signature, algorithm (HS256 only: alg none and others
// are refused) and expiry.
func (s *Server) parseToken(raw string) (*Claims, error) {
	claims := &Claims{}
	_, err := jwt.ParseWithClaims(raw, claims, func(t *jwt.Token) (any, error) {
		return []byte(s.d.Cfg.JWTSecret), nil
	}, jwt.WithValidMethods([]string{"HS256"}), jwt.WithExpirationRequired(), jwt.WithIssuer("lore"))
	if err != nil {
		return nil, err
	}
	return claims, nil
}

var roleLevel = map[string]Perm{
	models.RoleAdmin:     AdminOnly,
	models.RoleSiteAdmin: SiteAdminUp,
	models.RoleEditor:    EditorUp,
}

// requireAuth authenticates the bearer token, loads the user (which must still
// exist and be active) and checks the route's least role.
func (s *Server) requireAuth(need Perm) fiber.Handler {
	return func(c *fiber.Ctx) error {
		u, err := s.bearerUser(c)
		if err != nil {
			return err
		}
		p, err := s.principalOf(c.UserContext(), u)
		if err != nil {
			return err
		}
		level := roleLevel[u.Role]
		if p.Platform {
			level = PlatformOnly
		}
		if level < need {
			return ErrForbidden
		}
		if u.TempPasswordExpiresAt != nil && !passwordChangeRoute(c) {
			return Errf(http.StatusForbidden, "change your temporary password first: PUT /admin/v1/users/%d/password", u.ID)
		}
		c.Locals(userKey, p)
		return c.Next()
	}
}

// bearerUser authenticates the admin bearer token of a request: the user it
// names, which must still exist and be active, with the token's version.
func (s *Server) bearerUser(c *fiber.Ctx) (*models.User, error) {
	raw, found := strings.CutPrefix(c.Get(fiber.HeaderAuthorization), "Bearer ")
	if !found || strings.TrimSpace(raw) == "" {
		return nil, ErrUnauthorized
	}
	claims, err := s.parseToken(strings.TrimSpace(raw))
	if err != nil {
		return nil, Errf(401, "Invalid token")
	}
	id, err := strconv.ParseInt(claims.Subject, 10, 64)
	if err != nil {
		return nil, Errf(401, "Invalid token")
	}
	u, err := s.d.DB.GetUser(c.UserContext(), id)
	if errors.Is(err, db.ErrNotFound) {
		return nil, Errf(401, "User not found")
	}
	if err != nil {
		return nil, err
	}
	if u.Status != models.UserActive || u.TokenVersion != claims.Ver {
		return nil, Errf(401, "User is not active or the token was revoked")
	}
	return u, nil
}

// principalOf builds the principal of an authenticated user: whether it is
// a platform admin, and the sites it sees (a tenant admin its tenant's
// sites, a site_admin or editor its assignment; a platform admin needs none).
func (s *Server) principalOf(ctx context.Context, u *models.User) (*Principal, error) {
	p := &Principal{User: u, Sites: map[int64]bool{}}
	if u.Role == models.RoleAdmin {
		platform, err := s.platformTenant(ctx)
		if err != nil {
			return nil, err
		}
		if p.Platform = u.TenantID == platform; p.Platform {
			return p, nil
		}
	}
	ids, err := s.d.DB.UserSiteIDs(ctx, u.ID)
	if u.Role == models.RoleAdmin {
		ids, err = s.d.DB.TenantSiteIDs(ctx, u.TenantID)
	}
	if err != nil {
		return nil, err
	}
	for _, sid := range ids {
		p.Sites[sid] = true
	}
	return p, nil
}

// staffReader reports whether a client request carries the admin token of
// a user who may see the site (a platform admin, an admin of its tenant, or
// a site_admin or editor assigned to it): such a reader passes the site's
// privacy and password checks on the Client API. Any failure is false.
func (s *Server) staffReader(c *fiber.Ctx, site *models.Site) bool {
	if c.Get(fiber.HeaderAuthorization) == "" {
		return false
	}
	u, err := s.bearerUser(c)
	if err != nil || u.TempPasswordExpiresAt != nil {
		return false
	}
	p, err := s.principalOf(c.UserContext(), u)
	if err != nil {
		return false
	}
	return p.SeesSite(site.ID)
}

// passwordChangeRoute reports whether the request is one a user with a
// temporary password may make: reading their user and changing the password.
func passwordChangeRoute(c *fiber.Ctx) bool {
	p := c.Route().Path
	return strings.HasSuffix(p, "/users/:id/password") || c.Method() == http.MethodGet && strings.HasSuffix(p, "/users/:id")
}

// principal returns the authenticated user of an admin request.
func principal(c *fiber.Ctx) *Principal {
	p, _ := c.Locals(userKey).(*Principal)
	return p
}

// IsAdmin reports whether the principal has the admin role (a platform or
// a tenant admin).
func (p *Principal) IsAdmin() bool { return p != nil && p.User.Role == models.RoleAdmin }

// IsPlatform reports whether the principal is a platform admin.
func (p *Principal) IsPlatform() bool { return p != nil && p.Platform && p.IsAdmin() }

// SeesSite reports whether the site is in the principal's scope: every site
// for a platform admin, the tenant's sites for a tenant admin, the assigned
// sites for others.
func (p *Principal) SeesSite(siteID int64) bool {
	return p != nil && (p.IsPlatform() || p.Sites[siteID])
}

// CanSite reports whether the principal may act on the site at level need:
// a site it sees, and only up to its role.
func (p *Principal) CanSite(siteID int64, need Perm) bool {
	return p.SeesSite(siteID) && (p.IsAdmin() || roleLevel[p.User.Role] >= need)
}

// errHidden answers a request about a site outside the caller's scope
// exactly as one about a site that does not exist (404), so ids and slugs
// of other sites and tenants cannot be probed. Handlers whose missing
// resource has another answer map it with hiddenAs.
var errHidden = NotFound("site")

// hiddenAs turns errHidden into notFound, the caller's answer for a
// resource that does not exist; other errors pass.
func hiddenAs(err, notFound error) error {
	if err == errHidden {
		return notFound
	}
	return err
}

// SiteFilter returns nil for platform admins (all sites) or the ids of the
// sites the principal sees.
func (p *Principal) SiteFilter() []int64 {
	if p.IsPlatform() {
		return nil
	}
	ids := make([]int64, 0, len(p.Sites))
	for id := range p.Sites {
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		ids = []int64{-1} // matches nothing
	}
	return ids
}

// platformTenant is the id of the platform tenant: the bootstrap tenant
// (slug "default"), whose admins are platform admins. It is read once it
// exists (the slug of the default tenant is not changed through the API:
// updateTenant refuses it).
func (s *Server) platformTenant(ctx context.Context) (int64, error) {
	if id := s.platformID.Load(); id != 0 {
		return id, nil
	}
	t, err := s.d.DB.TenantBySlug(ctx, db.DefaultTenantSlug)
	if errors.Is(err, db.ErrNotFound) {
		return -1, nil // no tenant yet: nobody is a platform admin
	}
	if err != nil {
		return 0, err
	}
	s.platformID.Store(t.ID)
	return t.ID, nil
}
