package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/models"
	"github.com/lorekb/lore/workflows"
)

// QuickQuestion is a suggested question shown in a site's chat.
type QuickQuestion struct {
	Text     string `json:"text" validate:"required,max=500"`
	Category string `json:"category,omitempty" validate:"max=100"`
}

// SiteResponse is a site as the Admin API shows it (WIRE.md §2 Site, plus
// domain and the EE access fields). The access password itself never leaves
// the server; has_password says whether one is set.
type SiteResponse struct {
	ID                int64           `json:"id"`
	CreatedAt         time.Time       `json:"created_at"`
	UpdatedAt         time.Time       `json:"updated_at"`
	Name              string          `json:"name"`
	TenantID          int64           `json:"tenant_id"`
	TenantSlug        string          `json:"tenant_slug"`
	Slug              string          `json:"slug"`
	Domain            *string         `json:"domain"`
	Description       *string         `json:"description" doc:"null when empty"`
	Icon              *string         `json:"icon" doc:"null when empty"`
	Status            string          `json:"status"`
	ThemeColor        string          `json:"theme_color"`
	LayoutMode        string          `json:"layout_mode"`
	QuickQuestions    []QuickQuestion `json:"quick_questions" doc:"null when none"`
	BotConfig         map[string]any  `json:"bot_config" doc:"the reference's per-site bot settings as saved (secrets masked); null when none"`
	ShowPipelineTrace bool            `json:"show_pipeline_trace"`
	ArticleCount      int64           `json:"article_count" doc:"number of documents of the site"`
	WebWidget         map[string]any  `json:"web_widget"`
	IsPublic          bool            `json:"is_public"`
	RequiresPassword  bool            `json:"requires_password"`
	HasPassword       bool            `json:"has_password"`
}

// ClientSite is a site as the Client API shows it: no status, bot settings or
// admin-only switches.
type ClientSite struct {
	ID               int64           `json:"id"`
	Name             string          `json:"name"`
	Slug             string          `json:"slug"`
	Domain           *string         `json:"domain"`
	Description      *string         `json:"description" doc:"null when empty"`
	Icon             *string         `json:"icon" doc:"null when empty"`
	ArticleCount     int64           `json:"article_count" doc:"number of published documents"`
	ViewCount        int64           `json:"view_count" doc:"number of document view events"`
	TenantID         int64           `json:"tenant_id"`
	TenantSlug       string          `json:"tenant_slug"`
	ThemeColor       string          `json:"theme_color"`
	LayoutMode       string          `json:"layout_mode"`
	QuickQuestions   []QuickQuestion `json:"quick_questions" doc:"null when none"`
	WebWidget        map[string]any  `json:"web_widget"`
	IsPublic         bool            `json:"is_public"`
	RequiresPassword bool            `json:"requires_password"`
	HasPassword      bool            `json:"has_password"`
}

// SiteCreate is the body of POST /sites. An empty slug is generated from the
// name; domain is optional and stored lowercased.
type SiteCreate struct {
	Name              string          `json:"name" validate:"required,max=100"`
	Slug              string          `json:"slug" required:"false" validate:"max=200"`
	Domain            *string         `json:"domain" required:"false" validate:"omitempty,max=253"`
	TenantID          int64           `json:"tenant_id" required:"false" doc:"default: the caller's tenant" validate:"min=0"`
	Description       string          `json:"description" required:"false" validate:"max=10000"`
	Icon              string          `json:"icon" required:"false" validate:"max=1000"`
	Status            string          `json:"status" required:"false" doc:"active (default) | inactive (disabled is an alias)" validate:"omitempty,oneof=active inactive disabled"`
	ThemeColor        string          `json:"theme_color" required:"false" doc:"default blue" validate:"max=50"`
	LayoutMode        string          `json:"layout_mode" required:"false" doc:"sidebar (default) | top" validate:"omitempty,oneof=sidebar top"`
	QuickQuestions    []QuickQuestion `json:"quick_questions" required:"false" validate:"max=50,dive"`
	ShowPipelineTrace bool            `json:"show_pipeline_trace" required:"false"`
	BotConfig         map[string]any  `json:"bot_config" required:"false" doc:"the reference's per-site bot settings (web_widget becomes the site's web_widget); api_bot is managed by ee-config"`
	IsPublic          *bool           `json:"is_public" required:"false" doc:"EE; default true"`
	AdminEmail        string          `json:"admin_email" required:"false" doc:"gives the site an administrator: an existing site_admin or editor with this email is assigned the site (an admin needs nothing); otherwise a new site_admin is created" validate:"omitempty,email,max=254"`
	AdminName         string          `json:"admin_name" required:"false" doc:"name of a new administrator; default: the part of admin_email before @" validate:"max=100"`
	AdminPassword     string          `json:"admin_password" required:"false" doc:"password of a new administrator (8..100; required when admin_email names no user)" validate:"omitempty,min=8,max=100,pwbytes"`
}

// SiteUpdate is the body of PUT /sites/{id}; absent fields are kept, an
// explicit null clears description, icon, domain, quick_questions and
// bot_config (as the reference's admin sends to remove them). An empty
// domain removes the domain.
type SiteUpdate struct {
	Name              *string          `json:"name" required:"false" validate:"omitempty,max=100"`
	Slug              *string          `json:"slug" required:"false" validate:"omitempty,max=200"`
	Domain            *string          `json:"domain" required:"false" validate:"omitempty,max=253"`
	TenantID          *int64           `json:"tenant_id" required:"false" doc:"admins only" validate:"omitempty,min=1"`
	Description       *string          `json:"description" required:"false" validate:"omitempty,max=10000"`
	Icon              *string          `json:"icon" required:"false" validate:"omitempty,max=1000"`
	Status            *string          `json:"status" required:"false" doc:"active | inactive (disabled is an alias)" validate:"omitempty,oneof=active inactive disabled"`
	ThemeColor        *string          `json:"theme_color" required:"false" validate:"omitempty,max=50"`
	LayoutMode        *string          `json:"layout_mode" required:"false" validate:"omitempty,oneof=sidebar top"`
	QuickQuestions    *[]QuickQuestion `json:"quick_questions" required:"false" validate:"omitempty,max=50,dive"`
	ShowPipelineTrace *bool            `json:"show_pipeline_trace" required:"false"`
	BotConfig         *map[string]any  `json:"bot_config" required:"false" doc:"replaces the bot settings; masked secrets keep their stored value"`
	IsPublic          *bool            `json:"is_public" required:"false"`
}

// SiteListQuery is the query of the admin GET /sites.
type SiteListQuery struct {
	PageQuery
	Status   string `query:"status" doc:"active | inactive (disabled is an alias)" validate:"omitempty,oneof=active inactive disabled"`
	Keyword  string `query:"keyword" doc:"matches name, slug, description or domain" validate:"max=200"`
	TenantID int64  `query:"tenant_id" validate:"min=0"`
}

// ClientSiteListQuery is the query of the client GET /sites.
type ClientSiteListQuery struct {
	PageQuery
	ClientTenantQuery
	Keyword string `query:"keyword" doc:"matches name, description or slug" validate:"max=200"`
}

func (s *Server) siteRoutes() []Route {
	return append([]Route{
		{Surface: Admin, Method: http.MethodGet, Path: "/sites", Tag: "sites", Perm: EditorUp,
			Summary: "List sites (non-admins see their assigned sites), newest first", Query: SiteListQuery{},
			Response: Page[SiteResponse]{}, Handler: s.adminListSites},
		{Surface: Admin, Method: http.MethodGet, Path: "/sites/{id}", Tag: "sites", Perm: EditorUp,
			Summary: "Get a site", Response: SiteResponse{}, Handler: s.adminGetSite},
		{Surface: Admin, Method: http.MethodGet, Path: "/sites:byDomain/{domain}", Tag: "sites", Perm: EditorUp,
			Summary: "Get a site by domain", Response: SiteResponse{}, Handler: s.adminSiteByDomain},
		{Surface: Admin, Method: http.MethodGet, Path: "/sites:bySlug/{slug}", Tag: "sites", Perm: EditorUp,
			Summary: "Get a site by slug", Response: SiteResponse{}, Handler: s.adminSiteBySlug},
		{Surface: Admin, Method: http.MethodPost, Path: "/sites", Tag: "sites", Perm: AdminOnly, Created: true,
			Summary: "Create a site; name, slug and domain must be unique", Body: SiteCreate{},
			Response: SiteResponse{}, Handler: s.createSite},
		{Surface: Admin, Method: http.MethodPut, Path: "/sites/{id}", Tag: "sites", Perm: SiteAdminUp,
			Summary: "Update a site; name, slug and domain must stay unique", Body: SiteUpdate{},
			Response: SiteResponse{}, Handler: s.updateSite},
		{Surface: Admin, Method: http.MethodDelete, Path: "/sites/{id}", Tag: "sites", Perm: AdminOnly,
			Summary:  "Delete a site with its collections, documents, view events, chats, API keys and assignments",
			Response: SiteDeleted{}, Handler: s.deleteSite},

		{Surface: Client, Method: http.MethodGet, Path: "/sites", Tag: "sites", Perm: Public,
			Summary: "List active public sites", Query: ClientSiteListQuery{}, Response: Page[ClientSite]{},
			Description: "Private sites (is_public=false) and sites behind an access password are not listed.",
			Handler:     s.clientListSites},
		{Surface: Client, Method: http.MethodGet, Path: "/sites/{id}", Tag: "sites", Perm: Public,
			Summary: "Get an active site (cached 10 minutes)", Description: privateDetailDoc, Query: ClientTenantQuery{}, Response: ClientSite{},
			Handler: s.clientSiteByID},
		{Surface: Client, Method: http.MethodGet, Path: "/sites:bySlug/{slug}", Tag: "sites", Perm: Public,
			Summary: "Get an active site by slug (cached 10 minutes)", Description: privateDetailDoc, Query: ClientTenantQuery{}, Response: ClientSite{},
			Handler: s.clientSiteBySlug},
		{Surface: Client, Method: http.MethodGet, Path: "/sites:byDomain/{domain}", Tag: "sites", Perm: Public,
			Summary: "Get an active site by domain (cached 10 minutes)", Description: privateDetailDoc, Query: ClientTenantQuery{}, Response: ClientSite{},
			Handler: s.clientSiteByDomain},
	}, s.eeConfigRoutes()...)
}

// ---- normalisation and validation -----------------------------------------

func (s *Server) adminListSites(c *fiber.Ctx) error {
	var q SiteListQuery
	if err := bindPage(c, &q, 10, 1000); err != nil {
		return err
	}
	sites, total, err := s.d.DB.ListSites(c.UserContext(), db.SiteFilter{Status: siteStatus(q.Status), TenantID: q.TenantID,
		Keyword: strings.TrimSpace(q.Keyword), SiteIDs: principal(c).SiteFilter(), Limit: q.Limit(), Offset: q.Offset()})
	if err != nil {
		return err
	}
	x, err := s.loadSiteExtras(c.UserContext(), sites, false)
	if err != nil {
		return err
	}
	out := make([]SiteResponse, len(sites))
	for i := range sites {
		out[i] = siteResponse(&sites[i], x)
	}
	return paged(c, out, total, q.PageQuery)
}

// adminSiteByID authorises the caller for the {id} site at level need before
// loading it, so a non-admin learns nothing about sites outside its assignment.
func (s *Server) adminSiteByID(c *fiber.Ctx, need Perm) (*models.Site, error) {
	id, err := pathInt(c, "id")
	if err != nil {
		return nil, err
	}
	if err := requireSite(c, id, need); err != nil {
		return nil, err
	}
	return visibleSite(s.d.DB.GetSite(c.UserContext(), id))
}

func (s *Server) adminGetSite(c *fiber.Ctx) error {
	st, err := s.adminSiteByID(c, EditorUp)
	if err != nil {
		return err
	}
	return s.sendSite(c, st, http.StatusOK)
}

func (s *Server) adminSiteByDomain(c *fiber.Ctx) error {
	return s.sendSiteByKey(c, s.d.DB.SiteByDomain, "domain")
}

func (s *Server) adminSiteBySlug(c *fiber.Ctx) error {
	return s.sendSiteByKey(c, s.d.DB.SiteBySlug, "slug")
}

// sendSiteByKey answers with the site that lookup finds for the path
// parameter key, when it is visible and the caller may edit it.
func (s *Server) sendSiteByKey(c *fiber.Ctx, lookup func(context.Context, string) (*models.Site, error), key string) error {
	st, err := visibleSite(lookup(c.UserContext(), param(c, key)))
	if err != nil {
		return err
	}
	if err := requireSite(c, st.ID, EditorUp); err != nil {
		return err
	}
	return s.sendSite(c, st, http.StatusOK)
}

// siteConflict turns a uniqueness clash into a 409 naming the field. It runs
// before the write for a clear message; unique indexes catch races, and
// conflictFromDB names the field from the violated index.
func (s *Server) siteConflict(c *fiber.Ctx, st *models.Site) error {
	field, err := s.d.DB.SiteConflict(c.UserContext(), st)
	if err != nil {
		return err
	}
	if field != "" {
		return siteConflictErr(field, st)
	}
	return nil
}

func siteConflictErr(field string, st *models.Site) error {
	val := st.Name
	switch field {
	case "slug":
		val = st.Slug
	case "domain":
		if st.Domain != nil {
			val = *st.Domain
		}
	}
	return Conflict("%s: a site with %s %q already exists", field, field, val)
}

func conflictFromDB(err error, st *models.Site) error {
	if !errors.Is(err, db.ErrConflict) {
		return err
	}
	msg := err.Error()
	for _, f := range []string{"slug", "domain", "name"} {
		if strings.Contains(msg, f) {
			return siteConflictErr(f, st)
		}
	}
	return Conflict("site already exists")
}

func (s *Server) createSite(c *fiber.Ctx) error {
	var in SiteCreate
	if err := bindJSON(c, &in); err != nil {
		return err
	}
	name, err := normName(in.Name)
	if err != nil {
		return err
	}
	st := &models.Site{Name: name, Description: in.Description, Icon: strings.TrimSpace(in.Icon),
		Status: siteStatus(in.Status), ThemeColor: strings.TrimSpace(in.ThemeColor), LayoutMode: in.LayoutMode,
		QuickQuestions: encodeQuickQuestions(in.QuickQuestions), ShowPipelineTrace: in.ShowPipelineTrace,
		IsPublic: true}
	if st.Status == "" {
		st.Status = models.SiteActive
	}
	if st.BotConfig, err = mergeBotConfig("{}", in.BotConfig); err != nil {
		return err
	}
	if st.ThemeColor == "" {
		st.ThemeColor = "blue"
	}
	if st.LayoutMode == "" {
		st.LayoutMode = "sidebar"
	}
	if in.IsPublic != nil {
		st.IsPublic = *in.IsPublic
	}
	if in.Domain != nil {
		if st.Domain, err = normDomain(*in.Domain); err != nil {
			return err
		}
	}
	if strings.TrimSpace(in.Slug) != "" {
		if st.Slug, err = normSlug(in.Slug); err != nil {
			return err
		}
	}
	if st.TenantID, err = s.tenantOr(c, in.TenantID); err != nil {
		return err
	}
	if st.Slug == "" {
		if st.Slug, err = s.d.DB.UniqueSiteSlug(c.UserContext(), slugify(name)); err != nil {
			return err
		}
	}
	if err := s.siteConflict(c, st); err != nil {
		return err
	}
	newAdmin, assignTo, err := s.siteAdmin(c, &in, st.TenantID)
	if err != nil {
		return err
	}
	if err := s.d.DB.CreateSiteWithAdmin(c.UserContext(), st, newAdmin, assignTo); err != nil {
		if newAdmin != nil && errors.Is(err, db.ErrConflict) && strings.Contains(err.Error(), "email") {
			return Conflict("admin_email: email %s is already used", newAdmin.Email)
		}
		return conflictFromDB(err, st)
	}
	return s.sendSite(c, st, http.StatusCreated)
}

// siteAdmin resolves the administrator SiteCreate's admin_* fields give a new
// site, without writing anything: none without admin_email; an existing
// site_admin or editor with that email is assigned the site (its name and
// password are left alone, and an admin needs nothing); otherwise a new
// active site_admin of the site's tenant is made with admin_name (default:
// the part of the email before @) and admin_password, which is then
// required (422). The caller writes the site and the user together.
func (s *Server) siteAdmin(c *fiber.Ctx, in *SiteCreate, tenantID int64) (newUser *models.User, assignTo int64, err error) {
	email := strings.TrimSpace(in.AdminEmail)
	if email == "" {
		if in.AdminName != "" || in.AdminPassword != "" {
			return nil, 0, Invalid("admin_email: field required with admin_name or admin_password")
		}
		return nil, 0, nil
	}
	u, err := s.d.DB.UserByEmail(c.UserContext(), email)
	switch {
	case err == nil && u.TenantID != tenantID:
		// A user of another tenant is never given this site: the email
		// is taken, as creating a user with it would say.
		return nil, 0, Conflict("admin_email: email %s is already used", email)
	case err == nil && u.Role == models.RoleAdmin:
		return nil, 0, nil
	case err == nil:
		return nil, u.ID, nil
	case !errors.Is(err, db.ErrNotFound):
		return nil, 0, err
	}
	if in.AdminPassword == "" {
		return nil, 0, Invalid("admin_password: field required for a new user (no user has email %s)", email)
	}
	name := strings.TrimSpace(in.AdminName)
	if name == "" {
		name, _, _ = strings.Cut(email, "@")
	}
	newUser, _, err = s.newUser(c, email, name, in.AdminPassword, models.RoleSiteAdmin, models.UserActive, nil, tenantID)
	return newUser, 0, err
}

func (s *Server) updateSite(c *fiber.Ctx) error {
	var in SiteUpdate
	st, err := loadThenBindAs(c, s.adminSiteByID, SiteAdminUp, bindJSON, &in)
	if err != nil {
		return err
	}
	if in.Name != nil {
		if st.Name, err = normName(*in.Name); err != nil {
			return err
		}
	}
	if in.Slug != nil {
		if st.Slug, err = normSlug(*in.Slug); err != nil {
			return err
		}
	}
	if in.Domain != nil {
		if st.Domain, err = normDomain(*in.Domain); err != nil {
			return err
		}
	}
	if in.TenantID != nil && *in.TenantID != st.TenantID {
		if !principal(c).IsAdmin() {
			return Errf(http.StatusForbidden, "tenant_id: only admins may move a site to another tenant")
		}
		if st.TenantID, err = s.tenantOr(c, *in.TenantID); err != nil {
			return err
		}
	}
	setIf(&st.Description, in.Description)
	if in.Status != nil {
		st.Status = siteStatus(*in.Status)
	}
	setIf(&st.LayoutMode, in.LayoutMode)
	setIf(&st.ShowPipelineTrace, in.ShowPipelineTrace)
	setIf(&st.IsPublic, in.IsPublic)
	if in.Icon != nil {
		st.Icon = strings.TrimSpace(*in.Icon)
	}
	if in.ThemeColor != nil {
		st.ThemeColor = strings.TrimSpace(*in.ThemeColor)
	}
	if in.QuickQuestions != nil {
		st.QuickQuestions = encodeQuickQuestions(*in.QuickQuestions)
	}
	if in.BotConfig != nil {
		if st.BotConfig, err = mergeBotConfig(st.BotConfig, *in.BotConfig); err != nil {
			return err
		}
	}
	clearNulls(c.Body(), map[string]func(){"description": func() { st.Description = "" }, "icon": func() { st.Icon = "" },
		"domain": func() { st.Domain = nil }, "quick_questions": func() { st.QuickQuestions = "[]" },
		"bot_config": func() { st.BotConfig, _ = mergeBotConfig(st.BotConfig, nil) }})
	if err := s.siteConflict(c, st); err != nil {
		return err
	}
	if err := s.d.DB.UpdateSite(c.UserContext(), st); err != nil {
		if errors.Is(err, db.ErrNotFound) {
			return NotFound("site")
		}
		return conflictFromDB(err, st)
	}
	return s.sendSite(c, st, http.StatusOK)
}

func (s *Server) deleteSite(c *fiber.Ctx) error {
	st, err := s.adminSiteByID(c, AdminOnly)
	if err != nil {
		return err
	}
	if s.d.Temporal == nil {
		// No workflow engine (tests, tools): delete the rows in one transaction.
		if err := s.d.DB.DeleteSiteCascade(c.UserContext(), st.ID); err != nil {
			if errors.Is(err, db.ErrNotFound) {
				return NotFound("site")
			}
			return err
		}
		return ok(c, SiteDeleted{Message: "Site deleted"})
	}
	// The site disappears from both APIs at once; the DeleteSite workflow then
	// removes vectors, files, documents, chats, collections and the row in
	// retryable steps.
	if err := s.d.DB.MarkSiteDeleting(c.UserContext(), st.ID); err != nil {
		return err
	}
	jobID, err := s.startJob(c, jobStart{id: workflows.DeleteSiteID(st.ID), wf: workflows.DeleteSite,
		input: workflows.DeleteSiteInput{SiteID: st.ID, TenantID: st.TenantID},
		meta: workflows.JobMeta{Kind: JobDeleteSite, TenantID: st.TenantID, SiteID: st.ID,
			Title: workflows.JobTitle("Delete site", st.Name, "")}})
	if err != nil {
		return err
	}
	return ok(c, SiteDeleted{Message: "Site deletion started", JobID: jobID})
}

// SiteDeleted is the result of DELETE /sites/{id}; job_id names the
// DeleteSite job when one runs.
type SiteDeleted struct {
	Message string `json:"message"`
	JobID   string `json:"job_id,omitempty"`
}

// ---- client handlers ------------------------------------------------------

// privateSiteDoc is the OpenAPI note of client reads of one site's content.
const privateSiteDoc = "A private site (is_public=false) answers 401 unless the request carries the admin token " +
	"(Authorization: Bearer) of its staff; a site behind a password needs X-Site-Access-Token (or that staff token)."

// privateDetailDoc is the OpenAPI note of the client site detail.
const privateDetailDoc = "A private site (is_public=false) without a password answers 401 unless the request carries " +
	"the admin token (Authorization: Bearer) of its staff; a site behind a password keeps a readable detail (its sign-in page)."
