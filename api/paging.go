package api

import "github.com/gofiber/fiber/v2"

// Paginated lists share one query (PageQuery: page, size, is_pager), one
// binder (bindPage) and one rule for what the answer states (pagination):
// the page asked for, or page 1 and size = total when is_pager=0 asks for
// every row.

// PageQuery is the page, size and is_pager query of paginated lists.
type PageQuery struct {
	PageParam *int `query:"page" json:"page" doc:"page number, from 1" validate:"omitempty,min=1,max=1000000"`
	SizeParam *int `query:"size" json:"size" doc:"page size" validate:"omitempty,min=1,max=1000"`
	IsPager   *int `query:"is_pager" json:"is_pager" doc:"1 (default) pages; 0 returns every row" validate:"omitempty,oneof=0 1"`
	// Page and Size are the effective values after Defaults.
	Page, Size int
}

// Paged reports whether the caller wants pages (is_pager defaults to 1).
func (p PageQuery) Paged() bool { return p.IsPager == nil || *p.IsPager != 0 }

// Defaults fills page and size defaults and enforces the per-route maximum.
func (p *PageQuery) Defaults(size, max int) error {
	p.Page, p.Size = 1, size
	if p.PageParam != nil {
		p.Page = *p.PageParam
	}
	if p.SizeParam != nil {
		p.Size = *p.SizeParam
	}
	if max > 0 && p.Size > max {
		return Invalid("size: must be at most %d", max)
	}
	return nil
}

// Limit is the SQL row limit of the page (every row when is_pager=0).
func (p PageQuery) Limit() int {
	if !p.Paged() {
		return 10000
	}
	return p.Size
}

// Offset is the first row of the page.
func (p PageQuery) Offset() int {
	if !p.Paged() {
		return 0
	}
	return (p.Page - 1) * p.Size
}

// pager is a list query: PageQuery itself or a struct that embeds it.
type pager interface{ pageQuery() *PageQuery }

func (p *PageQuery) pageQuery() *PageQuery { return p }

// bindPage binds a list query (a pointer to PageQuery or to a struct that
// embeds it) and applies the route's default and largest page size.
func bindPage(c *fiber.Ctx, q pager, size, max int) error {
	if err := bindQuery(c, q); err != nil {
		return err
	}
	return q.pageQuery().Defaults(size, max)
}

// listPage is bindPage with a route's page sizes, as loadThenBind's bind;
// q must be a pager.
func listPage(size, max int) func(*fiber.Ctx, any) error {
	return func(c *fiber.Ctx, q any) error { return bindPage(c, q.(pager), size, max) }
}

// clientPage opens a client list: it binds the list query q (10 a page, at
// most 1000) and resolves its tenant filter tq, a part of q. listed is false
// when the handler is done: err is the binding's or the lookup's error, or
// the empty page of T it answered because the tenant slug names no tenant.
func clientPage[T any](s *Server, c *fiber.Ctx, q pager, tq *ClientTenantQuery) (tenant tenantFilter, listed bool, err error) {
	if err := bindPage(c, q, 10, 1000); err != nil {
		return tenantFilter{}, false, err
	}
	tenant, err = s.clientTenant(c.UserContext(), *tq)
	if err != nil || !tenant.none {
		return tenant, err == nil, err
	}
	return tenant, false, paged[T](c, nil, 0, *q.pageQuery())
}

// pagination is what a list answer states about its page.
func (p PageQuery) pagination(total int) Pagination {
	if !p.Paged() {
		return Pagination{IsPager: 0, Page: 1, Size: total, Total: total}
	}
	return Pagination{IsPager: 1, Page: p.Page, Size: p.Size, Total: total}
}

// reported is the page and size a list in the flat list, total, page, size
// shape states.
func (p PageQuery) reported(total int) (page, size int) {
	pg := p.pagination(total)
	return pg.Page, pg.Size
}

// paged writes a list page in the envelope's list + pagination shape; a nil
// list encodes as [].
func paged[T any](c *fiber.Ctx, list []T, total int, p PageQuery) error {
	if list == nil {
		list = []T{}
	}
	return ok(c, Page[T]{List: list, Pagination: p.pagination(total)})
}
