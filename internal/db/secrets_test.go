package db_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lorekb/lore/internal/db"
	"github.com/lorekb/lore/internal/db/dbtest"
	"github.com/lorekb/lore/internal/sealed"
	"github.com/lorekb/lore/models"
)

// rawColumn reads a stored document as the database holds it.
func rawColumn(t *testing.T, d *db.DB, table, col string, id int64) string {
	t.Helper()
	var v string
	if err := d.NewSelect().Table(table).Column(col).Where("id = ?", id).Scan(context.Background(), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func secretBox(t *testing.T, key string) *sealed.Box {
	t.Helper()
	b, err := sealed.New(key)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSecretsAreSealedAtRest, on both dialects: system configs, data
// sources and site bot settings written before secrets were encrypted (no
// key) are rewritten sealed by SealStoredSecrets; every row written with the
// key holds no clear secret; every read gives the clear value back; and the
// pass refuses a key that does not open what is stored, naming
// LORE_SECRET_KEY, without changing anything.
func TestSecretsAreSealedAtRest(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		tenant, _ := cfgTenants(t, d)
		// An older version's rows: clear text.
		if _, err := d.PutSystemConfig(ctx, tenant, "ai-config", `{"chat":{"api_key":"sk-legacy-chat-key","model":"m"}}`); err != nil {
			t.Fatal(err)
		}
		legacy, err := d.GetSystemConfig(ctx, tenant, "ai-config")
		if err != nil {
			t.Fatal(err)
		}
		site := cfgSite(t, d, tenant, "sealed")
		site.BotConfig = `{"wecom":{"corp_secret":"legacy-corp-secret","agent_id":"7"}}`
		if err := d.UpdateSite(ctx, site); err != nil {
			t.Fatal(err)
		}
		ds := &models.DataSource{TenantID: tenant, Name: "bucket", Type: models.DataSourceS3,
			Config: `{"endpoint":"s3.example.com","access_key":"AKIALEGACY","secret_key":"legacy-bucket-secret"}`}
		if err := d.SaveDataSource(ctx, ds); err != nil {
			t.Fatal(err)
		}
		if raw := rawColumn(t, d, "system_configs", "value", legacy.ID); !strings.Contains(raw, "sk-legacy-chat-key") {
			t.Fatalf("setup: legacy row not clear: %s", raw)
		}

		d.Secrets = secretBox(t, "an-operator-secret-key-of-32-bytes-or-more")
		n, err := d.SealStoredSecrets(ctx)
		if err != nil || n != 3 {
			t.Fatalf("sealed %d rows: %v", n, err)
		}
		if n, err := d.SealStoredSecrets(ctx); err != nil || n != 0 {
			t.Fatalf("second pass sealed %d rows: %v", n, err)
		}
		// New writes with the key.
		if _, err := d.UpdateSystemConfig(ctx, tenant, "doc-processor", func(string, bool) (string, error) {
			return `[{"name":"docling","api_key":"pk-new-processor-key"}]`, nil
		}); err != nil {
			t.Fatal(err)
		}
		site2 := cfgSite(t, d, tenant, "sealed-two")
		site2.BotConfig = `{"feishu":{"app_secret":"fs-new-app-secret"}}`
		if err := d.UpdateSite(ctx, site2); err != nil {
			t.Fatal(err)
		}
		if site2.BotConfig != `{"feishu":{"app_secret":"fs-new-app-secret"}}` {
			t.Fatalf("the caller's copy changed: %s", site2.BotConfig)
		}
		ds.Config = `{"endpoint":"s3.example.com","access_key":"AKIANEW","secret_key":"new-bucket-secret"}`
		if err := d.SaveDataSource(ctx, ds); err != nil {
			t.Fatal(err)
		}
		proc, _ := d.GetSystemConfig(ctx, tenant, "doc-processor")
		for _, c := range []struct {
			table, col string
			id         int64
			clear      []string
		}{
			{"system_configs", "value", legacy.ID, []string{"sk-legacy-chat-key"}},
			{"system_configs", "value", proc.ID, []string{"pk-new-processor-key"}},
			{"sites", "bot_config", site.ID, []string{"legacy-corp-secret"}},
			{"sites", "bot_config", site2.ID, []string{"fs-new-app-secret"}},
			{"data_sources", "config", ds.ID, []string{"new-bucket-secret", "AKIANEW"}},
		} {
			raw := rawColumn(t, d, c.table, c.col, c.id)
			for _, s := range c.clear {
				if strings.Contains(raw, s) {
					t.Errorf("%s %d holds %q in clear: %s", c.table, c.id, s, raw)
				}
			}
			if !strings.Contains(raw, sealed.Prefix) {
				t.Errorf("%s %d not sealed: %s", c.table, c.id, raw)
			}
		}
		// Reads give the clear values.
		if row, err := d.GetSystemConfig(ctx, tenant, "ai-config"); err != nil || !strings.Contains(row.Value, `"api_key":"sk-legacy-chat-key"`) {
			t.Fatalf("ai-config read: %+v %v", row, err)
		}
		if rows, err := d.ListSystemConfigs(ctx, tenant); err != nil || len(rows) != 2 || !strings.Contains(rows[0].Value+rows[1].Value, "pk-new-processor-key") {
			t.Fatalf("configs list: %+v %v", rows, err)
		}
		if st, err := d.GetSite(ctx, site.ID); err != nil || !strings.Contains(st.BotConfig, "legacy-corp-secret") {
			t.Fatalf("site read: %v %v", st, err)
		}
		if st, err := d.SiteBySlug(ctx, "sealed-two"); err != nil || !strings.Contains(st.BotConfig, "fs-new-app-secret") {
			t.Fatalf("site by slug: %v", err)
		}
		sites, _, err := d.ListSites(ctx, db.SiteFilter{Limit: 10})
		if err != nil || len(sites) != 2 || strings.Contains(sites[0].BotConfig+sites[1].BotConfig, sealed.Prefix) {
			t.Fatalf("site list: %v", err)
		}
		if got, err := d.GetDataSource(ctx, ds.ID); err != nil || !strings.Contains(got.Config, `"secret_key":"new-bucket-secret"`) {
			t.Fatalf("data source read: %v", err)
		}
		if list, _, err := d.ListDataSources(ctx, db.DataSourceFilter{TenantID: tenant}); err != nil || len(list) != 1 || !strings.Contains(list[0].Config, "AKIANEW") {
			t.Fatalf("data source list: %v", err)
		}
		if _, err := d.UpdateSystemConfig(ctx, tenant, "ai-config", func(cur string, _ bool) (string, error) {
			if !strings.Contains(cur, "sk-legacy-chat-key") {
				t.Errorf("update sees %s", cur)
			}
			return cur, nil
		}); err != nil {
			t.Fatal(err)
		}

		// Another key: refused, nothing rewritten.
		before := rawColumn(t, d, "system_configs", "value", legacy.ID)
		d.Secrets = secretBox(t, "another-key-that-is-32-bytes-or-longer")
		_, err = d.SealStoredSecrets(ctx)
		if !errors.Is(err, sealed.ErrWrongKey) || !strings.Contains(err.Error(), "LORE_SECRET_KEY") {
			t.Fatalf("wrong key: %v", err)
		}
		if _, err := d.GetSystemConfig(ctx, tenant, "ai-config"); !errors.Is(err, sealed.ErrWrongKey) {
			t.Fatalf("read with the wrong key: %v", err)
		}
		if after := rawColumn(t, d, "system_configs", "value", legacy.ID); after != before {
			t.Fatal("the refused pass changed a row")
		}
	})
}
