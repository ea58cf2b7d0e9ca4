package api

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/lorekb/lore/internal/db"
)

// ClientTenantQuery is the tenant filter of Client API reads (WIRE §6,
// "Client tenant"): tenant_id, tenant_slug, or both, which must then name
// the same tenant. A list answers empty and a single read 404 when the slug
// names no tenant or another tenant than tenant_id.
type ClientTenantQuery struct {
	TenantID   int64  `query:"tenant_id" doc:"only this tenant" validate:"min=0"`
	TenantSlug string `query:"tenant_slug" doc:"only the tenant with this slug; an unknown slug, or one that is not tenant_id's, matches nothing" validate:"max=200"`
}

// tenantFilter is a resolved ClientTenantQuery: id 0 admits every tenant;
// none admits nothing.
type tenantFilter struct {
	id   int64
	none bool
}

// admits reports whether a row of the tenant passes the filter.
func (f tenantFilter) admits(tenantID int64) bool {
	return !f.none && (f.id == 0 || f.id == tenantID)
}

// tenantSlugTTL bounds how old a tenant slug lookup may be. The API never
// creates, renames or deletes tenants, so only a change made in the database
// directly waits this long to show.
const tenantSlugTTL = 10 * time.Second

// clientTenant resolves the tenant filter of a client read, reading the slug
// through s.tenantSlugs (an unknown slug is kept as 0).
func (s *Server) clientTenant(ctx context.Context, q ClientTenantQuery) (tenantFilter, error) {
	slug := strings.TrimSpace(q.TenantSlug)
	if slug == "" {
		return tenantFilter{id: q.TenantID}, nil
	}
	id, err := s.tenantSlugs.Get(slug, func() (int64, error) {
		t, err := s.d.DB.TenantBySlug(ctx, slug)
		if errors.Is(err, db.ErrNotFound) {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		return t.ID, nil
	})
	if err != nil {
		return tenantFilter{}, err
	}
	if id == 0 || (q.TenantID != 0 && q.TenantID != id) {
		return tenantFilter{none: true}, nil
	}
	return tenantFilter{id: id}, nil
}

// envelopedTenant reads the tenant_id of an encoded client site envelope
// (a cached detail body); 0 when it has none.
func envelopedTenant(body []byte) int64 {
	var env struct {
		Data struct {
			TenantID int64 `json:"tenant_id"`
		} `json:"data"`
	}
	_ = json.Unmarshal(body, &env)
	return env.Data.TenantID
}
