package api

import (
	"context"
	"crypto/rand"
	"errors"
	"math/big"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/models"
	"golang.org/x/crypto/bcrypt"
)

// UserResponse is a user as the Admin API shows it (never the password).
type UserResponse struct {
	ID             int64      `json:"id"`
	TenantID       int64      `json:"tenant_id"`
	Name           string     `json:"name"`
	Email          string     `json:"email"`
	Role           string     `json:"role" doc:"admin, site_admin or editor; under /admin/v1 an admin of a tenant below the platform reads tenant_admin"`
	ManagedSiteIDs []int64    `json:"managed_site_ids"`
	Status         string     `json:"status"`
	AvatarURL      *string    `json:"avatar_url" doc:"null when none"`
	LastLoginAt    *time.Time `json:"last_login_at"`
	LastLoginIP    *string    `json:"last_login_ip" doc:"null before the first login"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
}

func userResponse(u *models.User, sites []int64) UserResponse {
	if sites == nil {
		sites = []int64{}
	}
	return UserResponse{ID: u.ID, TenantID: u.TenantID, Name: u.Name, Email: u.Email, Role: u.Role,
		ManagedSiteIDs: sites, Status: u.Status, AvatarURL: nullText(u.AvatarURL), LastLoginAt: u.LastLoginAt,
		LastLoginIP: nullText(u.LastLoginIP), CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt}
}

// refTenantAdmin is the reference front-end's name for an admin of a tenant
// below the platform: Lore's admin role in that tenant.
const refTenantAdmin = "tenant_admin"

// storedRole is the role a body's role is kept as: tenant_admin is admin
// (of the tenant the user belongs to).
func storedRole(r string) string {
	if r == refTenantAdmin {
		return models.RoleAdmin
	}
	return r
}

// shownUser is the answer about one user: its response with the roles as
// the caller's prefix shows them.
func (s *Server) shownUser(c *fiber.Ctx, u *models.User, sites []int64) (UserResponse, error) {
	out := userResponse(u, sites)
	return out, s.showRoles(c, &out)
}

// userView is shownUser with the user's managed sites read from the store.
func (s *Server) userView(c *fiber.Ctx, u *models.User) (UserResponse, error) {
	sites, err := s.d.DB.UserSiteIDs(c.UserContext(), u.ID)
	if err != nil {
		return UserResponse{}, err
	}
	return s.shownUser(c, u, sites)
}

// showRoles renders roles for the caller's prefix: under the reference's
// /admin/v1, whose admin app tells a platform admin ("admin") from the
// admin of another tenant ("tenant_admin", shown as organisation admin and
// kept from the platform-only panels), such admins read tenant_admin; Lore's
// own prefix keeps its three roles.
func (s *Server) showRoles(c *fiber.Ctx, users ...*UserResponse) error {
	if !strings.HasPrefix(c.Path(), "/admin/v1/") {
		return nil
	}
	platform, err := s.platformTenant(c.UserContext())
	if err != nil {
		return err
	}
	for _, u := range users {
		if u.Role == models.RoleAdmin && u.TenantID != platform {
			u.Role = refTenantAdmin
		}
	}
	return nil
}

// UserLogin is the body of users:login.
type UserLogin struct {
	Email    string `json:"email" validate:"required,max=254"`
	Password string `json:"password" validate:"required,max=100"`
}

// LoginResult carries the JWT and the user.
type LoginResult struct {
	Token     string       `json:"token"`
	TokenType string       `json:"token_type"`
	ExpiresIn int64        `json:"expires_in"`
	User      UserResponse `json:"user"`
}

// UserCreate is the body of POST /users.
type UserCreate struct {
	Name           string  `json:"name" validate:"required,min=1,max=100"`
	Email          string  `json:"email" validate:"required,email,max=254"`
	Password       string  `json:"password" validate:"required,min=8,max=100,pwbytes"`
	Role           string  `json:"role" doc:"tenant_admin (the reference's name) is admin of the user's tenant" validate:"omitempty,oneof=admin site_admin editor tenant_admin"`
	ManagedSiteIDs []int64 `json:"managed_site_ids" validate:"max=1000"`
	AvatarURL      string  `json:"avatar_url" validate:"max=1000"`
	TenantID       int64   `json:"tenant_id" validate:"min=0"`
}

// UserInvite is the body of users:invite.
type UserInvite struct {
	Email          string  `json:"email" validate:"required,email,max=254"`
	Name           string  `json:"name" doc:"default: the part of the email before the @" validate:"max=100"`
	Role           string  `json:"role" doc:"tenant_admin (the reference's name) is admin of the user's tenant" validate:"omitempty,oneof=admin site_admin editor tenant_admin"`
	ManagedSiteIDs []int64 `json:"managed_site_ids" validate:"max=1000"`
	TenantID       int64   `json:"tenant_id" validate:"min=0"`
}

// UserUpdate is the body of PUT /users/{id}; absent fields are kept.
type UserUpdate struct {
	Name           *string  `json:"name" validate:"omitempty,min=1,max=100"`
	Email          *string  `json:"email" validate:"omitempty,email,max=254"`
	Role           *string  `json:"role" doc:"tenant_admin (the reference's name) is admin of the user's tenant" validate:"omitempty,oneof=admin site_admin editor tenant_admin"`
	Status         *string  `json:"status" validate:"omitempty,oneof=active inactive pending"`
	ManagedSiteIDs *[]int64 `json:"managed_site_ids" validate:"omitempty,max=1000"`
	AvatarURL      *string  `json:"avatar_url" validate:"omitempty,max=1000"`
}

// UserUpdatePassword is the body of PUT /users/{id}/password.
type UserUpdatePassword struct {
	OldPassword string `json:"old_password" validate:"required,max=100"`
	NewPassword string `json:"new_password" validate:"required,min=8,max=100,pwbytes"`
}

// UserWithPassword returns a generated temporary password once.
type UserWithPassword struct {
	User     UserResponse `json:"user"`
	Password string       `json:"password"`
}

// UserListQuery is the query of GET /users.
type UserListQuery struct {
	PageQuery
	Role     string `query:"role" doc:"tenant_admin: admin" validate:"omitempty,oneof=admin site_admin editor tenant_admin"`
	Status   string `query:"status" validate:"omitempty,oneof=active inactive pending"`
	Keyword  string `query:"keyword" doc:"matches name or email" validate:"max=200"`
	Search   string `query:"search" doc:"alias of keyword" validate:"max=200"`
	SiteID   int64  `query:"site_id" validate:"min=0"`
	OrderBy  string `query:"order_by" doc:"created_at | updated_at | email | name | last_login_at | id" validate:"omitempty,oneof=created_at updated_at email name last_login_at id"`
	OrderDir string `query:"order_dir" validate:"omitempty,oneof=asc desc"`
}

func (s *Server) userRoutes() []Route {
	return []Route{
		{Surface: Admin, Method: http.MethodPost, Path: "/users:login", Tag: "users", Perm: Public,
			Summary: "Log in with email and password; returns a JWT", Body: UserLogin{}, Response: LoginResult{}, Handler: s.login},
		{Surface: Admin, Method: http.MethodPost, Path: "/users:invite", Tag: "users", Perm: AdminOnly, Created: true,
			Summary: "Invite an active user; returns a temporary password, which stops working if unused for LORE_TEMP_PASSWORD_TTL", Body: UserInvite{}, Response: UserWithPassword{}, Handler: s.inviteUser},
		{Surface: Admin, Method: http.MethodGet, Path: "/users", Tag: "users", Perm: AdminOnly,
			Summary: "List users", Query: UserListQuery{}, Response: Page[UserResponse]{}, Handler: s.listUsers},
		{Surface: Admin, Method: http.MethodGet, Path: "/users/{id}", Tag: "users", Perm: AnyUser,
			Summary: "Get a user (admins any user, others themselves)", Response: UserResponse{}, Handler: s.getUser},
		{Surface: Admin, Method: http.MethodPost, Path: "/users", Tag: "users", Perm: AdminOnly, Created: true,
			Summary: "Create a user", Body: UserCreate{}, Response: UserResponse{}, Handler: s.createUser},
		{Surface: Admin, Method: http.MethodPut, Path: "/users/{id}", Tag: "users", Perm: AdminOnly,
			Summary: "Update role, status, assigned sites and profile", Body: UserUpdate{}, Response: UserResponse{}, Handler: s.updateUser},
		{Surface: Admin, Method: http.MethodPut, Path: "/users/{id}/password", Tag: "users", Perm: AnyUser,
			Summary: "Change one's own password (old password checked)", Body: UserUpdatePassword{}, Response: Message{}, Handler: s.changePassword},
		{Surface: Admin, Method: http.MethodPost, Path: "/users/{id}:resetPassword", Tag: "users", Perm: AdminOnly,
			Summary: "Reset a password to a generated temporary one", Response: UserWithPassword{}, Handler: s.resetPassword},
		{Surface: Admin, Method: http.MethodDelete, Path: "/users/{id}", Tag: "users", Perm: AdminOnly,
			Summary: "Delete a user", Response: Message{}, Handler: s.deleteUser},
	}
}

// HashPassword hashes with bcrypt; the cost is the library default.
func HashPassword(pw string) (string, error) {
	h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.DefaultCost)
	return string(h), err
}

// dummyHash keeps login timing the same for unknown emails.
var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("lore-timing-equaliser"), bcrypt.DefaultCost)

func (s *Server) login(c *fiber.Ctx) error {
	var in UserLogin
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	// Attempts are reserved before bcrypt runs (see reserveLogin).
	lim := s.loginLimits()
	ip, acct := s.clientIP(c), strings.ToLower(strings.TrimSpace(in.Email))
	if err := s.reserveLogin(c, lim, acct, ip); err != nil {
		return err
	}
	u, err := s.d.DB.UserByEmail(c.UserContext(), in.Email)
	if err != nil && !errors.Is(err, db.ErrNotFound) {
		return err
	}
	bad := BadRequest("Incorrect email or password")
	if err != nil {
		_ = bcrypt.CompareHashAndPassword(dummyHash, []byte(in.Password))
		return bad
	}
	if bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(in.Password)) != nil {
		return bad
	}
	if u.Status == models.UserInactive {
		return bad
	}
	if u.TempPasswordExpiresAt != nil && time.Now().After(*u.TempPasswordExpiresAt) {
		return BadRequest("the temporary password has expired; ask an administrator to reset it")
	}
	if err := s.forgiveLogin(c.UserContext(), lim, acct, ip); err != nil {
		return err
	}
	// A temporary password's expiry guards it until it is used: the first
	// login makes it the user's own (the reference's admin app has no step
	// that forces a change; its user menu offers one).
	if u.TempPasswordExpiresAt != nil {
		if err := s.keepTempPassword(c.UserContext(), u); err != nil {
			return err
		}
	}
	if err := s.d.DB.RecordLogin(c.UserContext(), u, ip); err != nil {
		return err
	}
	tok, err := s.issueToken(u)
	if err != nil {
		return err
	}
	shown, err := s.userView(c, u)
	if err != nil {
		return err
	}
	return ok(c, LoginResult{Token: tok, TokenType: "bearer", ExpiresIn: int64(s.d.Cfg.JWTTTL.Seconds()), User: shown})
}

// tenantOr resolves the tenant_id of a body: 0 is the caller's tenant; only
// a platform admin may name another, which must exist. Any other tenant is
// answered as missing (400), so tenant admins cannot probe tenant ids.
func (s *Server) tenantOr(c *fiber.Ctx, id int64) (int64, error) {
	p := principal(c)
	if id == 0 || id == p.User.TenantID {
		return p.User.TenantID, nil
	}
	if !p.IsPlatform() {
		return 0, BadRequest("tenant_id: tenant %d does not exist", id)
	}
	if _, err := s.d.DB.GetTenant(c.UserContext(), id); err != nil {
		if errors.Is(err, db.ErrNotFound) {
			return 0, BadRequest("tenant_id: tenant %d does not exist", id)
		}
		return 0, err
	}
	return id, nil
}

func (s *Server) createUser(c *fiber.Ctx) error {
	var in UserCreate
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	u, sites, err := s.newUser(c, in.Email, in.Name, in.Password, in.Role, models.UserActive, in.ManagedSiteIDs, in.TenantID)
	if err != nil {
		return err
	}
	u.AvatarURL = in.AvatarURL
	if err := s.saveNewUser(c, u, sites); err != nil {
		return err
	}
	out, err := s.shownUser(c, u, sites)
	if err != nil {
		return err
	}
	return created(c, out)
}

func (s *Server) inviteUser(c *fiber.Ctx) error {
	var in UserInvite
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	// Active at once, as the reference's invite: its admin app shows any
	// other status as disabled. The password expires unless used in time.
	pw := TempPassword()
	name := in.Name
	if name == "" {
		name, _, _ = strings.Cut(in.Email, "@")
	}
	u, sites, err := s.newUser(c, in.Email, name, pw, in.Role, models.UserActive, in.ManagedSiteIDs, in.TenantID)
	if err != nil {
		return err
	}
	u.TempPasswordExpiresAt = s.tempPasswordExpiry()
	if err := s.saveNewUser(c, u, sites); err != nil {
		return err
	}
	shown, err := s.shownUser(c, u, sites)
	if err != nil {
		return err
	}
	return created(c, UserWithPassword{User: shown, Password: pw})
}

func (s *Server) newUser(c *fiber.Ctx, email, name, pw, role, status string, sites []int64, tenant int64) (*models.User, []int64, error) {
	if role = storedRole(role); role == "" {
		role = models.RoleSiteAdmin
	}
	if err := s.checkSites(c, sites); err != nil {
		return nil, nil, err
	}
	tid, err := s.tenantOr(c, tenant)
	if err != nil {
		return nil, nil, err
	}
	hash, err := HashPassword(pw)
	if err != nil {
		return nil, nil, err
	}
	if name == "" {
		name = email
	}
	return &models.User{TenantID: tid, Name: name, Email: email, PasswordHash: hash, Role: role, Status: status}, sites, nil
}

func (s *Server) saveNewUser(c *fiber.Ctx, u *models.User, sites []int64) error {
	err := s.d.DB.CreateUser(c.UserContext(), u, sites)
	if errors.Is(err, db.ErrConflict) {
		return Conflict("email %s is already used", u.Email)
	}
	return err
}

func (s *Server) listUsers(c *fiber.Ctx) error {
	var q UserListQuery
	if err := bindPage(c, &q, 10, 100); err != nil {
		return err
	}
	if q.Keyword == "" {
		q.Keyword = q.Search
	}
	q.Role = storedRole(q.Role)
	if q.OrderBy == "" {
		q.OrderBy = "created_at"
	}
	if q.OrderDir == "" {
		q.OrderDir = "desc"
	}
	var tenant int64 // platform admins list every tenant's users
	if p := principal(c); !p.IsPlatform() {
		tenant = p.User.TenantID
	}
	users, total, err := s.d.DB.ListUsers(c.UserContext(), db.UserFilter{TenantID: tenant, Role: q.Role, Status: q.Status,
		Keyword: q.Keyword, SiteID: q.SiteID, OrderBy: q.OrderBy, OrderDir: q.OrderDir,
		Limit: q.Limit(), Offset: q.Offset()})
	if err != nil {
		return err
	}
	ids := make([]int64, len(users))
	for i := range users {
		ids[i] = users[i].ID
	}
	sites, err := s.d.DB.UsersSiteIDs(c.UserContext(), ids)
	if err != nil {
		return err
	}
	out := make([]UserResponse, len(users))
	shown := make([]*UserResponse, len(users))
	for i := range users {
		out[i] = userResponse(&users[i], sites[users[i].ID])
		shown[i] = &out[i]
	}
	if err := s.showRoles(c, shown...); err != nil {
		return err
	}
	return paged(c, out, total, q.PageQuery)
}

// loadUser reads the {id} user; non-admins may only address themselves
// (403 for any other id, existing or not), a tenant admin only users of its
// tenant (another tenant's user is 404, as a missing one).
func (s *Server) loadUser(c *fiber.Ctx) (*models.User, error) {
	id, err := pathInt(c, "id")
	if err != nil {
		return nil, err
	}
	p := principal(c)
	if !p.IsAdmin() && p.User.ID != id {
		return nil, ErrForbidden
	}
	u, err := s.d.DB.GetUser(c.UserContext(), id)
	if errors.Is(err, db.ErrNotFound) || (err == nil && !p.IsPlatform() && u.TenantID != p.User.TenantID) {
		return nil, NotFound("user")
	}
	return u, err
}

func (s *Server) getUser(c *fiber.Ctx) error {
	u, err := s.loadUser(c)
	if err != nil {
		return err
	}
	out, err := s.userView(c, u)
	if err != nil {
		return err
	}
	return ok(c, out)
}

func (s *Server) updateUser(c *fiber.Ctx) error {
	var in UserUpdate
	u, err := loadThenBind(c, s.loadUser, bindJSON, &in)
	if err != nil {
		return err
	}
	if in.Role != nil {
		r := storedRole(*in.Role)
		in.Role = &r
	}
	me := principal(c).User
	if u.ID == me.ID && ((in.Role != nil && *in.Role != models.RoleAdmin) || (in.Status != nil && *in.Status != models.UserActive)) {
		return BadRequest("you cannot demote or deactivate yourself")
	}
	if in.ManagedSiteIDs != nil {
		if err := s.checkSites(c, *in.ManagedSiteIDs); err != nil {
			return err
		}
	}
	setIf(&u.Name, in.Name)
	setIf(&u.Email, in.Email)
	setIf(&u.Role, in.Role)
	setIf(&u.Status, in.Status)
	setIf(&u.AvatarURL, in.AvatarURL)
	clearNulls(c.Body(), map[string]func(){"avatar_url": func() { u.AvatarURL = "" }})
	if in.Status != nil && *in.Status == models.UserInactive {
		u.TokenVersion++ // deactivation revokes tokens even if re-activated later
	}
	if err := s.d.DB.UpdateUser(c.UserContext(), u, in.ManagedSiteIDs); err != nil {
		if errors.Is(err, db.ErrConflict) {
			return Conflict("email %s is already used", u.Email)
		}
		return err
	}
	return s.getUser(c)
}

func (s *Server) changePassword(c *fiber.Ctx) error {
	u, err := s.loadUser(c)
	if err != nil {
		return err
	}
	if u.ID != principal(c).User.ID {
		return Errf(http.StatusForbidden, "only the user may change their password; admins use :resetPassword")
	}
	var in UserUpdatePassword
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	if bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(in.OldPassword)) != nil {
		return BadRequest("old_password is incorrect")
	}
	if u.PasswordHash, err = HashPassword(in.NewPassword); err != nil {
		return err
	}
	u.TempPasswordExpiresAt = nil
	u.TokenVersion++
	if err := s.d.DB.UpdateUser(c.UserContext(), u, nil); err != nil {
		return err
	}
	return ok(c, Message{Message: "Password updated; log in again"})
}

func (s *Server) resetPassword(c *fiber.Ctx) error {
	u, err := s.loadUser(c)
	if err != nil {
		return err
	}
	pw := TempPassword()
	if u.PasswordHash, err = HashPassword(pw); err != nil {
		return err
	}
	u.TempPasswordExpiresAt = s.tempPasswordExpiry()
	u.TokenVersion++
	if err := s.d.DB.UpdateUser(c.UserContext(), u, nil); err != nil {
		return err
	}
	shown, err := s.userView(c, u)
	if err != nil {
		return err
	}
	return ok(c, UserWithPassword{User: shown, Password: pw})
}

func (s *Server) deleteUser(c *fiber.Ctx) error {
	u, err := s.loadUser(c)
	if err != nil {
		return err
	}
	if u.ID == principal(c).User.ID {
		return BadRequest("you cannot delete yourself")
	}
	if err := s.d.DB.DeleteUser(c.UserContext(), u.ID); err != nil {
		return err
	}
	return ok(c, Message{Message: "User deleted"})
}

// keepTempPassword makes a temporary password that was just used the
// user's own (no expiry). The row is changed only if it still holds that
// password, so a reset made meanwhile keeps its own expiry.
func (s *Server) keepTempPassword(ctx context.Context, u *models.User) error {
	u.TempPasswordExpiresAt = nil
	_, err := s.d.DB.NewUpdate().Model(u).Column("temp_password_expires_at").WherePK().
		Where("password_hash = ?", u.PasswordHash).Exec(ctx)
	return db.Classify(err)
}

// tempPasswordExpiry is when a password generated now stops working.
func (s *Server) tempPasswordExpiry() *time.Time {
	ttl := s.d.Cfg.TempPasswordTTL
	if ttl <= 0 {
		ttl = 72 * time.Hour
	}
	t := time.Now().UTC().Add(ttl)
	return &t
}

// TempPassword generates a 16-character temporary password.
func TempPassword() string {
	const alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnpqrstuvwxyz23456789"
	b := make([]byte, 16)
	for i := range b {
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		b[i] = alphabet[n.Int64()]
	}
	return string(b)
}

// setIf assigns *src to *dst when src is non-nil (partial updates).
func setIf[T any](dst *T, src *T) {
	if src != nil {
		*dst = *src
	}
}
