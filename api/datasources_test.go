package api

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/lorekb/lore/models"
)

// TestDataSourceEndpointsRefuseInternalAddresses: an external bucket's
// endpoint follows the provider-endpoint rules when saved: metadata,
// link-local and unspecified addresses are refused always, loopback and
// private ones unless LORE_ALLOWED_PROVIDER_HOSTS allows them (422, nothing
// stored, and no connection tried); an allowed one is reached (nothing
// listens: 400). A stored secret never follows a changed endpoint (host,
// port or scheme): omitted or masked, it is 422.
func TestDataSourceEndpointsRefuseInternalAddresses(t *testing.T) {
	bucket := func(ep string, extra ...string) map[string]any {
		cfg := map[string]any{"endpoint": ep, "bucket": "team-bucket", "access_key": "AKIA12345", "secret_key": "bucket-secret-123"}
		for i := 0; i+1 < len(extra); i += 2 {
			cfg[extra[i]] = extra[i+1]
		}
		return map[string]any{"name": "ext", "type": "s3", "config": cfg}
	}
	h := newHarness(t, "sqlite", nil)
	for _, ep := range []string{"http://169.254.169.254", "169.254.169.254:80", "metadata.google.internal", "http://0.0.0.0:9000",
		"127.0.0.1:9000", "localhost:9000", "http://[::1]:9000", "10.0.0.5:9000", "192.168.1.10", "[fe80::1]:9000"} {
		r := h.do("POST", adminPath+"/data-sources", bucket(ep), h.admin)
		if r.Status != 422 || !strings.Contains(r.Msg, "config.endpoint") {
			t.Errorf("endpoint %s: %d %s", ep, r.Status, r.Raw)
		}
	}
	var list []DataSource
	h.must(200, "GET", adminPath+"/data-sources", nil, h.admin).into(t, &list)
	if len(list) != 0 {
		t.Fatalf("stored: %+v", list)
	}

	allowed := newHarness(t, "sqlite", map[string]string{"LORE_ALLOWED_PROVIDER_HOSTS": "127.0.0.1,169.254.0.0/16"})
	if r := allowed.do("POST", adminPath+"/data-sources", bucket("127.0.0.1:1"), allowed.admin); r.Status != 400 || !strings.Contains(r.Msg, "cannot be reached") {
		t.Fatalf("allowed loopback: %d %s", r.Status, r.Raw)
	}
	if r := allowed.do("POST", adminPath+"/data-sources", bucket("169.254.169.254"), allowed.admin); r.Status != 422 {
		t.Fatalf("metadata with an allow-list: %d %s", r.Status, r.Raw)
	}

	// A stored bucket: its secret stays with its endpoint.
	tid, _ := h.d.DB.EnsureDefaultTenant(context.Background())
	ds := &models.DataSource{TenantID: tid, Name: "stored", Type: models.DataSourceS3,
		Config: `{"endpoint":"s3.example.com","bucket":"team-bucket","access_key":"AKIA12345","secret_key":"bucket-secret-123"}`}
	if err := h.d.DB.SaveDataSource(context.Background(), ds); err != nil {
		t.Fatal(err)
	}
	one := fmt.Sprintf("%s/data-sources/%d", adminPath, ds.ID)
	for _, cfg := range []map[string]any{
		{"endpoint": "attacker.example.net"},
		{"endpoint": "s3.example.com:8443", "secret_key": "buc****123"},
		{"use_ssl": true},
		{"endpoint": "http://s3.example.com:9000", "secret_key": ""},
	} {
		if r := h.do("PUT", one, map[string]any{"config": cfg}, h.admin); r.Status != 422 || !strings.Contains(r.Msg, "secret_key") {
			t.Errorf("%v: %d %s", cfg, r.Status, r.Raw)
		}
	}
	if r := h.do("PUT", one, map[string]any{"config": map[string]any{"endpoint": "169.254.169.254", "secret_key": "a-new-secret-1"}}, h.admin); r.Status != 422 ||
		!strings.Contains(r.Msg, "config.endpoint") {
		t.Fatalf("moved to metadata with a new secret: %d %s", r.Status, r.Raw)
	}
	got, err := h.d.DB.GetDataSource(context.Background(), ds.ID)
	if err != nil || !strings.Contains(got.Config, `"endpoint":"s3.example.com"`) || !strings.Contains(got.Config, "bucket-secret-123") {
		t.Fatalf("stored config changed: %s %v", got.Config, err)
	}
}
