package db_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/db/dbtest"
	"github.com/lorekb/lore/models"
)

// cfgTenants returns the default tenant and a second one.
func cfgTenants(t *testing.T, d *db.DB) (int64, int64) {
	t.Helper()
	ctx := context.Background()
	a := defaultTenant(t, d)
	now := time.Now().UTC()
	b := &models.Tenant{Slug: "second", Name: "Second", CreatedAt: now, UpdatedAt: now}
	if _, err := d.NewInsert().Model(b).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	return a, b.ID
}

func cfgSite(t *testing.T, d *db.DB, tenant int64, slug string) *models.Site {
	t.Helper()
	s := &models.Site{TenantID: tenant, Name: slug, Slug: slug, Status: models.SiteActive, ThemeColor: "blue",
		LayoutMode: "sidebar", IsPublic: true}
	if err := d.CreateSite(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSystemConfigQueries(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		a, b := cfgTenants(t, d)

		if _, err := d.GetSystemConfig(ctx, a, "ai-config"); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("missing: %v", err)
		}
		if _, err := d.PutSystemConfig(ctx, a, "ai-config", `{"v":1}`); err != nil {
			t.Fatal(err)
		}
		first, _ := d.GetSystemConfig(ctx, a, "ai-config")
		time.Sleep(5 * time.Millisecond)
		// upsert on (tenant_id, config_key): replaced, not duplicated
		if _, err := d.PutSystemConfig(ctx, a, "ai-config", `{"v":2}`); err != nil {
			t.Fatal(err)
		}
		if _, err := d.PutSystemConfig(ctx, b, "ai-config", `{"v":"b"}`); err != nil {
			t.Fatal(err)
		}
		if _, err := d.PutSystemConfig(ctx, a, "bot-config", `{}`); err != nil {
			t.Fatal(err)
		}
		row, err := d.GetSystemConfig(ctx, a, "ai-config")
		if err != nil || row.Value != `{"v":2}` || !row.UpdatedAt.After(first.UpdatedAt) {
			t.Fatalf("get: %+v %v", row, err)
		}
		rows, err := d.ListSystemConfigs(ctx, a)
		if err != nil || len(rows) != 2 || rows[0].ConfigKey != "ai-config" || rows[1].ConfigKey != "bot-config" {
			t.Fatalf("list a: %+v %v", rows, err)
		}
		if rows, _ := d.ListSystemConfigs(ctx, b); len(rows) != 1 || rows[0].Value != `{"v":"b"}` {
			t.Fatalf("list b: %+v", rows)
		}
		if rows, _ := d.ListSystemConfigs(ctx, 999); rows == nil || len(rows) != 0 {
			t.Fatalf("list none: %#v", rows)
		}

		// Update: a failing fn writes nothing; a new key is inserted
		boom := errors.New("boom")
		if _, err := d.UpdateSystemConfig(ctx, a, "ai-config", func(cur string, exists bool) (string, error) {
			return `{"v":3}`, boom
		}); err != boom {
			t.Fatalf("fn error: %v", err)
		}
		if row, _ := d.GetSystemConfig(ctx, a, "ai-config"); row.Value != `{"v":2}` {
			t.Fatalf("failed update wrote %s", row.Value)
		}
		if _, err := d.UpdateSystemConfig(ctx, b, "never", func(string, bool) (string, error) { return "", boom }); err != boom {
			t.Fatalf("fn error on a new key: %v", err)
		}
		if _, err := d.GetSystemConfig(ctx, b, "never"); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("failed first update left a row: %v", err)
		}
		if _, err := d.UpdateSystemConfig(ctx, b, "bot-config", func(cur string, exists bool) (string, error) {
			if exists || cur != "" {
				t.Errorf("new key seen as %q %v", cur, exists)
			}
			return `{"new":true}`, nil
		}); err != nil {
			t.Fatal(err)
		}
		// concurrent read-modify-write updates all land, the first ones
		// racing to create the row included
		var wg sync.WaitGroup
		errs := make(chan error, 12)
		for i := 0; i < 12; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				_, err := d.UpdateSystemConfig(ctx, b, "counter", func(cur string, exists bool) (string, error) {
					return cur + fmt.Sprint(i%10), nil
				})
				errs <- err
			}(i)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if row, _ := d.GetSystemConfig(ctx, b, "counter"); len(row.Value) != 12 {
			t.Fatalf("lost updates: %q", row.Value)
		}

		// delete
		if err := d.DeleteSystemConfig(ctx, a, "ai-config"); err != nil {
			t.Fatal(err)
		}
		if err := d.DeleteSystemConfig(ctx, a, "ai-config"); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("second delete: %v", err)
		}
		if _, err := d.GetSystemConfig(ctx, b, "ai-config"); err != nil {
			t.Fatalf("other tenant's row deleted: %v", err)
		}
	})
}

func TestSitePasswordQueries(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		a, _ := cfgTenants(t, d)
		s := cfgSite(t, d, a, "pw")
		if err := d.SetSitePassword(ctx, s.ID, "$2a$hash"); err != nil {
			t.Fatal(err)
		}
		got, _ := d.GetSite(ctx, s.ID)
		if got.PasswordHash != "$2a$hash" || !got.RequiresPassword || got.IsPublic || !got.HasPassword() {
			t.Fatalf("set: %+v", got)
		}
		// a later site update does not touch the password
		got.Description = "edited"
		if err := d.UpdateSite(ctx, got); err != nil {
			t.Fatal(err)
		}
		if err := d.ClearSitePassword(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
		got, _ = d.GetSite(ctx, s.ID)
		if got.PasswordHash != "" || got.RequiresPassword || !got.IsPublic || got.Description != "edited" {
			t.Fatalf("clear: %+v", got)
		}
		if err := d.SetSitePassword(ctx, 99999, "x"); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("missing site: %v", err)
		}
		if err := d.MarkSiteDeleting(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
		if err := d.ClearSitePassword(ctx, s.ID); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("deleting site: %v", err)
		}
	})
}

func TestSiteAPIKeyQueries(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		a, _ := cfgTenants(t, d)
		s1, s2 := cfgSite(t, d, a, "k1"), cfgSite(t, d, a, "k2")
		k1 := &models.SiteAPIKey{SiteID: s1.ID, Name: "one", Prefix: "lore_abc", KeyHash: "h1"}
		k2 := &models.SiteAPIKey{SiteID: s1.ID, Name: "two", Prefix: "lore_def", KeyHash: "h2"}
		for _, k := range []*models.SiteAPIKey{k1, k2} {
			if err := d.CreateSiteAPIKey(ctx, k); err != nil || k.ID == 0 {
				t.Fatalf("create: %v %+v", err, k)
			}
		}
		if err := d.CreateSiteAPIKey(ctx, &models.SiteAPIKey{SiteID: s2.ID, Prefix: "x", KeyHash: "h1"}); !errors.Is(err, db.ErrConflict) {
			t.Fatalf("duplicate hash: %v", err)
		}
		keys, err := d.ListSiteAPIKeys(ctx, s1.ID)
		if err != nil || len(keys) != 2 || keys[0].ID != k2.ID || keys[1].Name != "one" {
			t.Fatalf("list: %+v %v", keys, err)
		}
		if keys, _ := d.ListSiteAPIKeys(ctx, s2.ID); keys == nil || len(keys) != 0 {
			t.Fatalf("list other: %#v", keys)
		}
		if st, err := d.SiteByAPIKeyHash(ctx, "h1"); err != nil || st.ID != s1.ID {
			t.Fatalf("lookup: %v", err)
		}
		if _, err := d.RevokeSiteAPIKey(ctx, s2.ID, k1.ID); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("revoke via other site: %v", err)
		}
		rk, err := d.RevokeSiteAPIKey(ctx, s1.ID, k1.ID)
		if err != nil || rk.RevokedAt == nil {
			t.Fatalf("revoke: %+v %v", rk, err)
		}
		again, _ := d.RevokeSiteAPIKey(ctx, s1.ID, k1.ID)
		if !again.RevokedAt.Equal(*rk.RevokedAt) {
			t.Fatalf("revocation time moved")
		}
		if _, err := d.SiteByAPIKeyHash(ctx, "h1"); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("revoked key still works: %v", err)
		}
		if _, err := d.SiteByAPIKeyHash(ctx, "h2"); err != nil {
			t.Fatalf("other key revoked too: %v", err)
		}
		if m, err := d.SiteTenants(ctx, []int64{s1.ID, 99999}); err != nil || len(m) != 1 || m[s1.ID] != a {
			t.Fatalf("site tenants: %v %v", m, err)
		}
		if m, err := d.SiteTenants(ctx, nil); err != nil || len(m) != 0 {
			t.Fatalf("no ids: %v %v", m, err)
		}
		if !strings.HasPrefix(rk.Prefix, "lore_") {
			t.Fatalf("prefix %q", rk.Prefix)
		}
	})
}
