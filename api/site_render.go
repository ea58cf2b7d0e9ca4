package api

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/lorekb/lore/models"
)

var (
	slugRe   = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)
	domainRe = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*(:[0-9]{1,5})?$`)
)

// slugify derives a slug from a name: ASCII letters (lowercased) and digits
// are kept, every other run of characters becomes one hyphen. It may return
// "" (a name with no ASCII letters or digits).
func slugify(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			if b.Len() >= 200 {
				break
			}
			continue
		}
		dash = true
	}
	return b.String()
}

func normSlug(raw string) (string, error) {
	slug := strings.ToLower(strings.TrimSpace(raw))
	if !slugRe.MatchString(slug) {
		return "", Invalid("slug: may contain only lowercase letters, digits, '-' and '_', starting with a letter or digit")
	}
	return slug, nil
}

// normDomain lowercases and checks a domain; "" means no domain (nil).
func normDomain(raw string) (*string, error) {
	dom := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(raw)), ".")
	if dom == "" {
		return nil, nil
	}
	if len(dom) > 253 || !domainRe.MatchString(dom) {
		return nil, Invalid("domain: must be a host name such as docs.example.com")
	}
	return &dom, nil
}

func normName(raw string) (string, error) {
	name := strings.TrimSpace(raw)
	if name == "" {
		return "", Invalid("name: field required")
	}
	return name, nil
}

func encodeQuickQuestions(qs []QuickQuestion) string {
	if qs == nil {
		return "[]"
	}
	for i := range qs {
		qs[i].Text = strings.TrimSpace(qs[i].Text)
		qs[i].Category = strings.TrimSpace(qs[i].Category)
	}
	b, _ := json.Marshal(qs)
	return string(b)
}

func decodeQuickQuestions(raw string) []QuickQuestion {
	qs := []QuickQuestion{}
	_ = json.Unmarshal([]byte(raw), &qs)
	if qs == nil {
		qs = []QuickQuestion{}
	}
	return qs
}

// webWidget extracts the web_widget section of the site's bot settings, or nil.
func webWidget(botConfig string) map[string]any {
	var cfg struct {
		WebWidget map[string]any `json:"web_widget"`
	}
	if botConfig == "" || json.Unmarshal([]byte(botConfig), &cfg) != nil {
		return nil
	}
	return cfg.WebWidget
}

// ---- responses ------------------------------------------------------------

// siteExtras are the per-site figures of a page of sites, loaded with one
// grouped query each.
type siteExtras struct {
	articles, views map[int64]int64
	tenants         map[int64]string
}

func (s *Server) loadSiteExtras(ctx context.Context, sites []models.Site, client bool) (siteExtras, error) {
	ids := make([]int64, len(sites))
	tids := make([]int64, 0, 1)
	seen := map[int64]bool{}
	for i := range sites {
		ids[i] = sites[i].ID
		if !seen[sites[i].TenantID] {
			seen[sites[i].TenantID] = true
			tids = append(tids, sites[i].TenantID)
		}
	}
	var x siteExtras
	var err error
	status := ""
	if client {
		status = models.DocPublished
	}
	if x.articles, err = s.d.DB.SiteDocumentCounts(ctx, ids, status); err != nil {
		return x, err
	}
	if client {
		if x.views, err = s.d.DB.SiteViewCounts(ctx, ids); err != nil {
			return x, err
		}
	}
	x.tenants, err = s.d.DB.TenantSlugs(ctx, tids)
	return x, err
}

func siteResponse(st *models.Site, x siteExtras) SiteResponse {
	return SiteResponse{ID: st.ID, CreatedAt: st.CreatedAt, UpdatedAt: st.UpdatedAt, Name: st.Name,
		TenantID: st.TenantID, TenantSlug: x.tenants[st.TenantID], Slug: st.Slug, Domain: st.Domain,
		Description: nullText(st.Description), Icon: nullText(st.Icon), Status: st.Status, ThemeColor: st.ThemeColor,
		LayoutMode: st.LayoutMode, QuickQuestions: siteQuickQuestions(st.QuickQuestions), BotConfig: siteBotConfig(st.BotConfig),
		ShowPipelineTrace: st.ShowPipelineTrace, ArticleCount: x.articles[st.ID],
		WebWidget: webWidget(st.BotConfig), IsPublic: st.IsPublic, RequiresPassword: st.RequiresPassword,
		HasPassword: st.HasPassword()}
}

func clientSiteResponse(st *models.Site, x siteExtras) ClientSite {
	return ClientSite{ID: st.ID, Name: st.Name, Slug: st.Slug, Domain: st.Domain, Description: nullText(st.Description),
		Icon: nullText(st.Icon), ArticleCount: x.articles[st.ID], ViewCount: x.views[st.ID], TenantID: st.TenantID,
		TenantSlug: x.tenants[st.TenantID], ThemeColor: st.ThemeColor, LayoutMode: st.LayoutMode,
		QuickQuestions: siteQuickQuestions(st.QuickQuestions), WebWidget: webWidget(st.BotConfig),
		IsPublic: st.IsPublic, RequiresPassword: st.RequiresPassword, HasPassword: st.HasPassword()}
}

func (s *Server) sendSite(c *fiber.Ctx, st *models.Site, status int) error {
	x, err := s.loadSiteExtras(c.UserContext(), []models.Site{*st}, false)
	if err != nil {
		return err
	}
	if status == http.StatusCreated {
		return created(c, siteResponse(st, x))
	}
	return ok(c, siteResponse(st, x))
}
