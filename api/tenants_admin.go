package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/models"
)

// The tenant routes of the reference's admin SDK: GET /tenants/current (its
// CE admin asks it on every page, for is_demo) and the EE tenant management
// (GET/POST /tenants, GET/PUT/DELETE /tenants/{id}), in the reference's
// TenantEESchema shape.

// selectedTenantHeader is the reference's EE tenant-selection header: an
// admin viewing another tenant sends its id.
const selectedTenantHeader = "X-Selected-Tenant-ID"

// TenantPlan is the reference's EE plan block of a tenant. Lore keeps what an
// admin sets and enforces none of it (0 means no limit).
type TenantPlan struct {
	MaxSites                 int            `json:"max_sites"`
	MaxDocuments             int            `json:"max_documents"`
	MaxStorageMB             int            `json:"max_storage_mb"`
	MaxUsers                 int            `json:"max_users"`
	Plan                     string         `json:"plan"`
	PlatformResourcesAllowed []string       `json:"platform_resources_allowed"`
	ContactEmail             *string        `json:"contact_email"`
	ContactPhone             *string        `json:"contact_phone"`
	AdvancedConfig           map[string]any `json:"advanced_config"`
	PlanExpiresAt            *string        `json:"plan_expires_at"`
}

// TenantResponse is a tenant in the reference's TenantEESchema shape (its CE
// TenantSchema is the same without the plan block). is_demo is always false.
type TenantResponse struct {
	ID          int64     `json:"id"`
	Name        string    `json:"name"`
	Slug        string    `json:"slug"`
	Domain      *string   `json:"domain"`
	LogoURL     *string   `json:"logo_url"`
	Description *string   `json:"description"`
	Status      string    `json:"status"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	IsDemo      bool      `json:"is_demo"`
	TenantPlan
}

// TenantPlanIn is the plan block of a tenant body; absent fields are kept.
type TenantPlanIn struct {
	MaxSites                 *int            `json:"max_sites" required:"false" validate:"omitnil,min=0"`
	MaxDocuments             *int            `json:"max_documents" required:"false" validate:"omitnil,min=0"`
	MaxStorageMB             *int            `json:"max_storage_mb" required:"false" validate:"omitnil,min=0"`
	MaxUsers                 *int            `json:"max_users" required:"false" validate:"omitnil,min=0"`
	Plan                     *string         `json:"plan" required:"false" validate:"omitnil,max=50"`
	PlatformResourcesAllowed *[]string       `json:"platform_resources_allowed" required:"false" validate:"omitnil,max=20,dive,max=50"`
	ContactEmail             *string         `json:"contact_email" required:"false" validate:"omitnil,max=254"`
	ContactPhone             *string         `json:"contact_phone" required:"false" validate:"omitnil,max=50"`
	AdvancedConfig           *map[string]any `json:"advanced_config" required:"false"`
	PlanExpiresAt            *string         `json:"plan_expires_at" required:"false" validate:"omitnil,max=40"`
}

// TenantProfileIn is the optional profile of a tenant body; on an update an
// absent field is kept.
type TenantProfileIn struct {
	Domain      *string `json:"domain" required:"false" validate:"omitnil,max=253"`
	LogoURL     *string `json:"logo_url" required:"false" validate:"omitnil,max=1000"`
	Description *string `json:"description" required:"false" validate:"omitnil,max=10000"`
}

// TenantCreate is the body of POST /tenants (the reference's
// TenantCreateRequest): the tenant and its first administrator, an admin of
// the new tenant.
type TenantCreate struct {
	Name string `json:"name" validate:"required,max=100"`
	Slug string `json:"slug" validate:"required,max=100"`
	TenantProfileIn
	Status        string  `json:"status" required:"false" doc:"active (default) | trial | disabled" validate:"omitempty,oneof=active trial disabled inactive"`
	AdminEmail    string  `json:"admin_email" validate:"required,email,max=254"`
	AdminPassword string  `json:"admin_password" validate:"required,min=8,max=100,pwbytes"`
	AdminName     *string `json:"admin_name" required:"false" validate:"omitnil,max=100"`
	TenantPlanIn
}

// TenantUpdate is the body of PUT /tenants/{id}; absent fields are kept and
// an explicit null clears domain, logo_url and description.
type TenantUpdate struct {
	Name *string `json:"name" required:"false" validate:"omitnil,max=100"`
	Slug *string `json:"slug" required:"false" validate:"omitnil,max=100"`
	TenantProfileIn
	Status *string `json:"status" required:"false" validate:"omitnil,oneof=active trial disabled inactive"`
	TenantPlanIn
}

// TenantListQuery is the query of GET /tenants.
type TenantListQuery struct {
	PageQuery
	Keyword string `query:"keyword" doc:"matches name or slug" validate:"max=200"`
}

func (s *Server) tenantRoutes() []Route {
	return []Route{
		{Surface: Admin, Method: http.MethodGet, Path: "/tenants/current", Tag: "tenants", Perm: AnyUser,
			Summary:     "The caller's tenant (a platform admin may select another with X-Selected-Tenant-ID)",
			Description: "The reference's admin reads is_demo from it on every page; Lore's is always false.",
			Response:    TenantResponse{}, Handler: s.currentTenant},
		{Surface: Admin, Method: http.MethodGet, Path: "/tenants", Tag: "tenants", Perm: PlatformOnly,
			Summary: "EE: list tenants, newest first", Query: TenantListQuery{}, Response: Page[TenantResponse]{},
			Handler: s.listTenants},
		{Surface: Admin, Method: http.MethodPost, Path: "/tenants", Tag: "tenants", Perm: PlatformOnly, Created: true,
			Summary: "EE: create a tenant with its first administrator", Body: TenantCreate{}, Response: TenantResponse{},
			Handler: s.createTenant},
		{Surface: Admin, Method: http.MethodGet, Path: "/tenants/{id}", Tag: "tenants", Perm: PlatformOnly,
			Summary: "EE: get a tenant", Response: TenantResponse{}, Handler: s.getTenant},
		{Surface: Admin, Method: http.MethodPut, Path: "/tenants/{id}", Tag: "tenants", Perm: PlatformOnly,
			Summary: "EE: update a tenant; the slug stays unique", Body: TenantUpdate{}, Response: TenantResponse{},
			Handler: s.updateTenant},
		{Surface: Admin, Method: http.MethodDelete, Path: "/tenants/{id}", Tag: "tenants", Perm: PlatformOnly,
			Summary: "EE: delete a tenant that owns no sites and no users", Response: Message{}, Handler: s.deleteTenant},
	}
}

func tenantResponse(t *models.Tenant) TenantResponse {
	out := TenantResponse{ID: t.ID, Name: t.Name, Slug: t.Slug, Domain: t.Domain, LogoURL: t.LogoURL,
		Description: t.Description, Status: t.Status, CreatedAt: t.CreatedAt.UTC(), UpdatedAt: t.UpdatedAt.UTC()}
	_ = json.Unmarshal([]byte(t.Plan), &out.TenantPlan)
	if out.Plan == "" {
		out.Plan = "standard"
	}
	if out.PlatformResourcesAllowed == nil {
		out.PlatformResourcesAllowed = []string{}
	}
	if out.AdvancedConfig == nil {
		out.AdvancedConfig = map[string]any{}
	}
	return out
}

// applyPlan merges the given plan fields into the stored JSON.
func applyPlan(t *models.Tenant, in *TenantPlanIn) {
	var p TenantPlan
	_ = json.Unmarshal([]byte(t.Plan), &p)
	setIf(&p.MaxSites, in.MaxSites)
	setIf(&p.MaxDocuments, in.MaxDocuments)
	setIf(&p.MaxStorageMB, in.MaxStorageMB)
	setIf(&p.MaxUsers, in.MaxUsers)
	setIf(&p.Plan, in.Plan)
	setIf(&p.PlatformResourcesAllowed, in.PlatformResourcesAllowed)
	setIf(&p.AdvancedConfig, in.AdvancedConfig)
	if in.ContactEmail != nil {
		p.ContactEmail = in.ContactEmail
	}
	if in.ContactPhone != nil {
		p.ContactPhone = in.ContactPhone
	}
	if in.PlanExpiresAt != nil {
		p.PlanExpiresAt = in.PlanExpiresAt
	}
	b, _ := json.Marshal(p)
	t.Plan = string(b)
}

// tenantStatus maps the reference's statuses onto Lore's: "disabled" is
// an alias of "inactive".
func tenantStatus(s string) string {
	if s == "disabled" {
		return models.SiteInactive
	}
	return s
}

// optText trims an optional text; blank becomes nil.
func optText(p *string) *string {
	if p == nil {
		return nil
	}
	v := strings.TrimSpace(*p)
	if v == "" {
		return nil
	}
	return &v
}

func (s *Server) currentTenant(c *fiber.Ctx) error {
	p := principal(c)
	id := p.User.TenantID
	if raw := strings.TrimSpace(c.Get(selectedTenantHeader)); raw != "" && p.IsPlatform() {
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || n < 1 {
			return Invalid("%s: invalid tenant id %q", selectedTenantHeader, truncate(raw, 40))
		}
		id = n
	}
	t, err := s.d.DB.GetTenant(c.UserContext(), id)
	if errors.Is(err, db.ErrNotFound) {
		return NotFound("tenant")
	}
	if err != nil {
		return err
	}
	return ok(c, tenantResponse(t))
}

func (s *Server) listTenants(c *fiber.Ctx) error {
	var q TenantListQuery
	if err := bindPage(c, &q, 10, 100); err != nil {
		return err
	}
	rows, total, err := s.d.DB.ListTenants(c.UserContext(), strings.TrimSpace(q.Keyword), q.Limit(), q.Offset())
	if err != nil {
		return err
	}
	out := make([]TenantResponse, len(rows))
	for i := range rows {
		out[i] = tenantResponse(&rows[i])
	}
	return paged(c, out, total, q.PageQuery)
}

func (s *Server) tenantByPath(c *fiber.Ctx) (*models.Tenant, error) {
	id, err := pathInt(c, "id")
	if err != nil {
		return nil, err
	}
	t, err := s.d.DB.GetTenant(c.UserContext(), id)
	if errors.Is(err, db.ErrNotFound) {
		return nil, NotFound("tenant")
	}
	return t, err
}

func (s *Server) getTenant(c *fiber.Ctx) error {
	t, err := s.tenantByPath(c)
	if err != nil {
		return err
	}
	return ok(c, tenantResponse(t))
}

func (s *Server) createTenant(c *fiber.Ctx) error {
	var in TenantCreate
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	name, err := normName(in.Name)
	if err != nil {
		return err
	}
	slug, err := normSlug(in.Slug)
	if err != nil {
		return err
	}
	t := &models.Tenant{Name: name, Slug: slug, Domain: optText(in.Domain), LogoURL: optText(in.LogoURL),
		Description: optText(in.Description), Status: tenantStatus(in.Status), Plan: "{}"}
	if t.Status == "" {
		t.Status = models.SiteActive
	}
	applyPlan(t, &in.TenantPlanIn)
	adminName := strings.TrimSpace(in.AdminEmail)
	if n := optText(in.AdminName); n != nil {
		adminName = *n
	} else {
		adminName, _, _ = strings.Cut(adminName, "@")
	}
	hash, err := HashPassword(in.AdminPassword)
	if err != nil {
		return err
	}
	admin := &models.User{Name: adminName, Email: strings.ToLower(strings.TrimSpace(in.AdminEmail)), PasswordHash: hash,
		Role: models.RoleAdmin, Status: models.UserActive}
	if err := s.d.DB.CreateTenantWithAdmin(c.UserContext(), t, admin); err != nil {
		if errors.Is(err, db.ErrConflict) && strings.Contains(err.Error(), "email") {
			return Conflict("admin_email: email %s is already used", admin.Email)
		}
		return tenantWriteError(err, t)
	}
	return created(c, tenantResponse(t))
}

// tenantWriteError is the answer to a failed tenant write: a taken slug is
// 409.
func tenantWriteError(err error, t *models.Tenant) error {
	if errors.Is(err, db.ErrConflict) {
		return Conflict("slug: a tenant with slug %q already exists", t.Slug)
	}
	return err
}

func (s *Server) updateTenant(c *fiber.Ctx) error {
	var in TenantUpdate
	t, err := loadThenBind(c, s.tenantByPath, bindJSON, &in)
	if err != nil {
		return err
	}
	nulls := jsonNulls(c.Body())
	if in.Name != nil {
		if t.Name, err = normName(*in.Name); err != nil {
			return err
		}
	}
	if in.Slug != nil {
		slug, err := normSlug(*in.Slug)
		if err != nil {
			return err
		}
		if t.Slug == db.DefaultTenantSlug && slug != t.Slug {
			return BadRequest("slug: the platform tenant keeps the slug %q (its admins are the platform admins)", db.DefaultTenantSlug)
		}
		t.Slug = slug
	}
	for key, dst := range map[string]**string{"domain": &t.Domain, "logo_url": &t.LogoURL, "description": &t.Description} {
		if nulls[key] {
			*dst = nil
		}
	}
	if in.Domain != nil {
		t.Domain = optText(in.Domain)
	}
	if in.LogoURL != nil {
		t.LogoURL = optText(in.LogoURL)
	}
	if in.Description != nil {
		t.Description = optText(in.Description)
	}
	if in.Status != nil {
		t.Status = tenantStatus(*in.Status)
	}
	applyPlan(t, &in.TenantPlanIn)
	if err := s.d.DB.UpdateTenant(c.UserContext(), t); err != nil {
		return tenantWriteError(err, t)
	}
	return ok(c, tenantResponse(t))
}

func (s *Server) deleteTenant(c *fiber.Ctx) error {
	t, err := s.tenantByPath(c)
	if err != nil {
		return err
	}
	if t.ID == principal(c).User.TenantID {
		return BadRequest("the tenant of the caller cannot be deleted")
	}
	if err := s.d.DB.DeleteTenant(c.UserContext(), t.ID); err != nil {
		switch {
		case errors.Is(err, db.ErrTenantInUse):
			return BadRequest("the tenant still has sites or users")
		case errors.Is(err, db.ErrNotFound):
			return NotFound("tenant")
		}
		return err
	}
	return ok(c, Message{Message: "Tenant deleted"})
}
