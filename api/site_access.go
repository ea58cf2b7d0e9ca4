package api

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/golang-jwt/jwt/v5"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/models"
	"golang.org/x/crypto/bcrypt"
)

// Site access passwords (EE). An admin sets a password on a site; the site
// then requires it (requires_password) and is no longer public. A reader
// proves knowledge of the password once with verify-password and gets a
// short-lived access token, which every later client read of the site's
// content carries in the X-Site-Access-Token header.
//
// The token is an HS256 JWT signed with a key derived from the JWT secret
// (so it can never be confused with an admin token). It names the site and
// carries a fingerprint of the site's password hash, so changing or removing
// the password revokes every token issued before.

// SiteAccessHeader carries the site access token on client requests.
const SiteAccessHeader = "X-Site-Access-Token"

// siteAccessIssuer is the iss claim of site access tokens.
const siteAccessIssuer = "lore-site-access"

// sitePasswordLimit is LORE_SITE_PASSWORD_MAX_FAILURES attempts per client
// IP and site in sitePasswordWindow; a success forgets the failures.
func (s *Server) sitePasswordLimit() attemptLimit {
	return attemptLimit{name: "site-password", max: int64(max(s.d.Cfg.SitePasswordMaxFailures, 1)), window: sitePasswordWindow}
}

// sitePasswordWindow is the window in which failed password attempts are
// counted per client IP and site.
const sitePasswordWindow = 15 * time.Minute

// SitePasswordSet is the body of PUT /sites/{id}/password.
type SitePasswordSet struct {
	Password string `json:"password" validate:"required,min=4,max=64,pwbytes"`
}

// SitePasswordVerify is the body of verify-password.
type SitePasswordVerify struct {
	Password string `json:"password" validate:"required,min=1,max=64"`
}

// SiteAccessQuery is the query of the client access routes: the site's
// tenant, optionally (a mismatch is 404).
type SiteAccessQuery struct {
	ClientTenantQuery
}

// SiteAccessStatus is the result of access-status.
type SiteAccessStatus struct {
	IsPublic         bool `json:"is_public"`
	RequiresPassword bool `json:"requires_password"`
	HasPassword      bool `json:"has_password"`
}

// SiteAccessToken is the result of verify-password: send access_token as the
// X-Site-Access-Token header; it expires after expires_in seconds.
type SiteAccessToken struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int64  `json:"expires_in"`
}

// siteAccessClaims are the claims of a site access token: the site and the
// fingerprint of the password hash it was issued for.
type siteAccessClaims struct {
	SiteID int64  `json:"site_id"`
	PWF    string `json:"pwf"`
	jwt.RegisteredClaims
}

func (s *Server) siteAccessRoutes() []Route {
	return []Route{
		{Surface: Admin, Method: http.MethodPut, Path: "/sites/{id}/password", Tag: "sites", Perm: SiteAdminUp,
			Summary:     "EE: set the site access password (the site becomes private)",
			Description: "Stores a bcrypt hash, sets requires_password=true and is_public=false. Tokens issued for an earlier password stop working.",
			Body:        SitePasswordSet{}, Response: SiteResponse{}, Handler: s.setSitePassword},
		{Surface: Admin, Method: http.MethodDelete, Path: "/sites/{id}/password", Tag: "sites", Perm: SiteAdminUp,
			Summary:  "EE: remove the site access password (the site becomes public again)",
			Response: SiteResponse{}, Handler: s.clearSitePassword},

		{Surface: Client, Method: http.MethodGet, Path: "/client/sites/{slug}/access-status", Tag: "site-access", Perm: Public,
			Summary: "EE: whether the site is public and needs a password", Query: SiteAccessQuery{},
			Response: SiteAccessStatus{}, Handler: s.siteAccessStatus},
		{Surface: Client, Method: http.MethodPost, Path: "/client/sites/{slug}/verify-password", Tag: "site-access", Perm: Public,
			Summary: "EE: exchange the site password for an access token (valid 24 hours)",
			Description: "Send the token as header X-Site-Access-Token on every client request for the site's content. " +
				"Wrong passwords are answered 401; after LORE_SITE_PASSWORD_MAX_FAILURES failures within 15 minutes from one IP for one site, 429 until the window passes.",
			Query: SiteAccessQuery{}, Body: SitePasswordVerify{}, Response: SiteAccessToken{}, Handler: s.verifySitePassword},
	}
}

// ---- admin ----------------------------------------------------------------

func (s *Server) setSitePassword(c *fiber.Ctx) error {
	var in SitePasswordSet
	st, err := loadThenBindAs(c, s.adminSiteByID, SiteAdminUp, bindJSON, &in)
	if err != nil {
		return err
	}
	hash, err := HashPassword(in.Password)
	if err != nil {
		return err
	}
	return s.writeSiteAccess(c, st, func() error { return s.d.DB.SetSitePassword(c.UserContext(), st.ID, hash) })
}

func (s *Server) clearSitePassword(c *fiber.Ctx) error {
	st, err := s.adminSiteByID(c, SiteAdminUp)
	if err != nil {
		return err
	}
	return s.writeSiteAccess(c, st, func() error { return s.d.DB.ClearSitePassword(c.UserContext(), st.ID) })
}

// writeSiteAccess runs a password write, drops the cached client details
// (they show the access fields) and answers with the updated site.
func (s *Server) writeSiteAccess(c *fiber.Ctx, st *models.Site, write func() error) error {
	if err := write(); err != nil {
		if errors.Is(err, db.ErrNotFound) {
			return NotFound("site")
		}
		return err
	}
	fresh, err := visibleSite(s.d.DB.GetSite(c.UserContext(), st.ID))
	if err != nil {
		return err
	}
	return s.sendSite(c, fresh, http.StatusOK)
}

// ---- client ---------------------------------------------------------------

// accessSite loads the active site named by the {slug} path parameter,
// optionally checking its tenant; anything else is 404.
func (s *Server) accessSite(c *fiber.Ctx) (*models.Site, error) {
	var q SiteAccessQuery
	if err := bindQuery(c, &q); err != nil {
		return nil, err
	}
	site, err := s.d.DB.SiteBySlug(c.UserContext(), strings.ToLower(strings.TrimSpace(param(c, "slug"))))
	if errors.Is(err, db.ErrNotFound) || (err == nil && (site.Status != models.SiteActive || site.Deleting)) {
		return nil, NotFound("site")
	}
	if err != nil {
		return nil, err
	}
	tenant, err := s.clientTenant(c.UserContext(), q.ClientTenantQuery)
	if err != nil {
		return nil, err
	}
	if !tenant.admits(site.TenantID) {
		return nil, NotFound("site")
	}
	return site, nil
}

func (s *Server) siteAccessStatus(c *fiber.Ctx) error {
	site, err := s.accessSite(c)
	if err != nil {
		return err
	}
	return ok(c, SiteAccessStatus{IsPublic: site.IsPublic, RequiresPassword: site.RequiresPassword,
		HasPassword: site.HasPassword()})
}

func (s *Server) verifySitePassword(c *fiber.Ctx) error {
	var in SitePasswordVerify
	site, err := loadThenBind(c, s.accessSite, bindJSON, &in)
	if err != nil {
		return err
	}
	if !site.HasPassword() {
		return BadRequest("this site has no access password")
	}
	// The attempt is reserved before bcrypt runs, so parallel guesses
	// cannot all be evaluated (the limit is checked and counted at once).
	lim := s.sitePasswordLimit()
	key := s.clientIP(c) + "|" + strconv.FormatInt(site.ID, 10)
	if wait, err := s.reserve(c.UserContext(), lim, key); err != nil || wait > 0 {
		if err != nil {
			return err
		}
		return tooManyAttempts(c, wait, "failed password attempts")
	}
	if bcrypt.CompareHashAndPassword([]byte(site.PasswordHash), []byte(in.Password)) != nil {
		return Errf(http.StatusUnauthorized, "incorrect site password")
	}
	if err := s.forgive(c.UserContext(), lim, key, true); err != nil {
		return err
	}
	now := time.Now()
	tok, err := s.issueSiteAccessToken(site, now)
	if err != nil {
		return err
	}
	return ok(c, SiteAccessToken{AccessToken: tok, TokenType: "bearer",
		ExpiresIn: int64(s.d.Cfg.SiteAccessTokenTTL.Seconds())})
}

// ---- tokens ---------------------------------------------------------------

// siteAccessKey derives the signing key of site access tokens from the JWT
// secret.
func (s *Server) siteAccessKey() []byte {
	k := sha256.Sum256([]byte("lore-site-access:" + s.d.Cfg.JWTSecret))
	return k[:]
}

// passwordFingerprint identifies a password hash without revealing it: the
// first 8 hex characters of its SHA-256.
func passwordFingerprint(hash string) string {
	h := sha256.Sum256([]byte(hash))
	return hex.EncodeToString(h[:])[:8]
}

func (s *Server) issueSiteAccessToken(site *models.Site, now time.Time) (string, error) {
	claims := siteAccessClaims{
		SiteID: site.ID,
		PWF:    passwordFingerprint(site.PasswordHash),
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer:    siteAccessIssuer,
			Subject:   strconv.FormatInt(site.ID, 10),
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(s.d.Cfg.SiteAccessTokenTTL)),
		},
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(s.siteAccessKey())
}

// requireSiteAccess enforces a site's privacy on client reads of its content
// (documents, tree, chat, files):
//   - a public site without a password: anyone;
//   - a site that requires a password: a valid, unexpired X-Site-Access-Token
//     issued for this site and its current password;
//   - a private site (is_public=false) without a password: only its staff;
//
// and in every case the admin token (Authorization: Bearer) of a user who
// may see the site in the Admin API (staffReader). Anything else is 401,
// except a site access token that is sent but not valid: 403.
func (s *Server) requireSiteAccess(c *fiber.Ctx, site *models.Site) error {
	if site.IsPublic && !site.RequiresPassword {
		return nil
	}
	if s.staffReader(c, site) {
		return nil
	}
	if !site.RequiresPassword {
		return Errf(http.StatusUnauthorized, "this site is private: send the admin token of one of its administrators or editors (Authorization: Bearer)")
	}
	raw := strings.TrimSpace(c.Get(SiteAccessHeader))
	if raw == "" {
		return Errf(http.StatusUnauthorized, "site access token required")
	}
	// A token that is present but no longer valid (expired, another site's,
	// or issued before the password changed) is 403: the reference client
	// drops its stored token and asks for the password again on 403 only.
	invalid := Errf(http.StatusForbidden, "invalid site access token")
	claims := &siteAccessClaims{}
	_, err := jwt.ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) { return s.siteAccessKey(), nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}), jwt.WithExpirationRequired(),
		jwt.WithIssuer(siteAccessIssuer))
	if err != nil || claims.SiteID != site.ID || !site.HasPassword() ||
		claims.PWF != passwordFingerprint(site.PasswordHash) {
		return invalid
	}
	return nil
}
