package api

import (
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

// Principal is the authenticated admin user of a request with its assigned sites.
type Principal struct {
	User  *models.User
	Sites map[int64]bool
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
		h := c.Get(fiber.HeaderAuthorization)
		raw, found := strings.CutPrefix(h, "Bearer ")
		if !found || strings.TrimSpace(raw) == "" {
			return ErrUnauthorized
		}
		claims, err := s.parseToken(strings.TrimSpace(raw))
		if err != nil {
			return Errf(401, "Invalid token")
		}
		id, err := strconv.ParseInt(claims.Subject, 10, 64)
		if err != nil {
			return Errf(401, "Invalid token")
		}
		u, err := s.d.DB.GetUser(c.UserContext(), id)
		if errors.Is(err, db.ErrNotFound) {
			return Errf(401, "User not found")
		}
		if err != nil {
			return err
		}
		if u.Status != models.UserActive || u.TokenVersion != claims.Ver {
			return Errf(401, "User is not active or the token was revoked")
		}
		if roleLevel[u.Role] < need {
			return ErrForbidden
		}
		if u.TempPasswordExpiresAt != nil && !passwordChangeRoute(c) {
			return Errf(http.StatusForbidden, "change your temporary password first: PUT /admin/v1/users/%d/password", u.ID)
		}
		p := &Principal{User: u, Sites: map[int64]bool{}}
		if u.Role != models.RoleAdmin {
			ids, err := s.d.DB.UserSiteIDs(c.UserContext(), u.ID)
			if err != nil {
				return err
			}
			for _, sid := range ids {
				p.Sites[sid] = true
			}
		}
		c.Locals(userKey, p)
		return c.Next()
	}
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

// IsAdmin reports whether the principal has the admin role.
func (p *Principal) IsAdmin() bool { return p != nil && p.User.Role == models.RoleAdmin }

// CanSite reports whether the principal may act on the site at level need:
// admins everywhere, others only on assigned sites and only up to their role.
func (p *Principal) CanSite(siteID int64, need Perm) bool {
	if p == nil {
		return false
	}
	if p.IsAdmin() {
		return true
	}
	return p.Sites[siteID] && roleLevel[p.User.Role] >= need
}

// requireSite refuses (403) unless the principal may act on the site.
func requireSite(c *fiber.Ctx, siteID int64, need Perm) error {
	if !principal(c).CanSite(siteID, need) {
		return ErrForbidden
	}
	return nil
}

// SiteFilter returns nil for admins (all sites) or the assigned site ids.
func (p *Principal) SiteFilter() []int64 {
	if p.IsAdmin() {
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
