package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/convert/processor"
)

// TestDocProcessorConfig: keys are masked on read and kept when sent back
// masked, a new base_url needs the key again, and test-connection reaches
// the processor's health endpoint with the stored key.
func TestDocProcessorConfig(t *testing.T) {
	h := newHarness(t, "sqlite", map[string]string{"LORE_ALLOWED_PROVIDER_HOSTS": "127.0.0.1"})
	var gotKey string
	up := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotKey = r.Header.Get("X-Api-Key")
		switch {
		case !up:
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		case r.URL.Path == "/version":
			_, _ = w.Write([]byte(`{"docling-serve":"1.5.0"}`))
		default:
			_, _ = w.Write([]byte(`{"status":"ok"}`))
		}
	}))
	defer srv.Close()
	const path = "/admin/api/v1/system-configs/doc-processor"
	var v DocProcessorView
	h.must(200, "GET", path, nil, h.admin).into(t, &v)
	if len(v.Processors) != 1 || v.Processors[0].ID != "builtin" || v.Processors[0].Origin != "platform" {
		t.Fatalf("fresh config: %+v", v)
	}
	body := map[string]any{"processors": []map[string]any{{"name": "Docling", "type": "Docling", "base_url": srv.URL,
		"api_key": "docling-secret-key", "enabled": true}}}
	h.must(200, "PUT", path, body, h.admin).into(t, &v)
	p := v.Processors[0]
	if p.ID == "" || p.APIKey != "doc****key" || strings.Contains(string(h.do("GET", path, nil, h.admin).Raw), "docling-secret-key") {
		t.Fatalf("stored processor %+v", p)
	}
	// Sent back masked: the stored key stays.
	body = map[string]any{"processors": []map[string]any{{"id": p.ID, "name": "Docling 2", "type": "Docling", "base_url": srv.URL,
		"api_key": p.APIKey, "enabled": true}}}
	h.must(200, "PUT", path, body, h.admin)
	var test DocProcessorHealth
	h.must(200, "POST", path+"/test-connection", map[string]any{"config": map[string]any{"id": p.ID, "name": "Docling", "type": "Docling",
		"base_url": srv.URL, "api_key": p.APIKey}}, h.admin).into(t, &test)
	if test.Status != "healthy" || test.Version == nil || *test.Version != "1.5.0" || gotKey != "docling-secret-key" {
		t.Fatalf("test-connection: %+v, key sent %q", test, gotKey)
	}
	// A new address with the masked key: refused, the key never leaves.
	body = map[string]any{"processors": []map[string]any{{"id": p.ID, "name": "D", "type": "Docling", "base_url": "http://127.0.0.1:9",
		"api_key": p.APIKey, "enabled": true}}}
	h.must(422, "PUT", path, body, h.admin)
	h.must(422, "POST", path+"/test-connection", map[string]any{"config": map[string]any{"id": p.ID, "name": "D", "type": "Docling",
		"base_url": "http://127.0.0.1:9", "api_key": p.APIKey}}, h.admin)
	// Bad input and a processor that is down.
	for _, bad := range []map[string]any{{"name": "x", "type": "Tika", "base_url": srv.URL}, {"name": "x", "type": "Docling", "base_url": "file:///etc"},
		{"name": "", "type": "Docling", "base_url": srv.URL}} {
		h.must(422, "PUT", path, map[string]any{"processors": []map[string]any{bad}}, h.admin)
	}
	up = false
	r := h.must(400, "POST", path+"/test-connection", map[string]any{"config": map[string]any{"id": p.ID, "name": "Docling",
		"type": "Docling", "base_url": srv.URL, "api_key": p.APIKey}}, h.admin)
	if !strings.Contains(r.Msg, "503") || strings.Contains(r.Msg, "docling-secret-key") {
		t.Fatalf("down: %s", r.Raw)
	}
	row, err := h.d.DB.GetSystemConfig(t.Context(), 1, processor.ConfigKey)
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := processor.Parse(row.Value)
	if len(stored.Processors) != 1 || stored.Processors[0].APIKey != "docling-secret-key" || stored.Processors[0].Name != "Docling 2" {
		t.Fatalf("stored %+v", stored)
	}
}

// TestDocProcessorFollowsNoRedirect: test-connection sends its request to
// the configured address only; a redirect answer is a processor error
// naming the redirect, and the redirect's target is never asked.
func TestDocProcessorFollowsNoRedirect(t *testing.T) {
	h := newHarness(t, "sqlite", map[string]string{"LORE_ALLOWED_PROVIDER_HOSTS": "127.0.0.1"})
	var followed bool
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		followed = true
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	}))
	defer target.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+r.URL.Path, http.StatusFound)
	}))
	defer srv.Close()
	r := h.do("POST", "/admin/api/v1/system-configs/doc-processor/test-connection", map[string]any{"config": map[string]any{
		"name": "Docling", "type": "Docling", "base_url": srv.URL, "api_key": "docling-secret-key"}}, h.admin)
	if r.Status != 400 || !strings.Contains(r.Msg, "redirect") || strings.Contains(string(r.Raw), "docling-secret-key") {
		t.Fatalf("redirect answer: %d %s", r.Status, r.Raw)
	}
	if followed {
		t.Fatal("the redirect was followed")
	}
	if c := h.s.outboundClient(time.Second); c.CheckRedirect == nil {
		t.Fatal("outboundClient follows redirects")
	}
}
