package api

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lorekb/lore/internal/deps"
	"github.com/lorekb/lore/models"
)

const scPath = adminPath + "/system-configs"

// scStored returns the stored value of a configuration ("" when none).
func scStored(h *harness, key string) string {
	h.t.Helper()
	tid, _ := h.d.DB.EnsureDefaultTenant(context.Background())
	row, err := h.d.DB.GetSystemConfig(context.Background(), tid, key)
	if err != nil {
		return ""
	}
	return row.Value
}

func scAI(h *harness) AIConfigView {
	h.t.Helper()
	var v AIConfigView
	h.must(200, "GET", scPath+"/ai-config", nil, h.admin).into(h.t, &v)
	return v
}

func TestMaskSecret(t *testing.T) {
	for in, want := range map[string]string{"": "", "abc": "****", "abcdef": "****", "abcdefg": "abc****efg",
		"sk-1234567890": "sk-****890", "密钥密钥密钥密钥": "密钥密****钥密钥"} {
		if got := maskSecret(in); got != want {
			t.Errorf("maskSecret(%q) = %q, want %q", in, got, want)
		}
	}
	for k, want := range map[string]bool{"api_key": true, "Token": true, "app_secret": true, "password": true,
		"app_id": true, "client_id": true, "encoding_aes_key": true, "model": false, "corp_id": false, "agent_id": false} {
		if isSecretKey(k) != want {
			t.Errorf("isSecretKey(%q) != %v", k, want)
		}
	}
}

func TestSystemConfigAIConfig(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			h := newHarness(t, dialect, map[string]string{"CHAT_API_KEY": "env-chat-key-123456", "RERANK_API_KEY": "rr-env-key-abcdef"})
			ctx := context.Background()
			tid, _ := h.d.DB.EnsureDefaultTenant(ctx)

			// defaults from the environment, marked as fallback, secrets masked
			v := scAI(h)
			if v.Configs.Chat.Provider != "extractive" || v.Configs.Chat.APIKey != "env****456" ||
				v.Configs.Embedding.Provider != "local" || *v.Configs.Embedding.Dimension != 256 ||
				v.Configs.Rerank.Provider != "lexical" || v.VectorizeMode != "automatic" ||
				!v.Meta.IsPlatformFallback.Chat || !v.Meta.IsPlatformFallback.Embedding || !v.Meta.IsPlatformFallback.Rerank {
				t.Fatalf("defaults %+v", v)
			}
			h.must(403, "GET", scPath+"/ai-config", nil, h.userToken(models.RoleSiteAdmin))
			h.must(403, "PUT", scPath+"/ai-config", map[string]any{"vectorize_mode": "manual"}, h.userToken(models.RoleSiteAdmin))
			h.must(401, "GET", scPath, nil, "")

			// set chat: only that section changes; the key is stored whole and shown masked
			r := h.must(200, "PUT", scPath+"/ai-config", map[string]any{"chat": map[string]any{"provider": "OpenAI",
				"model": "gpt-4o-mini", "api_key": "sk-abcdefghijkl", "base_url": "https://llm.example.com/v1"}}, h.admin)
			r.into(t, &v)
			if v.Configs.Chat.Provider != "openai" || v.Configs.Chat.APIKey != "sk-****jkl" || v.Meta.IsPlatformFallback.Chat ||
				!v.Meta.IsPlatformFallback.Embedding || v.OutdatedDocuments == nil || *v.OutdatedDocuments != 0 ||
				strings.Contains(string(r.Raw), "sk-abcdefghijkl") {
				t.Fatalf("after chat put: %s", r.Raw)
			}
			if !strings.Contains(scStored(h, deps.AIConfigKey), "sk-abcdefghijkl") {
				t.Fatalf("stored %s", scStored(h, deps.AIConfigKey))
			}
			// masked or omitted keys keep the stored key; a new one replaces it
			h.must(200, "PUT", scPath+"/ai-config", map[string]any{"chat": map[string]any{"provider": "openai",
				"model": "gpt-4o", "api_key": "sk-****jkl", "base_url": "https://llm.example.com/v1"}}, h.admin)
			h.must(200, "PUT", scPath+"/ai-config", map[string]any{"chat": map[string]any{"provider": "openai",
				"model": "gpt-4o", "base_url": "https://llm.example.com/v1"}}, h.admin)
			ai, err := h.d.AIConfig(ctx, tid)
			if err != nil || ai.Chat.APIKey != "sk-abcdefghijkl" || ai.Chat.Model != "gpt-4o" {
				t.Fatalf("kept key: %+v %v", ai.Chat, err)
			}
			// the masked environment key of a fallback section is kept too
			h.must(200, "PUT", scPath+"/ai-config", map[string]any{"rerank": map[string]any{"provider": "lexical",
				"api_key": "rr-****def"}}, h.admin)
			if ai, _ := h.d.AIConfig(ctx, tid); ai.Rerank.APIKey != "rr-env-key-abcdef" {
				t.Fatalf("rerank key %q", ai.Rerank.APIKey)
			}

			// bad input: 422 naming the field, nothing stored
			before := scStored(h, deps.AIConfigKey)
			for body, field := range map[string]string{
				`{"chat":{"provider":"nope"}}`:                         "chat.provider",
				`{"chat":{"model":"x"}}`:                               "provider",
				`{"embedding":{"provider":"cohere"}}`:                  "embedding.provider",
				`{"rerank":{"provider":"openai"}}`:                     "rerank.provider",
				`{"chat":{"provider":"ollama"}}`:                       "chat.base_url",
				`{"chat":{"provider":"openai","base_url":"ftp://x"}}`:  "chat.base_url",
				`{"embedding":{"provider":"local","dimension":-1}}`:    "dimension",
				`{"embedding":{"provider":"local","dimension":"big"}}`: "dimension",
				`{"vectorize_mode":"sometimes"}`:                       "vectorize_mode",
				`{"chat":{"provider":"openai","colour":"red"}}`:        "colour",
				`{"other":{}}`: "other",
				`{}`:           "at least one",
				`{"chat":{"provider":"openai"},"vectorize_mode":"manual","embedding":1}`: "embedding",
			} {
				r := h.do("PUT", scPath+"/ai-config", body, h.admin)
				if r.Status/100 != 4 || !strings.Contains(r.Msg, field) {
					t.Errorf("%s: %d %s", body, r.Status, r.Raw)
				}
			}
			if after := scStored(h, deps.AIConfigKey); after != before {
				t.Fatalf("bad input changed the stored config:\n%s\n%s", before, after)
			}
			// a masked key with nothing stored behind it cannot be restored
			r = h.must(422, "PUT", scPath+"/ai-config", map[string]any{"embedding": map[string]any{"provider": "openai",
				"api_key": "sk-****xyz"}}, h.admin)
			if !strings.Contains(r.Msg, "embedding.api_key") {
				t.Fatalf("masked without stored: %s", r.Raw)
			}

			// vectorize_mode applies at once (deps reads the database every time)
			h.must(200, "PUT", scPath+"/ai-config", map[string]any{"vectorize_mode": "manual"}, h.admin)
			if v := scAI(h); v.VectorizeMode != "manual" || v.Configs.Chat.Model != "gpt-4o" {
				t.Fatalf("mode not shown: %+v", v)
			}
			if ai, _ := h.d.AIConfig(ctx, tid); ai.VectorizeMode != deps.ModeManual {
				t.Fatalf("deps sees %q", ai.VectorizeMode)
			}

			// the list shows stored documents with masked values
			r = h.must(200, "GET", scPath, nil, h.admin)
			var items []struct {
				ConfigKey string         `json:"config_key"`
				Value     map[string]any `json:"value"`
				UpdatedAt string         `json:"updated_at"`
			}
			r.into(t, &items)
			if len(items) != 1 || items[0].ConfigKey != "ai-config" || items[0].UpdatedAt == "" ||
				items[0].Value["chat"].(map[string]any)["api_key"] != "sk-****jkl" || strings.Contains(string(r.Raw), "abcdefghijkl") {
				t.Fatalf("list %s", r.Raw)
			}

			// delete: defaults again; absent and unknown keys are 404
			r = h.must(200, "DELETE", scPath+"/ai-config", nil, h.admin)
			if string(r.Data) != `{"deleted":true}` {
				t.Fatalf("delete %s", r.Data)
			}
			if v := scAI(h); !v.Meta.IsPlatformFallback.Chat || v.VectorizeMode != "automatic" {
				t.Fatalf("after delete %+v", v)
			}
			h.must(404, "DELETE", scPath+"/ai-config", nil, h.admin)
			h.must(404, "DELETE", scPath+"/bot-config", nil, h.admin)
			h.must(404, "DELETE", scPath+"/whatever", nil, h.admin)
			h.must(403, "DELETE", scPath+"/ai-config", nil, h.userToken(models.RoleEditor))
			r = h.must(200, "GET", scPath, nil, h.admin)
			if string(r.Data) != "[]" {
				t.Fatalf("empty list %s", r.Data)
			}
		})
	}
}

func TestSystemConfigEmbeddingChangeMarksOutdated(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		site := saSite(h, "emb")
		var col CollectionResponse
		h.must(201, "POST", adminPath+"/collections", map[string]any{"title": "c", "site_id": site.ID}, h.admin).into(t, &col)
		var ids []int64
		for _, title := range []string{"a", "b", "c"} {
			var d DocumentResponse
			h.must(201, "POST", adminPath+"/documents", map[string]any{"title": title, "site_id": site.ID,
				"collection_id": col.ID, "status": "published"}, h.admin).into(t, &d)
			ids = append(ids, d.ID)
		}
		setVec := func(id int64, status string) {
			if _, err := h.d.DB.NewUpdate().Model((*models.Document)(nil)).Set("vector_status = ?", status).
				Where("id = ?", id).Exec(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		setVec(ids[0], models.VecCompleted)
		setVec(ids[1], models.VecCompleted)
		put := func(body map[string]any) int {
			t.Helper()
			var v AIConfigView
			h.must(200, "PUT", scPath+"/ai-config", body, h.admin).into(t, &v)
			return *v.OutdatedDocuments
		}
		// same vector space as the default: nothing outdated
		if n := put(map[string]any{"embedding": map[string]any{"provider": "local", "dimension": 256}}); n != 0 {
			t.Fatalf("unchanged embedding outdated %d", n)
		}
		if n := put(map[string]any{"chat": map[string]any{"provider": "extractive"}, "vectorize_mode": "manual"}); n != 0 {
			t.Fatalf("chat change outdated %d", n)
		}
		// a new dimension is a new vector space
		if n := put(map[string]any{"embedding": map[string]any{"provider": "local", "dimension": 384}}); n != 2 {
			t.Fatalf("outdated %d, want 2", n)
		}
		for i, want := range []string{models.VecOutdated, models.VecOutdated, models.VecNone} {
			d, err := h.d.DB.GetDocument(context.Background(), ids[i])
			if err != nil || d.VectorStatus != want {
				t.Fatalf("doc %d: %v %q", i, err, d.VectorStatus)
			}
		}
		// The local embedder's dimension sizes its hashing part.
		want, _ := deps.LocalEmbedder("", 384)
		e, err := h.d.Embedder(context.Background(), site.TenantID)
		if err != nil || e.Dimension() != want.Dimension() {
			t.Fatalf("embedder: %v", err)
		}
		// deleting the config goes back to the default space: outdated again
		setVec(ids[2], models.VecCompleted)
		h.must(200, "DELETE", scPath+"/ai-config", nil, h.admin)
		if d, _ := h.d.DB.GetDocument(context.Background(), ids[2]); d.VectorStatus != models.VecOutdated {
			t.Fatalf("after delete: %q", d.VectorStatus)
		}
	})
}

func TestSystemConfigBotConfig(t *testing.T) {
	eachDialect(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		tid, _ := h.d.DB.EnsureDefaultTenant(ctx)
		get := func() map[string]map[string]any {
			t.Helper()
			var m map[string]map[string]any
			h.must(200, "GET", scPath+"/bot-config", nil, h.admin).into(t, &m)
			return m
		}
		if m := get(); m["web_widget"]["primary_color"] != "#3b82f6" || m["api_bot"]["timeout"] != 30.0 ||
			m["wecom_kefu"]["enabled"] != false {
			t.Fatalf("defaults %v", m)
		}
		aes := strings.Repeat("A", 42) + "E" // 43 base64 characters → 32 bytes

		// enabling without the crypto settings names what is missing; nothing stored
		r := h.must(400, "PUT", scPath+"/bot-config", map[string]any{"wecom_kefu": map[string]any{"enabled": true, "corp_id": "ww1"}}, h.admin)
		for _, f := range []string{"wecom_kefu", "secret", "token", "encoding_aes_key"} {
			if !strings.Contains(r.Msg, f) {
				t.Fatalf("missing %s in %q", f, r.Msg)
			}
		}
		if strings.Contains(r.Msg, "corp_id") {
			t.Fatalf("corp_id was given: %q", r.Msg)
		}
		for body, status := range map[string]int{
			`{"wecom_app":{"enabled":true,"corp_id":"c","secret":"s","token":"t","encoding_aes_key":"short"}}`: 400,
			`{"wecom_app":{"encoding_aes_key":"` + strings.Repeat("!", 43) + `"}}`:                             400,
			`{"wecom_kefu":{"enabled":true,"site_ids":[99999]}}`:                                               400,
			`{"web_widget":{"position":"middle"}}`:                                                             422,
			`{"api_bot":{"timeout":0.5}}`:                                                                      422,
			`{"api_bot":{"timeout":601}}`:                                                                      422,
			`{"telegram":{}}`:                                                                                  422,
			`{}`:                                                                                               422,
			`{"web_widget":`:                                                                                   422,
		} {
			if r := h.do("PUT", scPath+"/bot-config", body, h.admin); r.Status != status {
				t.Errorf("%s: %d %s", body, r.Status, r.Raw)
			}
		}
		if s := scStored(h, deps.BotConfigKey); s != "" {
			t.Fatalf("bad input stored %s", s)
		}

		// a site of another tenant cannot be bound
		now := time.Now().UTC()
		tenant2 := &models.Tenant{Slug: "t2", Name: "T2", CreatedAt: now, UpdatedAt: now}
		if _, err := h.d.DB.NewInsert().Model(tenant2).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		foreign := &models.Site{TenantID: tenant2.ID, Name: "foreign", Slug: "foreign", Status: models.SiteActive}
		if err := h.d.DB.CreateSite(ctx, foreign); err != nil {
			t.Fatal(err)
		}
		r = h.must(400, "PUT", scPath+"/bot-config", map[string]any{"wecom_app": map[string]any{"site_ids": []int64{foreign.ID}}}, h.admin)
		if !strings.Contains(r.Msg, "wecom_app.site_ids") {
			t.Fatalf("foreign site: %s", r.Raw)
		}

		site := saSite(h, "wecom")
		r = h.must(200, "PUT", scPath+"/bot-config", map[string]any{
			"wecom_kefu": map[string]any{"enabled": true, "corp_id": "ww-corp", "secret": "kefu-secret-value",
				"token": "tok123456789", "encoding_aes_key": aes, "site_ids": []int64{site.ID}},
			"web_widget": map[string]any{"enabled": true, "title": "Help"},
		}, h.admin)
		var m map[string]map[string]any
		r.into(t, &m)
		if m["wecom_kefu"]["secret"] != "kef****lue" || m["wecom_kefu"]["token"] != "tok****789" ||
			m["wecom_kefu"]["encoding_aes_key"] != "AAA****AAE" || m["wecom_kefu"]["corp_id"] != "ww-corp" ||
			m["web_widget"]["title"] != "Help" || m["web_widget"]["primary_color"] != "#3b82f6" ||
			strings.Contains(string(r.Raw), "kefu-secret-value") {
			t.Fatalf("after put: %s", r.Raw)
		}
		// send back what was read (masked), change one field: the secrets stay
		kefu := get()["wecom_kefu"]
		kefu["welcome_message"] = "hello"
		delete(kefu, "token")
		h.must(200, "PUT", scPath+"/bot-config", map[string]any{"wecom_kefu": kefu}, h.admin)
		cfg, err := h.d.BotConfig(ctx, tid)
		if err != nil || cfg.WecomKefu.Secret != "kefu-secret-value" || cfg.WecomKefu.Token != "tok123456789" ||
			cfg.WecomKefu.EncodingAESKey != aes || cfg.WecomKefu.WelcomeMessage != "hello" || !cfg.WecomKefu.Enabled ||
			len(cfg.WecomKefu.SiteIDs) != 1 || !cfg.WebWidget.Enabled {
			t.Fatalf("deps bot config %+v %v", cfg, err)
		}
		// disabling with an emptied secret is fine; enabling it again is not
		h.must(200, "PUT", scPath+"/bot-config", map[string]any{"wecom_kefu": map[string]any{"enabled": false, "secret": ""}}, h.admin)
		h.must(400, "PUT", scPath+"/bot-config", map[string]any{"wecom_kefu": map[string]any{"enabled": true}}, h.admin)
		var stored deps.BotConfig
		if err := json.Unmarshal([]byte(scStored(h, deps.BotConfigKey)), &stored); err != nil || stored.WecomKefu.Enabled ||
			stored.WecomKefu.Secret != "" || stored.WecomKefu.Token != "tok123456789" {
			t.Fatalf("stored %+v %v", stored, err)
		}
		h.must(200, "DELETE", scPath+"/bot-config", nil, h.admin)
		if m := get(); m["wecom_kefu"]["token"] != "" {
			t.Fatalf("after delete %v", m)
		}
	})
}
